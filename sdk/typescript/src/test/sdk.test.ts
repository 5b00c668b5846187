// Tests against the real agentik binary. The Go test that runs them
// (cmd/agentik/ws_test.go) starts the server with a scripted model and sets
// AGENTIK_WS_URL and AGENTIK_TOKEN. The script: "time?" calls current_time
// and then answers "It is tea time."; "hang" streams "partial" and waits;
// anything else is answered "echo: <text>".
import { test } from "node:test";
import assert from "node:assert/strict";
import { AgentikError, connect, parseServerMessage, type ServerMessage } from "../index.js";

const url = process.env.AGENTIK_WS_URL ?? "";
const token = process.env.AGENTIK_TOKEN;
if (!url) throw new Error("AGENTIK_WS_URL is not set: run these tests through go test ./cmd/agentik");

test("connect waits for STATUS, a turn streams chunks then END", async () => {
  const c = await connect(url, { token, title: "ts" });
  assert.equal(c.status.type, "STATUS");
  assert.match(c.conversationId, /.+/);
  assert.equal(c.status.working, false);
  c.send("hello");
  let text = "";
  let chunks = 0;
  for await (const m of c) {
    if (m.type === "AGENT_EVENT" && m.subtype === "TEXT_CHUNK") {
      text += m.text;
      chunks++;
    } else if (m.type === "AGENT_EVENT" && m.subtype === "END") {
      assert.ok(m.tokens_used > 0);
      assert.equal(m.reason, "completed");
      break;
    } else {
      assert.fail(`unexpected ${JSON.stringify(m)}`);
    }
  }
  assert.equal(text, "echo: hello");
  assert.ok(chunks >= 2, "streamed in several chunks");
  const info = await c.close();
  assert.equal(info.code, 1000);
  assert.equal(info.graceful, false);
});

test("bad frames get ERROR with stable codes and the connection stays usable", async () => {
  const c = await connect(url, { token });
  const sock = await rawSocket(c.conversationId);
  const cases: [string, string][] = [
    ["not json", "malformed"],
    [`{"type":"DANCE"}`, "unknown_type"],
    [`{"type":"USER_MESSAGE"}`, "invalid"],
    [`{"type":"USER_MESSAGE","text":""}`, "invalid"],
    [`{"type":"USER_MESSAGE","text":7}`, "invalid"],
  ];
  for (const [frame, code] of cases) {
    sock.send(frame);
    const m = await sock.next();
    assert.ok(m.type === "ERROR", JSON.stringify(m));
    assert.equal(m.code, code);
    assert.ok(m.details.length > 0);
  }
  sock.send(JSON.stringify({ type: "USER_MESSAGE", text: "after errors" }));
  // The answer reaches every connection of the conversation; the SDK's
  // connection saw none of the errors (they go to the sender only).
  let text = "";
  for await (const m of c) {
    if (m.type === "AGENT_EVENT" && m.subtype === "TEXT_CHUNK") text += m.text;
    else if (m.type === "AGENT_EVENT" && m.subtype === "END") break;
    else assert.fail(`unexpected ${JSON.stringify(m)}`);
  }
  assert.equal(text, "echo: after errors");
  sock.close();
  await c.close();
});

test("attach to a conversation; unknown ids are refused with not_found", async () => {
  const first = await connect(url, { token });
  const r1 = await first.ask("one");
  assert.equal(r1.text, "echo: one");
  await first.close();
  const again = await attachIdle(first.conversationId);
  assert.equal(again.conversationId, first.conversationId);
  const r2 = await again.ask("two");
  assert.equal(r2.text, "echo: two");
  await again.close();
  await assert.rejects(connect(url, { token, conversationId: "no-such-conversation" }), (e: unknown) => {
    assert.ok(e instanceof AgentikError);
    assert.equal(e.code, "not_found");
    return true;
  });
});

