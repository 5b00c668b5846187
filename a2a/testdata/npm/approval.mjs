// Tool approval over A2A with the official client (@a2a-js/sdk, pinned in
// package.json), driven by a2a/approval_test.go against a real listener.
//
//   node approval.mjs <baseUrl> v1|v03
//
// The scripted model must call send_mail {"to":"bob"} (call_mail) and then
// answer "Mail sent."; then call send_mail {"to":"eve"} (call_mail2) and
// answer "Not sent.". The first round trip is blocking sendMessage + getTask
// (approved with edited arguments in a DataPart), the second is
// sendMessageStream (denied with a DataPart and a reason).
// Prints one line per step and OK; exits 1 on the first failure.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState, taskStateToJSON } from "@a2a-js/sdk";

const [baseUrl, mode] = process.argv.slice(2);
const legacy = mode === "v03";
const compat = legacy ? { legacyCompat: { enabled: true } } : {};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    cardResolver: new DefaultAgentCardResolver({ ...compat }),
    transports: [new JsonRpcTransportFactory({ ...compat })],
  }),
);
const fail = (msg) => {
  console.log("FAIL " + msg);
  process.exit(1);
};
const check = (cond, msg) => {
  if (!cond) fail(msg);
};
const state = (s) => taskStateToJSON(s);
const textOf = (parts) => (parts || []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const dataOf = (parts) => (parts || []).filter((p) => p.content?.$case === "data").map((p) => p.content.value);
const artifactText = (task) => (task.artifacts || []).map((a) => textOf(a.parts)).join("");
const part = (content) => ({ content, filename: "", mediaType: "", metadata: undefined });
const send = (parts, ids = {}) => ({
  tenant: "",
  message: {
    messageId: crypto.randomUUID(),
    role: Role.ROLE_USER,
    parts,
    taskId: ids.taskId || "",
    contextId: ids.contextId || "",
    extensions: [],
    referenceTaskIds: [],
  },
});
// waiting checks an input-required status: one DataPart naming the call.
const waiting = (status, callId, to) => {
  check(status?.state === TaskState.TASK_STATE_INPUT_REQUIRED, `state ${state(status?.state)}, want input-required`);
  const data = dataOf(status.message?.parts);
  check(data.length === 1 && data[0].call_id === callId && data[0].name === "send_mail" && data[0].arguments?.to === to,
    `data parts ${JSON.stringify(data)}`);
  check(/send_mail/.test(textOf(status.message.parts)), "the status message does not state the call");
};

try {
  const client = legacy ? await factory.createFromUrl(baseUrl, "/.well-known/agent.json") : await factory.createFromUrl(baseUrl);
  check(client.protocolVersion === (legacy ? "0.3" : "1.0"), `protocol ${client.protocolVersion}`);

  // 1. blocking send: the task stops input-required; getTask agrees.
  const t1 = await client.sendMessage(send([part({ $case: "text", value: "mail bob" })]));
  check(t1.id && t1.contextId, "send did not return a task");
  waiting(t1.status, "call_mail", "bob");
  const g1 = await client.getTask({ tenant: "", id: t1.id });
  waiting(g1.status, "call_mail", "bob");
  console.log(`INPUT_REQUIRED ${state(t1.status.state)}`);

  // 2. the answer on the same taskId: approved with edited arguments.
  const a1 = await client.sendMessage(
    send([part({ $case: "data", value: { call_id: "call_mail", approved: true, arguments: { to: "bob@example.com" } } })], { taskId: t1.id, contextId: t1.contextId }),
  );
  check(a1.id === t1.id, `the answer made task ${a1.id}, want ${t1.id}`);
  check(a1.status.state === TaskState.TASK_STATE_COMPLETED, `answered task ${state(a1.status.state)}`);
  check(artifactText(a1) === "Mail sent.", `answer ${JSON.stringify(artifactText(a1))}`);
  console.log(`APPROVED ${state(a1.status.state)}`);

  // 3. streaming: the stream ends on input-required; the answer (a denial)
  // streams the same task to completed.
  let last;
  const kinds = [];
  for await (const ev of client.sendMessageStream(send([part({ $case: "text", value: "mail eve" })], { contextId: t1.contextId }))) {
    kinds.push(ev.payload?.$case);
    last = ev.payload?.value;
  }
  check(kinds[0] === "task" && kinds.at(-1) === "statusUpdate", `stream ${kinds.join(",")}`);
  waiting(last.status, "call_mail2", "eve");
  const taskId = last.taskId;
  console.log(`STREAM_INPUT_REQUIRED ${kinds.join(",")}`);
  let text = "";
  let end;
  const kinds2 = [];
  for await (const ev of client.sendMessageStream(
    send([part({ $case: "data", value: { call_id: "call_mail2", approved: false, reason: "not eve" } })], { taskId, contextId: t1.contextId }),
  )) {
    const k = ev.payload?.$case;
    kinds2.push(k);
    if (k === "task") check(ev.payload.value.id === taskId, "the answer stream is another task");
    if (k === "artifactUpdate") {
      const a = ev.payload.value;
      text = a.append ? text + textOf(a.artifact.parts) : textOf(a.artifact.parts);
    }
    end = ev.payload?.value;
  }
  check(end?.status?.state === TaskState.TASK_STATE_COMPLETED, `answer stream ends ${state(end?.status?.state)}`);
  check(text === "Not sent.", `denied answer ${JSON.stringify(text)}`);
  console.log(`DENIED ${kinds2.join(",")}`);

  // 4. a second answer to a finished task is refused.
  try {
    await client.sendMessage(send([part({ $case: "data", value: { call_id: "call_mail", approved: true } })], { taskId: t1.id, contextId: t1.contextId }));
    fail("an answer to a completed task was taken");
  } catch (e) {
    console.log(`REFUSED ${e?.constructor?.name}`);
  }
  console.log("OK");
  process.exit(0);
} catch (e) {
  fail(`${e?.constructor?.name}: ${e?.message} ${e?.cause?.message ?? ""}`);
}
