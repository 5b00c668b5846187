// End-to-end check of Agentik's AG-UI facade with the official client
// (@ag-ui/client, pinned in package.json). Run by agui/e2e_test.go, which
// scripts the model for each scenario before starting this script.
//
// Usage: node e2e.mjs URL SCENARIO[,SCENARIO…]
// Runs the scenarios in order (one process: the client loads once), prints
// "RESULT <scenario> <json>" for each and exits 0 when all held; otherwise
// prints the reason to stderr and exits 1 (client/verifier error, stream
// without RUN_FINISHED, ids not matching, unexpected content).
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, list] = process.argv.slice(2);
let scenario = "";

function fail(msg) {
  console.error(`FAIL ${scenario}: ${msg}`);
  process.exit(1);
}

// run performs one runAgent and checks what every run must satisfy.
async function run(agent, params = {}, { expectError = false, abortOn } = {}) {
  const events = [];
  let failure = null;
  const sub = agent.subscribe({
    onEvent({ event }) {
      events.push(event);
      if (abortOn && event.type === abortOn) agent.abortRun();
    },
    onRunFailed({ error }) {
      failure = error;
    },
  });
  const runId = params.runId ?? `run-${Math.random().toString(36).slice(2)}`;
  let result;
  try {
    result = await agent.runAgent({ ...params, runId });
  } catch (err) {
    fail(`runAgent rejected: ${err?.name} ${err?.message ?? err}`);
  } finally {
    sub.unsubscribe();
  }
  if (failure) fail(`run failed: ${failure?.message ?? failure}`);
  if (events.length === 0) fail("no events");
  const first = events[0];
  if (first.type !== "RUN_STARTED" || first.threadId !== agent.threadId || first.runId !== runId) {
    fail(`first event ${JSON.stringify(first)}; want RUN_STARTED ${agent.threadId}/${runId}`);
  }
  const last = events[events.length - 1];
  if (abortOn) return { events, result, last };
  if (expectError) {
    if (last.type !== "RUN_ERROR") fail(`want RUN_ERROR last, got ${JSON.stringify(last)}`);
  } else if (last.type !== "RUN_FINISHED" || last.threadId !== agent.threadId || last.runId !== runId) {
    fail(`last event ${JSON.stringify(last)}; want RUN_FINISHED ${agent.threadId}/${runId}`);
  }
  return { events, result, last };
}

