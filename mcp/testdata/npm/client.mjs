// Drives agentik's MCP server facade with the official TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package-lock.json). Run by
// serve_npm_test.go: node client.mjs URL. Each scenario prints one line
// "RESULT <name> <json>"; the Go test checks them and the server's state.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.argv[2]);

async function connect(token) {
  const client = new Client({ name: 'ts-sdk-e2e', version: '1.0.0' });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

function text(res) {
  return (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

function result(name, v) {
  console.log(`RESULT ${name} ${JSON.stringify(v)}`);
}

const alice = await connect('tok-alice');
result('protocol', { version: alice.transport.protocolVersion ?? null, server: alice.client.getServerVersion() });

const tools = await alice.client.listTools();
result('tools', { names: tools.tools.map((t) => t.name).sort() });

// ask, streaming the answer as progress
const streamed = [];
let last = 0, increasing = true;
const first = await alice.client.callTool({ name: 'ask', arguments: { message: 'Say hello' } }, undefined, {
  onprogress: (p) => { streamed.push(p.message ?? ''); if (p.progress <= last) increasing = false; last = p.progress; },
});
result('ask', { isError: !!first.isError, text: text(first), structured: first.structuredContent, streamed: streamed.join(''), increasing });
const conv = first.structuredContent.conversation_id;

const second = await alice.client.callTool({ name: 'ask', arguments: { message: 'Continue', conversation_id: conv } });
result('continue', { isError: !!second.isError, text: text(second), conversation_id: second.structuredContent.conversation_id });

// the session continues its conversation without an id
const third = await alice.client.callTool({ name: 'ask', arguments: { message: 'And again' } });
result('session', { text: text(third), conversation_id: third.structuredContent.conversation_id });

const failed = await alice.client.callTool({ name: 'ask', arguments: { message: 'Fail', new_conversation: true } });
result('failure', { isError: !!failed.isError, text: text(failed) });

// cancel mid-answer: abort once the partial text has streamed
const ac = new AbortController();
let cancelError = null;
try {
  await alice.client.callTool({ name: 'ask', arguments: { message: 'Long answer', conversation_id: conv } }, undefined, {
    signal: ac.signal,
    onprogress: (p) => { if ((p.message ?? '').includes('partial')) ac.abort('enough'); },
  });
} catch (e) {
  cancelError = String(e && (e.name || e.message));
}
result('cancel', { aborted: ac.signal.aborted, error: cancelError });

const bob = await connect('tok-bob');
const list = await bob.client.callTool({ name: 'list_conversations', arguments: {} });
const read = await bob.client.callTool({ name: 'read_conversation', arguments: { conversation_id: conv } });
result('isolation', { listed: list.structuredContent.conversations.length, readError: !!read.isError, readText: text(read) });

const page = await alice.client.callTool({ name: 'read_conversation', arguments: { conversation_id: conv, limit: 2 } });
result('read', { count: page.structuredContent.messages.length, has_more: page.structuredContent.has_more, first: page.structuredContent.messages[0] });

let refused = null;
try {
  await connect('');
} catch (e) {
  refused = { name: e.name, code: e.code ?? null, message: String(e.message) };
}
result('noauth', refused);

await bob.client.close();
await alice.client.close();
