// End-to-end check of an agentik A2A facade with the official client
// (@a2a-js/sdk 1.3.0), driven by cmd/agentik/a2a_test.go.
//
//   node e2e.mjs <baseUrl> v1     A2A 1.0, the client's native protocol
//   node e2e.mjs <baseUrl> v03    A2A 0.3 through the client's legacyCompat
//                                 layer (0.3-only card at /.well-known/agent.json)
//
// The scripted model must answer, in order: "Hello from agentik",
// "Second answer", "streamed answer here", a reply paused forever (the
// cancel step), and a reply paused until the test writes a line to stdin
// (the resubscribe step), then "resub done".
// Prints one line per step; exits 1 on the first failure.
import readline from "node:readline";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState, taskStateToJSON } from "@a2a-js/sdk";

const [baseUrl, mode] = process.argv.slice(2);
const legacy = mode === "v03";
const token = process.env.A2A_TOKEN;
const fetchImpl = (url, init = {}) => {
  if (token) init.headers = { ...(init.headers || {}), Authorization: "Bearer " + token };
  return fetch(url, init);
};
const compat = legacy ? { legacyCompat: { enabled: true } } : {};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    cardResolver: new DefaultAgentCardResolver({ ...compat, fetchImpl }),
    transports: [new JsonRpcTransportFactory({ ...compat, fetchImpl })],
  }),
);

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const fail = (msg) => {
  console.log("FAIL " + msg);
  process.exit(1);
};
const check = (cond, msg) => {
  if (!cond) fail(msg);
};
const state = (s) => taskStateToJSON(s);
const textOf = (parts) => (parts || []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");
const artifactText = (task) => (task.artifacts || []).map((a) => textOf(a.parts)).join("");
const msg = (text, extra = {}) => ({
  tenant: "",
  message: {
    messageId: crypto.randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, filename: "", mediaType: "text/plain" }],
    taskId: "",
    contextId: extra.contextId || "",
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: extra.immediate ? { acceptedOutputModes: [], returnImmediately: true } : undefined,
});

