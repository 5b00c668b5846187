// Branching over REST (docs/branching.md) against the real binary: the
// server of sdk.test.ts (cmd/agentik/ws_test.go), whose model answers
// "pick a number" with the next number each time it is asked, so that a
// regenerated answer differs from the first. The answers are read from a
// WebSocket connection to the conversation, which follows its head.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AgentikError,
  apiBase,
  connect,
  fork,
  listMessages,
  regenerate,
  sendMessage,
  setHead,
  type Connection,
  type JournalMessage,
} from "../index.js";

const url = process.env.AGENTIK_WS_URL ?? "";
const token = process.env.AGENTIK_TOKEN;
if (!url) throw new Error("AGENTIK_WS_URL is not set: run these tests through go test ./cmd/agentik");
const api = apiBase(url);

/** The text of the next turn c sees, up to its END. */
async function answer(c: Connection): Promise<string> {
  let text = "";
  for (;;) {
    const m = await c.next();
    if (m === undefined) assert.fail("the connection ended before END");
    if (m.type === "AGENT_EVENT" && m.subtype === "TEXT_CHUNK") text += m.text;
    if (m.type === "AGENT_EVENT" && m.subtype === "END") return text;
    if (m.type === "ERROR") assert.fail(`ERROR ${JSON.stringify(m)}`);
  }
}
const textOf = (m: JournalMessage) => (m.content ?? []).map((p) => (p.type === "text" ? p.text : "")).join("");
const summary = (ms: JournalMessage[]) => ms.map((m) => `${m.type}:${textOf(m)}`);
const code = (want: string) => (e: unknown) => e instanceof AgentikError && e.code === want;

test("regenerate, switch the head, edit and fork over REST", async () => {
  const c = await connect(url, { token, title: "branches" });
  const id = c.conversationId;
  const first = (await c.ask("pick a number")).text;
  assert.match(first, /^Number \d+\.$/);
  const [u, a1] = (await listMessages(api, id, {}, { token })).messages;
  assert.deepEqual(summary([u, a1]), ["user_message:pick a number", `assistant_message:${first}`]);
  assert.equal(a1.parent, u.seq);
  assert.equal(u.parent, undefined, "the first message is at the root");

  // Regenerate: the user message is answered again, on a new branch.
  const r = await regenerate(api, id, { seq: u.seq }, { token });
  assert.deepEqual([r.message_id, r.seq], [u.id, u.seq]);
  const second = await answer(c);
  assert.match(second, /^Number \d+\.$/);
  assert.notEqual(second, first, "the regenerated answer differs");
  let head = (await listMessages(api, id, {}, { token })).messages;
  assert.deepEqual(summary(head), ["user_message:pick a number", `assistant_message:${second}`]);
  const a2 = head[1];
  assert.deepEqual(a2.siblings, [a1.seq, a2.seq]);
  const all = (await listMessages(api, id, { branch: "all" }, { token })).messages;
  assert.deepEqual(all.map((m) => m.seq), [u.seq, a1.seq, a2.seq], "nothing is lost");

  // Switch back to the first answer.
  const conv = await setHead(api, id, a1.seq, { token });
  assert.equal((conv as { head?: number }).head, a1.seq);
  head = (await listMessages(api, id, {}, { token })).messages;
  assert.deepEqual(summary(head), ["user_message:pick a number", `assistant_message:${first}`]);

  // Edit the first message: a new root, answered on its own branch.
  const sent = await sendMessage(api, id, "an edited question", { parent: 0 }, { token });
  assert.equal(await answer(c), "echo: an edited question");
  head = (await listMessages(api, id, {}, { token })).messages;
  assert.deepEqual(summary(head), ["user_message:an edited question", "assistant_message:echo: an edited question"]);
  assert.equal(head[0].seq, sent.seq);
  assert.deepEqual(head[0].siblings, [u.seq, sent.seq]);

  // Fork the first branch into a new conversation.
  const f = await fork(api, id, { seq: a1.seq }, { token });
  assert.notEqual(f.id, id);
  assert.deepEqual(f.forked_from, { conversation_id: id, seq: a1.seq });
  const copied = (await listMessages(api, f.id, {}, { token })).messages;
  assert.deepEqual(summary(copied), ["user_message:pick a number", `assistant_message:${first}`]);
  await c.close();
});

test("branching refusals change nothing", async () => {
  const c = await connect(url, { token });
  const id = c.conversationId;
  await c.ask("pick a number");
  const before = (await listMessages(api, id, { branch: "all" }, { token })).messages;
  const [u, a] = before;
  await assert.rejects(regenerate(api, id, { seq: a.seq }, { token }), code("invalid"));
  await assert.rejects(regenerate(api, id, { seq: 999 }, { token }), code("not_found"));
  await assert.rejects(setHead(api, id, 999, { token }), code("not_found"));
  await assert.rejects(sendMessage(api, id, "x", { parent: 999 }, { token }), code("not_found"));
  await assert.rejects(fork(api, id, { seq: 999 }, { token }), code("not_found"));
  await assert.rejects(fork(api, "no-such-conversation", {}, { token }), code("not_found"));
  await assert.rejects(listMessages(api, id, {}, { token: "tok-wrong" }), code("unauthorized"));
  const after = (await listMessages(api, id, { branch: "all" }, { token })).messages;
  assert.deepEqual(after, before);
  assert.equal(a.parent, u.seq);
  await c.close();
});