function texts(messages, role) {
  return messages.filter((m) => m.role === role).map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

function expectEqual(what, got, want) {
  if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

const pickColor = {
  name: "pick_color",
  description: "Ask the user to pick a color",
  parameters: { type: "object", properties: { hint: { type: "string" } } },
};

const scenarios = {
  // Two turns on one thread; the client resends the whole thread each time.
  async conversation() {
    const agent = new HttpAgent({ url, threadId: "e2e-conversation", initialMessages: [{ id: "u1", role: "user", content: "Hi" }] });
    await run(agent);
    agent.addMessage({ id: "u2", role: "user", content: "Again" });
    await run(agent);
    expectEqual("assistant texts", texts(agent.messages, "assistant"), ["Hello from Agentik", "Hello again"]);
    return { messages: agent.messages.length };
  },

  // A reloaded UI: no messages, the server's history comes as MESSAGES_SNAPSHOT.
  async reload() {
    const agent = new HttpAgent({ url, threadId: "e2e-conversation" });
    const { events } = await run(agent);
    if (!events.some((e) => e.type === "MESSAGES_SNAPSHOT")) fail("no MESSAGES_SNAPSHOT");
    expectEqual("ids of user messages", agent.messages.filter((m) => m.role === "user").map((m) => m.id), ["u1", "u2"]);
    expectEqual("user texts", texts(agent.messages, "user"), ["Hi", "Again"]);
    expectEqual("assistant texts", texts(agent.messages, "assistant"), ["Hello from Agentik", "Hello again"]);
    return { messages: agent.messages.length };
  },

  // A server-side tool: call, result with its own message id, then the answer.
  async servertool() {
    const agent = new HttpAgent({ url, threadId: "e2e-servertool", initialMessages: [{ id: "u1", role: "user", content: "Echo" }] });
    await run(agent);
    const withCalls = agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
    if (!withCalls || withCalls.toolCalls[0].id !== "call_echo" || withCalls.toolCalls[0].function.arguments !== '{"x":1}') {
      fail(`tool call not applied: ${JSON.stringify(agent.messages)}`);
    }
    const result = agent.messages.find((m) => m.role === "tool");
    if (!result || result.toolCallId !== "call_echo" || result.content !== 'echo {"x":1}' || result.id === withCalls.id) {
      fail(`tool result not applied: ${JSON.stringify(agent.messages)}`);
    }
    expectEqual("roles", agent.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
    return { messages: agent.messages.length };
  },

  // Reasoning arrives as 1.0 REASONING_* and becomes a reasoning message.
  async reasoning() {
    const agent = new HttpAgent({ url, threadId: "e2e-reasoning", initialMessages: [{ id: "u1", role: "user", content: "Why?" }] });
    await run(agent);
    expectEqual("reasoning", texts(agent.messages, "reasoning"), ["Thinking hard."]);
    expectEqual("answer", texts(agent.messages, "assistant"), ["The answer."]);
    return { messages: agent.messages.length };
  },

  // A frontend tool: the run ends with the call pending; the client runs the
  // tool, adds its result and runs again; the same turn continues.
  async frontendtool() {
    const agent = new HttpAgent({ url, threadId: "e2e-frontend", initialMessages: [{ id: "u1", role: "user", content: "Pick a color" }] });
    const first = await run(agent, { tools: [pickColor] });
    const pending = first.last.outcome?.pendingToolCallIds;
    expectEqual("pending calls", pending, ["call_ui"]);
    const call = agent.messages.find((m) => m.role === "assistant")?.toolCalls?.[0];
    if (!call || call.function.name !== "pick_color" || JSON.parse(call.function.arguments).hint !== "warm") {
      fail(`frontend call not applied: ${JSON.stringify(agent.messages)}`);
    }
    agent.addMessage({ id: "t1", role: "tool", toolCallId: call.id, content: "blue" });
    await run(agent, { tools: [pickColor] });
    expectEqual("roles", agent.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
    expectEqual("answer", texts(agent.messages, "assistant").at(-1), "You picked blue.");
    return { messages: agent.messages.length };
  },

  // Tool approval (AG-UI 1.0 interrupts): the run ends with an interrupt
  // outcome for the call that waits; the client answers through resume
  // (approve with edited arguments), the same turn continues; the next call
  // that waits is cancelled (a denial), and the turn answers again.
  async approval() {
    const agent = new HttpAgent({ url, threadId: "e2e-approval", initialMessages: [{ id: "u1", role: "user", content: "Mail bob" }] });
    let outcome;
    const first = await run(agent);
    outcome = first.last.outcome;
    if (outcome?.type !== "interrupt") fail(`first run outcome ${JSON.stringify(outcome)}`);
    expectEqual("pending interrupts", agent.pendingInterrupts.map((i) => [i.id, i.reason, i.toolCallId]), [["call_mail", "tool_approval", "call_mail"]]);
    const schema = agent.pendingInterrupts[0].responseSchema;
    if (!schema?.required?.includes("approved") || !schema.properties?.arguments?.required?.includes("to")) fail(`responseSchema ${JSON.stringify(schema)}`);
    const call = agent.messages.find((m) => m.role === "assistant")?.toolCalls?.[0];
    if (call?.id !== "call_mail" || JSON.parse(call.function.arguments).to !== "bob") fail(`call not applied: ${JSON.stringify(agent.messages)}`);
    // The client refuses a run that leaves the interrupt unanswered.
    let refused = false;
    try {
      await agent.runAgent({ runId: "run-unanswered" });
    } catch (err) {
      refused = /pending interrupt/.test(err?.message ?? "");
    }
    if (!refused) fail("the client ran without answering the interrupt");
    const resume = buildResumeArray(agent.pendingInterrupts, {
      call_mail: { status: "resolved", payload: { approved: true, arguments: { to: "bob@example.com", text: "late" } } },
    });
    const second = await run(agent, { resume });
    if (second.last.outcome && second.last.outcome.type !== "success") fail(`second run outcome ${JSON.stringify(second.last.outcome)}`);
    expectEqual("pending after resume", agent.pendingInterrupts, []);
    const result = agent.messages.find((m) => m.role === "tool" && m.toolCallId === "call_mail");
    expectEqual("approved result", result?.content, 'sent {"to":"bob@example.com","text":"late"}');
    expectEqual("answer", texts(agent.messages, "assistant").at(-1), "Mail sent.");

    agent.addMessage({ id: "u2", role: "user", content: "Mail eve" });
    const third = await run(agent);
    expectEqual("third run interrupts", third.last.outcome?.interrupts?.map((i) => i.id), ["call_mail2"]);
    await run(agent, { resume: buildResumeArray(agent.pendingInterrupts, { call_mail2: { status: "cancelled" } }) });
    const denied = agent.messages.find((m) => m.role === "tool" && m.toolCallId === "call_mail2");
    expectEqual("denied result", denied?.content, "denied by the user: cancelled");
    expectEqual("answer after denial", texts(agent.messages, "assistant").at(-1), "Not sent.");
    return { messages: agent.messages.length };
  },

  // Shared state (SPEC §19): the client's state reaches the agent, which
  // changes it (update_state) during the run: STATE_SNAPSHOT, then
  // STATE_DELTA, applied by the client. A later run and a reloaded client
  // that sends the empty default state keep it.
  async state() {
    const agent = new HttpAgent({ url, threadId: "e2e-state", initialMessages: [{ id: "u1", role: "user", content: "Count up" }],
      initialState: { count: 1, items: ["a"] } });
    const first = await run(agent);
    const states = first.events.filter((e) => e.type.startsWith("STATE_"));
    expectEqual("state events", states.map((e) => [e.type, e.snapshot ?? e.delta]), [
      ["STATE_SNAPSHOT", { count: 1, items: ["a"] }],
      ["STATE_DELTA", [{ op: "replace", path: "/count", value: 2 }]],
    ]);
    if (states[1] !== first.events.find((e) => e.type === "STATE_DELTA") ||
      first.events.indexOf(states[0]) !== 1) fail(`STATE_SNAPSHOT must follow RUN_STARTED: ${JSON.stringify(first.events.map((e) => e.type))}`);
    expectEqual("state after the agent's change", agent.state, { count: 2, items: ["a"] });
    expectEqual("answer", texts(agent.messages, "assistant").at(-1), "Counted.");

    agent.addMessage({ id: "u2", role: "user", content: "Hi" });
    const second = await run(agent);
    expectEqual("second run's state events", second.events.filter((e) => e.type.startsWith("STATE_")).map((e) => e.type), ["STATE_SNAPSHOT"]);
    expectEqual("state after the second run", agent.state, { count: 2, items: ["a"] });

    const reloaded = new HttpAgent({ url, threadId: "e2e-state" });
    await run(reloaded);
    expectEqual("reloaded state", reloaded.state, { count: 2, items: ["a"] });
    return { state: reloaded.state };
  },

  // The model fails: the run ends with RUN_ERROR{code}, runAgent resolves.
  async failure() {
    const agent = new HttpAgent({ url, threadId: "e2e-failure", initialMessages: [{ id: "u1", role: "user", content: "Fail" }] });
    const { last } = await run(agent, {}, { expectError: true });
    expectEqual("error code", last.code, "llm_error");
    return { code: last.code };
  },

  // abortRun() while the answer streams: the server interrupts the turn.
  async abort() {
    const agent = new HttpAgent({ url, threadId: "e2e-abort", initialMessages: [{ id: "u1", role: "user", content: "Talk" }] });
    const { events } = await run(agent, {}, { abortOn: "TEXT_MESSAGE_CONTENT" });
    if (events.some((e) => e.type === "RUN_FINISHED")) fail("run finished despite abort");
    return { events: events.length };
  },
};

for (scenario of (list ?? "").split(",")) {
  const fn = scenarios[scenario];
  if (!fn) fail(`unknown scenario; have ${Object.keys(scenarios).join(", ")}`);
  const out = await fn();
  console.log(`RESULT ${scenario} ${JSON.stringify(out)}`);
}