try {
  // 1. card and transport
  const client = legacy
    ? await factory.createFromUrl(baseUrl, "/.well-known/agent.json")
    : await factory.createFromUrl(baseUrl);
  const want = legacy ? "0.3" : "1.0";
  check(client.protocolVersion === want, `protocol ${client.protocolVersion}, want ${want}`);
  const card = await client.getAgentCard();
  check(card.capabilities?.streaming === true, "card does not declare streaming");
  console.log(`CARD ${card.name} protocol=${client.protocolVersion}`);
  // Answers can carry images (a tool's): the card and its skills say so.
  console.log(`MODES out=${(card.defaultOutputModes ?? []).join(",")} skill=${(card.skills?.[0]?.outputModes ?? []).join(",")}`);

  // 2. blocking send answered by a completed task
  const r1 = await client.sendMessage(msg("hello"));
  check(r1.status, "send did not return a task");
  check(r1.status.state === TaskState.TASK_STATE_COMPLETED, `send state ${state(r1.status.state)}`);
  check(artifactText(r1) === "Hello from agentik", `send answer ${JSON.stringify(artifactText(r1))}`);
  check(r1.contextId && r1.id, "task without ids");
  console.log(`SEND ${state(r1.status.state)} ${artifactText(r1)}`);

  // 3. follow-up in the same context
  const r2 = await client.sendMessage(msg("and again", { contextId: r1.contextId }));
  check(r2.contextId === r1.contextId, "follow-up got another context");
  check(r2.id !== r1.id, "follow-up reused the task id");
  check(artifactText(r2) === "Second answer", `follow-up answer ${JSON.stringify(artifactText(r2))}`);
  console.log(`FOLLOWUP ${state(r2.status.state)} same-context`);

  // 4. streaming send
  const kinds = [];
  let streamed = "";
  let last;
  for await (const ev of client.sendMessageStream(msg("stream please", { contextId: r1.contextId }))) {
    const k = ev.payload?.$case;
    kinds.push(k);
    if (k === "artifactUpdate") {
      const a = ev.payload.value;
      streamed = a.append ? streamed + textOf(a.artifact.parts) : textOf(a.artifact.parts);
    }
    last = ev.payload?.value;
  }
  check(kinds[0] === "task", `stream starts with ${kinds[0]}`);
  check(kinds.includes("artifactUpdate"), "stream has no artifact update");
  check(kinds.at(-1) === "statusUpdate" && last.status.state === TaskState.TASK_STATE_COMPLETED, "stream does not end with completed");
  check(streamed === "streamed answer here", `streamed ${JSON.stringify(streamed)}`);
  console.log(`STREAM ${kinds.join(",")}`);

  // 5. get task, after the turn
  const g = await client.getTask({ tenant: "", id: r1.id, historyLength: 10 });
  check(g.status.state === TaskState.TASK_STATE_COMPLETED && artifactText(g) === "Hello from agentik", "get task differs");
  check(g.history?.length === 1 && textOf(g.history[0].parts) === "hello", "get task history");
  console.log(`GET ${state(g.status.state)} history=${g.history.length}`);

  // 6. unknown task
  try {
    await client.getTask({ tenant: "", id: "does-not-exist" });
    fail("getTask(does-not-exist) succeeded");
  } catch (e) {
    check(/TaskNotFound/.test(e?.constructor?.name), `unknown task error ${e?.constructor?.name}: ${e?.message}`);
    console.log(`NOTFOUND ${e.constructor.name}`);
  }

  // 7. cancel a running task
  const r3 = await client.sendMessage(msg("take your time", { contextId: r1.contextId, immediate: true }));
  check(r3.status && !(r3.status.state === TaskState.TASK_STATE_COMPLETED), "non-blocking send did not return early");
  const c = await client.cancelTask({ tenant: "", id: r3.id });
  check(c.status.state === TaskState.TASK_STATE_CANCELED, `cancel state ${state(c.status.state)}`);
  const g3 = await client.getTask({ tenant: "", id: r3.id });
  check(g3.status.state === TaskState.TASK_STATE_CANCELED, `canceled task reads ${state(g3.status.state)}`);
  console.log(`CANCEL ${state(c.status.state)}`);
  try {
    await client.cancelTask({ tenant: "", id: r3.id });
    fail("second cancel succeeded");
  } catch (e) {
    check(/TaskNotCancelable/.test(e?.constructor?.name), `second cancel error ${e?.constructor?.name}: ${e?.message}`);
    console.log(`NOTCANCELABLE ${e.constructor.name}`);
  }

  // 8. resubscribe to a running task
  const r4 = await client.sendMessage(msg("resubscribe to me", { contextId: r1.contextId, immediate: true }));
  const rk = [];
  let rtext = "";
  let rlast;
  for await (const ev of client.resubscribeTask({ tenant: "", id: r4.id })) {
    const k = ev.payload?.$case;
    rk.push(k);
    if (rk.length === 1) {
      console.log("RESUBSCRIBED"); // the test releases the paused reply now
      await lines.next();
    }
    if (k === "artifactUpdate") {
      const a = ev.payload.value;
      rtext = a.append ? rtext + textOf(a.artifact.parts) : textOf(a.artifact.parts);
    }
    rlast = ev.payload?.value;
  }
  check(rk[0] === "task", `resubscribe starts with ${rk[0]}`);
  check(rlast?.status?.state === TaskState.TASK_STATE_COMPLETED, "resubscribe does not end completed");
  check(rtext === "resub done", `resubscribed text ${JSON.stringify(rtext)}`);
  console.log(`RESUBSCRIBE ${rk.join(",")}`);
  console.log("OK");
  process.exit(0);
} catch (e) {
  fail(`${e?.constructor?.name}: ${e?.message} ${e?.cause?.message ?? ""}`);
}
