// Tool approval against the real binary: cmd/agentik/ws_test.go starts a
// second server whose agent asks before current_time runs and sets
// AGENTIK_APPROVAL_WS_URL. "time?" calls current_time; once it has a result
// the model answers "It is tea time.".
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AgentikError,
  apiBase,
  connect,
  listApprovals,
  resolveApproval,
  type ApprovalRequestEvent,
  type Connection,
  type ServerMessage,
} from "../index.js";

const url = process.env.AGENTIK_APPROVAL_WS_URL ?? "";
const token = process.env.AGENTIK_TOKEN;
if (!url) throw new Error("AGENTIK_APPROVAL_WS_URL is not set: run these tests through go test ./cmd/agentik");

/** The messages of c up to and including the first that stop accepts. */
async function until(c: Connection, stop: (m: ServerMessage) => boolean): Promise<ServerMessage[]> {
  const out: ServerMessage[] = [];
  for (;;) {
    const m = await c.next();
    if (m === undefined) assert.fail(`the connection ended; got ${JSON.stringify(out)}`);
    out.push(m);
    if (stop(m)) return out;
  }
}
const isRequest = (m: ServerMessage): m is ApprovalRequestEvent => m.type === "AGENT_EVENT" && m.subtype === "APPROVAL_REQUEST";
const isEnd = (m: ServerMessage) => m.type === "AGENT_EVENT" && m.subtype === "END";
const isError = (m: ServerMessage) => m.type === "ERROR";
const text = (ms: ServerMessage[]) => ms.map((m) => (m.type === "AGENT_EVENT" && m.subtype === "TEXT_CHUNK" ? m.text : "")).join("");

async function request(c: Connection): Promise<ApprovalRequestEvent> {
  const got = await until(c, isRequest);
  return got[got.length - 1] as ApprovalRequestEvent;
}

test("ask answers approval requests with onApproval: yes, and edited arguments", async () => {
  const c = await connect(url, { token, events: ["tools"] });
  const seen: ApprovalRequestEvent[] = [];
  const r1 = await c.ask("time?", {
    onApproval: (req) => {
      seen.push(req);
      return true;
    },
  });
  assert.equal(r1.text, "It is tea time.");
  assert.deepEqual(
    r1.events.map((m) => (m.type === "AGENT_EVENT" ? m.subtype : m.type)),
    ["TOOL_CALL", "APPROVAL_REQUEST", "TOOL_RESULT"],
  );
  const [call, req, result] = r1.events;
  assert.deepEqual(seen, [req]);
  assert.ok(call.type === "AGENT_EVENT" && call.subtype === "TOOL_CALL");
  assert.ok(isRequest(req));
  assert.equal(req.call_id, call.call_id);
  assert.equal(req.name, "current_time");
  assert.deepEqual(req.arguments, {});
  assert.ok(result.type === "AGENT_EVENT" && result.subtype === "TOOL_RESULT" && !result.is_error);

  // An async verdict with edited arguments: the tool runs with them.
  const r2 = await c.ask("time?", { onApproval: async () => ({ approved: true, arguments: { timezone: "Asia/Tokyo" } }) });
  const last = r2.events[r2.events.length - 1];
  assert.ok(last.type === "AGENT_EVENT" && last.subtype === "TOOL_RESULT" && last.text.endsWith("+09:00"), JSON.stringify(last));
  await c.close();
});

test("deny with a reason; refused answers are ERRORs that change nothing", async () => {
  const c = await connect(url, { token, events: ["tools"] });
  c.send("time?");
  const req = await request(c);
  c.approve(req.call_id, { arguments: { timezone: 5 } });
  let got = await until(c, isError);
  assert.equal((got[got.length - 1] as { code: string }).code, "invalid");
  c.deny("no-such-call");
  got = await until(c, isError);
  assert.equal((got[got.length - 1] as { code: string }).code, "not_found");
  c.deny(req.call_id, "not now");
  c.deny(req.call_id, "twice");
  got = await until(c, isEnd);
  assert.equal(text(got), "It is tea time.");
  const result = got.find((m) => m.type === "AGENT_EVENT" && m.subtype === "TOOL_RESULT");
  assert.ok(result && result.type === "AGENT_EVENT" && result.subtype === "TOOL_RESULT");
  assert.equal(result.is_error, true);
  assert.equal(result.text, "denied by the user: not now");
  let errors = got.filter(isError);
  if (errors.length === 0) errors = (await until(c, isError)).filter(isError); // it may come after END
  assert.deepEqual(errors.map((e) => (e as { code: string }).code), ["conflict"]);
  await c.close();
});

test("a connection attaching while a call waits is told; the REST helpers list and answer", async () => {
  const first = await connect(url, { token });
  first.send("time?");
  const req = await request(first);
  const second = await connect(url, { token, conversationId: first.conversationId });
  assert.equal(second.status.working, true);
  assert.deepEqual(await second.next(), req);

  const pending = await second.pendingApprovals();
  assert.deepEqual(pending.map((p) => [p.call_id, p.name, p.conversation_id]), [[req.call_id, "current_time", first.conversationId]]);
  assert.ok(pending[0].reply_to && pending[0].requested_at);
  const api = apiBase(url);
  assert.match(api, /^http:\/\/127\.0\.0\.1:\d+\/agentik$/);
  await assert.rejects(listApprovals(api, first.conversationId, { token: "tok-wrong" }), (e) => e instanceof AgentikError && e.code === "unauthorized");
  await assert.rejects(
    resolveApproval(api, first.conversationId, req.call_id, { approved: true, arguments: { timezone: 5 } }, { token }),
    (e) => e instanceof AgentikError && e.code === "invalid",
  );
  await resolveApproval(api, first.conversationId, req.call_id, { approved: true }, { token });
  for (const c of [first, second]) assert.equal(text(await until(c, isEnd)), "It is tea time.");
  assert.deepEqual(await first.pendingApprovals(), []);
  await assert.rejects(
    resolveApproval(api, first.conversationId, req.call_id, { approved: false, reason: "late" }, { token }),
    (e) => e instanceof AgentikError && e.code === "conflict",
  );
  await first.close();
  await second.close();
});
