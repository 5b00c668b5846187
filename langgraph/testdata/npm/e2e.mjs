// Scenarios of the LangGraph SDK against Agentik's LangGraph API, run by
// langgraph's TestLangGraphSDK: node e2e.mjs <apiUrl> <apiKey> <scenario> [json].
// Each prints one JSON object: what the SDK returned, for the Go test to
// check against the journal.
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, apiKey, scenario, extra] = process.argv.slice(2);
const arg = extra ? JSON.parse(extra) : {};
const client = new Client({ apiUrl, apiKey, defaultHeaders: {} });
const A = "agentik";

async function status(p) {
  try {
    await p;
    return 200;
  } catch (e) {
    return e.status ?? e.response?.status ?? String(e);
  }
}

async function collect(stream) {
  const events = [];
  for await (const part of stream) events.push({ event: part.event, data: part.data, id: part.id });
  return events;
}

const human = (content) => ({ messages: [{ type: "human", content }] });

const scenarios = {
  // Every read endpoint and one streamed run.
  async basic() {
    const assistants = await client.assistants.search({});
    const assistant = await client.assistants.get(A);
    const schemas = await client.assistants.getSchemas(A);
    const graph = await client.assistants.getGraph(A);
    const thread = await client.threads.create({ metadata: { title: "first" } });
    let runId;
    const events = await collect(client.runs.stream(thread.thread_id, A, {
      input: human("hello there"),
      streamMode: ["values", "messages-tuple", "updates"],
      onRunCreated: (m) => { runId = m.run_id; },
    }));
    const state = await client.threads.getState(thread.thread_id);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
    const runs = await client.runs.list(thread.thread_id);
    const run = await client.runs.get(thread.thread_id, runs[0].run_id);
    const found = await client.threads.search({ metadata: { graph_id: A } });
    const got = await client.threads.get(thread.thread_id);
    const patched = await client.threads.update(thread.thread_id, { metadata: { title: "renamed" } });
    const atCheckpoint = await client.threads.getState(thread.thread_id, history[1].checkpoint.checkpoint_id);
    const ok = await fetch(apiUrl + "/ok").then((r) => r.json());
    const info = await fetch(apiUrl + "/info", { headers: { "x-api-key": apiKey } }).then((r) => r.status);
    return { assistants, assistant, schemas, graph, thread, runId, events, state, history, runs, run, found, got, patched, atCheckpoint, ok, info };
  },

  // The conversation's shared state (SPEC §19) as values beside messages:
  // updateState sets keys, getState and a values stream carry them, and
  // another principal cannot set them.
  async state() {
    const thread = await client.threads.create();
    const updated = await client.threads.updateState(thread.thread_id, { values: { count: 1, tags: ["a"] } });
    const withMessages = await status(client.threads.updateState(thread.thread_id, { values: { messages: [] } }));
    const other = arg.otherThread ? await status(client.threads.updateState(arg.otherThread, { values: { owned: true } })) : 0;
    const events = await collect(client.runs.stream(thread.thread_id, A, { input: human("state?"), streamMode: ["values"] }));
    const state = await client.threads.getState(thread.thread_id);
    const got = await client.threads.get(thread.thread_id);
    return { thread, updated, withMessages, other, events, state, got };
  },

  async wait() {
    const thread = await client.threads.create();
    const values = await client.runs.wait(thread.thread_id, A, { input: human("wait for me") });
    const stateless = await client.runs.wait(null, A, { input: human("no thread") });
    const statelessStream = await collect(client.runs.stream(null, A, { input: human("no thread, streamed") }));
    const kept = await client.runs.wait(null, A, { input: human("keep this one"), onCompletion: "keep" });
    const badCompletion = await status(client.runs.wait(null, A, { input: human("x"), onCompletion: "complete" }));
    return { thread, values, stateless, statelessStream, kept, badCompletion };
  },

  // Input with system and earlier ai messages: a stateless client that
  // sends its whole history, and a thread run with instructions.
  async history() {
    const stateless = await client.runs.wait(null, A, { input: { messages: [
      { type: "system", content: "Answer in French." },
      { type: "human", content: "My name is Ada." },
      { type: "ai", content: "Hello Ada." },
      { type: "human", content: "What is my name?" },
    ] } });
    const thread = await client.threads.create();
    const values = await client.runs.wait(thread.thread_id, A, { input: { messages: [
      { role: "system", content: "Be brief." }, { role: "user", content: "hi" },
    ] } });
    const state = await client.threads.getState(thread.thread_id);
    const tool = await status(client.runs.wait(thread.thread_id, A, { input: { messages: [
      { type: "human", content: "and?" }, { type: "tool", content: "42", tool_call_id: "call_x" },
    ] } }));
    const aiOnly = await status(client.runs.wait(thread.thread_id, A, { input: { messages: [{ type: "ai", content: "I said so." }] } }));
    return { stateless, values, state, tool, aiOnly };
  },

  // A background run, joined.
  async background() {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, A, { input: human("in the background") });
    const joined = await client.runs.join(thread.thread_id, run.run_id);
    const after = await client.runs.get(thread.thread_id, run.run_id);
    const deleted = await status(client.runs.delete(thread.thread_id, run.run_id));
    const count = await client.threads.count({ metadata: { graph_id: A } });
    return { thread, run, joined, after, deleted, count };
  },

  // A background run whose model waits: joinStream sees it running, then
  // cancel(wait) interrupts it.
  async cancel() {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, A, { input: human("take your time") });
    const stream = client.runs.joinStream(thread.thread_id, run.run_id, { streamMode: ["messages-tuple"] });
    const seen = [];
    const it = stream[Symbol.asyncIterator]();
    for (;;) {
      const { value, done } = await it.next();
      if (done) break;
      seen.push({ event: value.event, data: value.data });
      if (value.event === "messages") break; // the first piece of the answer
    }
    const running = await client.runs.get(thread.thread_id, run.run_id);
    await client.runs.cancel(thread.thread_id, run.run_id, true);
    for (;;) {
      const { value, done } = await it.next();
      if (done) break;
      seen.push({ event: value.event, data: value.data });
    }
    const after = await client.runs.get(thread.thread_id, run.run_id);
    return { run, seen, running, after };
  },

  // A run whose tool waits for approval, resumed with a decision.
  async approval() {
    const thread = await client.threads.create();
    const first = await collect(client.runs.stream(thread.thread_id, A, {
      input: human("mail bob"), streamMode: ["values", "updates"],
    }));
    const waiting = await client.threads.getState(thread.thread_id);
    const th = await client.threads.get(thread.thread_id);
    // Without values, the stream is not read from a snapshot: the tool's
    // update and its tool message must still come.
    const updatesOnly = [];
    const second = await collect(client.runs.stream(thread.thread_id, A, {
      command: { resume: { decisions: [arg.decision] } }, streamMode: ["values"],
    }));
    const state = await client.threads.getState(thread.thread_id);
    updatesOnly.push(...await collect(client.runs.stream(thread.thread_id, A, {
      input: human("mail carol"), streamMode: ["updates", "messages-tuple"],
    })));
    return { first, waiting, th, second, state, updatesOnly };
  },

  // A dropped stream rejoined with Last-Event-ID resumes exactly.
  async rejoin() {
    const thread = await client.threads.create();
    const first = [];
    let runId;
    for await (const part of client.runs.stream(thread.thread_id, A, {
      input: human("resume me"), streamMode: ["values"], streamResumable: true,
      onRunCreated: (m) => { runId = m.run_id; },
    })) {
      first.push({ event: part.event, id: part.id, data: part.data });
    }
    const ids = first.filter((e) => e.event === "values").map((e) => e.id);
    const rest = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: ids[0], streamMode: ["values"] }));
    return { runId, first, rest };
  },

  // What a client gets for what is not there or not allowed.
  async errors() {
    const thread = await client.threads.create();
    const other = arg.otherThread;
    return {
      unknownAssistant: await status(client.assistants.get("nope")),
      unknownThread: await status(client.threads.get("00000000-0000-4000-8000-000000000000")),
      otherThread: await status(client.threads.get(other)),
      otherState: await status(client.threads.getState(other)),
      otherRun: await status(client.runs.wait(other, A, { input: human("hi") })),
      badMode: await status(collect(client.runs.stream(thread.thread_id, A, { input: human("x"), streamMode: ["debug"] }))),
      badStrategy: await status(client.runs.wait(thread.thread_id, A, { input: human("x"), multitaskStrategy: "later" })),
      noInterrupt: await status(client.runs.wait(thread.thread_id, A, { command: { resume: { decisions: [{ type: "approve" }] } } })),
      badCheckpoint: await status(client.threads.getState(thread.thread_id, "00000000-0000-0000-0000-0000000000ff")),
      unknownRun: await status(client.runs.get(thread.thread_id, "00000000-0000-4000-8000-000000000000")),
      runUnknownAssistant: await status(client.runs.wait(thread.thread_id, "nope", { input: human("x") })),
      runUnknownThread: await status(client.runs.wait("00000000-0000-4000-8000-000000000000", A, { input: human("x") })),
      // Refused stateless runs: each would have had a temporal thread.
      statelessUnknownAssistant: await status(client.runs.wait(null, "nope", { input: human("x") })),
      statelessSystem: await status(client.runs.wait(null, A, { input: { messages: [{ type: "system", content: "obey" }] } })),
      statelessStreamSystem: await status(collect(client.runs.stream(null, A, { input: { messages: [{ type: "system", content: "obey" }] } }))),
      statelessResume: await status(client.runs.wait(null, A, { command: { resume: { decisions: [{ type: "approve" }] } } })),
      statelessNoInput: await status(client.runs.wait(null, A, {})),
      thread,
    };
  },

  // Edit and regenerate through checkpoints, as agent-chat-ui does them:
  // a run from the checkpoint before a human message with new input (an
  // edit), and a run from the checkpoint after a human message without
  // input (a regenerate); then copy.
  async branch() {
    const thread = await client.threads.create();
    const t = thread.thread_id;
    await client.runs.wait(t, A, { input: human("first question") });
    await client.runs.wait(t, A, { input: human("second question") });
    const before = await client.threads.getHistory(t, { limit: 100 });
    // The state whose last message is the second human message.
    const afterSecond = before.find((s) => s.values.messages.length === 3);
    const beforeSecond = before.find((s) => s.values.messages.length === 2);
    const regenerated = await client.runs.wait(t, A, { checkpoint: afterSecond.checkpoint });
    const edited = await client.runs.wait(t, A, { input: human("second question, edited"), checkpoint: beforeSecond.checkpoint });
    const history = await client.threads.getHistory(t, { limit: 100 });
    const state = await client.threads.getState(t);
    const old = await client.threads.getState(t, afterSecond.checkpoint.checkpoint_id);
    const headOnly = await client.threads.getHistory(t, { limit: 100, checkpoint: state.checkpoint });
    const copy = await client.threads.copy(t);
    const copyState = await client.threads.getState(copy.thread_id);
    return { thread, before, regenerated, edited, history, headOnly, state, old, copy, copyState };
  },

  // multitask_strategy rollback: the running run is cut and the new run's
  // message takes its place on the head path.
  async rollback() {
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, A, { input: human("slow question") });
    const it = client.runs.joinStream(thread.thread_id, run.run_id, { streamMode: ["messages-tuple"] })[Symbol.asyncIterator]();
    for (;;) {
      const { value, done } = await it.next();
      if (done || value.event === "messages") break; // the slow answer has begun
    }
    const values = await client.runs.wait(thread.thread_id, A, { input: human("new question"), multitaskStrategy: "rollback" });
    const old = await client.runs.get(thread.thread_id, run.run_id);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    return { thread, values, old, history };
  },

  // Threads found by their values: a shared-state key, and the messages.
  async searchValues() {
    const red = await client.threads.create();
    const blue = await client.threads.create();
    await client.threads.updateState(red.thread_id, { values: { color: "red", n: 1 } });
    await client.threads.updateState(blue.thread_id, { values: { color: "blue" } });
    await client.runs.wait(red.thread_id, A, { input: human("find me") });
    const redState = await client.threads.getState(red.thread_id);
    const byColor = await client.threads.search({ values: { color: "red" } });
    const byTwo = await client.threads.search({ values: { color: "red", n: 1 } });
    const none = await client.threads.search({ values: { color: "green" } });
    const wrongType = await client.threads.search({ values: { n: "1" } });
    const byMessages = await client.threads.search({ values: { messages: redState.values.messages } });
    const emptyMessages = await client.threads.search({ values: { messages: [] } });
    const count = await client.threads.count({ values: { color: "blue" } });
    return { red, blue, byColor, byTwo, none, wrongType, byMessages, emptyMessages, count };
  },

  // Deleting runs: a finished run's record goes, its messages stay; a
  // running run is 409.
  async deleteRun() {
    const thread = await client.threads.create();
    const t = thread.thread_id;
    await client.runs.wait(t, A, { input: human("one") });
    const [done] = await client.runs.list(t);
    const slow = await client.runs.create(t, A, { input: human("slow") });
    const it = client.runs.joinStream(t, slow.run_id, { streamMode: ["messages-tuple"] })[Symbol.asyncIterator]();
    for (;;) {
      const { value, done: over } = await it.next();
      if (over || value.event === "messages") break;
    }
    const running = await status(client.runs.delete(t, slow.run_id));
    await client.runs.cancel(t, slow.run_id, true);
    const deleted = await status(client.runs.delete(t, done.run_id));
    const again = await status(client.runs.delete(t, done.run_id));
    const get = await status(client.runs.get(t, done.run_id));
    const join = await status(client.runs.join(t, done.run_id));
    const list = await client.runs.list(t);
    const state = await client.threads.getState(t);
    return { done, slow, running, deleted, again, get, join, list, state };
  },

  // multitask_strategy reject, enqueue and interrupt while a run runs.
  async multitask() {
    const thread = await client.threads.create();
    const t = thread.thread_id;
    const waitFirstPiece = async (runId) => {
      const it = client.runs.joinStream(t, runId, { streamMode: ["messages-tuple"] })[Symbol.asyncIterator]();
      for (;;) {
        const { value, done } = await it.next();
        if (done || value.event === "messages") break;
      }
    };
    const slow = await client.runs.create(t, A, { input: human("slow") });
    await waitFirstPiece(slow.run_id);
    const rejected = await status(client.runs.wait(t, A, { input: human("rejected"), multitaskStrategy: "reject" }));
    const queued = await client.runs.create(t, A, { input: human("queued"), multitaskStrategy: "enqueue" });
    const queuedBefore = await client.runs.get(t, queued.run_id);
    await client.runs.cancel(t, slow.run_id, true);
    const queuedValues = await client.runs.join(t, queued.run_id);
    const slowAfter = await client.runs.get(t, slow.run_id);
    const queuedAfter = await client.runs.get(t, queued.run_id);
    const slow2 = await client.runs.create(t, A, { input: human("slow again") });
    await waitFirstPiece(slow2.run_id);
    const cut = await client.runs.wait(t, A, { input: human("cut in"), multitaskStrategy: "interrupt" });
    const slow2After = await client.runs.get(t, slow2.run_id);
    return { thread, rejected, queued, queuedBefore, queuedValues, slowAfter, queuedAfter, cut, slow2After, slow2 };
  },

  // The stream modes messages (the older one) and events.
  async modes() {
    const thread = await client.threads.create();
    const messages = await collect(client.runs.stream(thread.thread_id, A, { input: human("old mode"), streamMode: ["messages"] }));
    const evs = await collect(client.runs.stream(thread.thread_id, A, { input: human("events please"), streamMode: ["events"] }));
    return { thread, messages, events: evs };
  },

  // A thread named by the client, and if_exists.
  async createNamed() {
    const id = arg.threadId;
    const created = await client.threads.create({ threadId: id, metadata: { title: "named" } });
    const raise = await status(client.threads.create({ threadId: id, ifExists: "raise" }));
    const kept = await client.threads.create({ threadId: id, ifExists: "do_nothing" });
    const count = await client.threads.count({});
    return { created, raise, kept, count };
  },

  // A checkpoint of another thread, and bad resume decisions.
  async badRuns() {
    const mine = await client.threads.create();
    const other = await client.threads.create();
    await client.runs.wait(other.thread_id, A, { input: human("elsewhere") });
    // Mine has the same seqs as the other thread's checkpoint names.
    await client.runs.wait(mine.thread_id, A, { input: human("here") });
    const otherState = await client.threads.getState(other.thread_id);
    const otherCheckpoint = await status(client.runs.wait(mine.thread_id, A, { input: human("x"), checkpoint: otherState.checkpoint }));
    const otherCheckpointRegen = await status(client.runs.wait(mine.thread_id, A, { checkpoint: otherState.checkpoint }));
    // The other thread's checkpoint id without its thread_id: every place
    // that takes a checkpoint id refuses it on mine.
    const otherId = otherState.checkpoint.checkpoint_id;
    const mineHistory = await client.threads.getHistory(mine.thread_id, { limit: 10 });
    // (reject: were one of them taken, the next would not wait behind it.)
    const R = "reject";
    const foreign = {
      getState: await status(client.threads.getState(mine.thread_id, otherId)),
      postState: await status(client.threads.getState(mine.thread_id, { checkpoint_id: otherId })),
      runCheckpointId: await status(client.runs.wait(mine.thread_id, A, { input: human("x"), checkpointId: otherId, multitaskStrategy: R })),
      runRegenCheckpointId: await status(client.runs.wait(mine.thread_id, A, { checkpointId: otherId, multitaskStrategy: R })),
      runCheckpoint: await status(client.runs.wait(mine.thread_id, A, { input: human("x"), checkpoint: { checkpoint_id: otherId }, multitaskStrategy: R })),
      streamCheckpointId: await status(collect(client.runs.stream(mine.thread_id, A, { input: human("x"), checkpointId: otherId, multitaskStrategy: R }))),
      historyBefore: await status(client.threads.getHistory(mine.thread_id, { before: { configurable: { checkpoint_id: otherId } } })),
      historyBeforeId: await status(client.threads.getHistory(mine.thread_id, { before: { checkpoint_id: otherId } })),
      historyCheckpoint: await status(client.threads.getHistory(mine.thread_id, { checkpoint: { checkpoint_id: otherId } })),
      statelessCheckpointId: await status(client.runs.wait(null, A, { input: human("x"), checkpointId: otherId, multitaskStrategy: R })),
    };
    // A copy's checkpoints are its own: mine's ids are not the copy's.
    const copy = await client.threads.copy(mine.thread_id);
    const copyState = await client.threads.getState(copy.thread_id);
    foreign.copyGetState = await status(client.threads.getState(copy.thread_id, mineHistory[0].checkpoint.checkpoint_id));
    // The empty thread's checkpoint (the oldest) is still mine to read.
    const empty = await client.threads.getState(mine.thread_id, mineHistory[mineHistory.length - 1].checkpoint.checkpoint_id);
    if (Object.values(foreign).some((code) => code !== 404)) {
      return { mine, other, otherState, otherCheckpoint, otherCheckpointRegen, foreign, mineHistory }; // what follows expects nothing ran
    }
    await client.runs.wait(mine.thread_id, A, { input: human("mail bob") });
    const waiting = await client.threads.getState(mine.thread_id);
    const unknownType = await status(client.runs.wait(mine.thread_id, A, { command: { resume: { decisions: [{ type: "maybe" }] } } }));
    const tooMany = await status(client.runs.wait(mine.thread_id, A, { command: { resume: { decisions: [{ type: "approve" }, { type: "approve" }] } } }));
    const none = await status(client.runs.wait(mine.thread_id, A, { command: { resume: { decisions: [] } } }));
    const otherTool = await status(client.runs.wait(mine.thread_id, A, { command: { resume: { decisions: [{ type: "edit", edited_action: { name: "rm_rf", args: {} } }] } } }));
    const after = await client.threads.getState(mine.thread_id);
    return { mine, other, otherState, otherCheckpoint, otherCheckpointRegen, foreign, mineHistory, copy, copyState, empty, waiting, unknownType, tooMany, none, otherTool, after };
  },

  // An image content block in, through the state and out again.
  async image() {
    const thread = await client.threads.create();
    const content = [
      { type: "text", text: "what is this?" },
      { type: "image_url", image_url: { url: "data:image/png;base64," + arg.png } },
    ];
    const values = await client.runs.wait(thread.thread_id, A, { input: { messages: [{ type: "human", content }] } });
    const state = await client.threads.getState(thread.thread_id);
    return { thread, values, state };
  },

  async remove() {
    const thread = await client.threads.create();
    await client.threads.delete(thread.thread_id);
    return { gone: await status(client.threads.get(thread.thread_id)) };
  },
};

const out = await scenarios[scenario]();
process.stdout.write(JSON.stringify(out));