test("tool activity only with the tools extension", async () => {
  const plain = await connect(url, { token });
  const ext = await connect(url, { token, conversationId: plain.conversationId, events: ["tools"] });
  assert.deepEqual(ext.status.events, ["tools"]);
  const r = await plain.ask("time?");
  assert.equal(r.text, "It is tea time.");
  assert.deepEqual(r.events, [], "a seed client sees no extension events");
  const seen: ServerMessage[] = [];
  let text = "";
  for await (const m of ext) {
    if (m.type === "AGENT_EVENT" && m.subtype === "TEXT_CHUNK") text += m.text;
    else if (m.type === "AGENT_EVENT" && m.subtype === "END") break;
    else seen.push(m);
  }
  assert.equal(text, "It is tea time.");
  assert.equal(seen.length, 2);
  const [call, result] = seen;
  assert.ok(call.type === "AGENT_EVENT" && call.subtype === "TOOL_CALL");
  assert.equal(call.name, "current_time");
  assert.ok(result.type === "AGENT_EVENT" && result.subtype === "TOOL_RESULT");
  assert.equal(result.call_id, call.call_id);
  assert.equal(result.is_error, false);
  await plain.close();
  await ext.close();
});

test("interrupt ends the running turn with END interrupted", async () => {
  const c = await connect(url, { token });
  c.send("hang");
  const first = await c.next();
  assert.ok(first && first.type === "AGENT_EVENT" && first.subtype === "TEXT_CHUNK");
  assert.equal(first.text, "partial");
  c.interrupt();
  const end = await c.next();
  assert.ok(end && end.type === "AGENT_EVENT" && end.subtype === "END");
  assert.equal(end.reason, "interrupted");
  await c.close();
});

test("reconnect attaches to the same conversation", async () => {
  const c = await connect(url, { token });
  const again = await c.reconnect();
  assert.equal(again.conversationId, c.conversationId);
  assert.equal((await again.ask("back")).text, "echo: back");
  await again.close();
});

test("a wrong token is refused", async () => {
  if (!token) return;
  const started = Date.now();
  await assert.rejects(connect(url, { token: "wrong" }), AgentikError);
  assert.ok(Date.now() - started < 5000, "refused promptly, not by the STATUS timeout");
});

test("parseServerMessage takes JSON objects with a type only", () => {
  assert.equal(parseServerMessage("nope"), undefined);
  assert.equal(parseServerMessage("[]"), undefined);
  assert.equal(parseServerMessage(`{"text":"x"}`), undefined);
  assert.deepEqual(parseServerMessage(`{"type":"GRACEFUL_DISCONNECT"}`), { type: "GRACEFUL_DISCONNECT" });
});

// rawSocket is a bare WebSocket on the conversation, for frames the SDK
// would never send.
async function rawSocket(conversationId: string) {
  const u = new URL(url);
  u.searchParams.set("conversation_id", conversationId);
  const ws = new WebSocket(u, token ? ({ headers: { Authorization: `Bearer ${token}` } } as any) : undefined);
  const queue: ServerMessage[] = [];
  const waiters: ((m: ServerMessage) => void)[] = [];
  ws.addEventListener("message", (ev) => {
    const m = parseServerMessage(String(ev.data))!;
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  const next = () =>
    new Promise<ServerMessage>((resolve) => {
      const m = queue.shift();
      if (m) resolve(m);
      else waiters.push(resolve);
    });
  await new Promise((r) => ws.addEventListener("open", r));
  const status = await next();
  assert.equal(status.type, "STATUS");
  return { send: (s: string) => ws.send(s), next, close: () => ws.close() };
}

// attachIdle attaches once the conversation reports no running turn: the
// engine keeps a finished turn as running for a moment after END.
async function attachIdle(conversationId: string) {
  for (let i = 0; ; i++) {
    const c = await connect(url, { token, conversationId });
    if (!c.status.working || i > 100) return c;
    await c.close();
    await new Promise((r) => setTimeout(r, 20));
  }
}
