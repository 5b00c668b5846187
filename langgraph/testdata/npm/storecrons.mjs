// The LangGraph SDK's store and crons clients against Agentik's LangGraph
// API (memory blocks and schedules), run by langgraph's TestLangGraphSDKStore*
// and TestLangGraphSDKCrons*: node storecrons.mjs <apiUrl> <apiKey> <scenario> [json].
// Each prints one JSON object: what the SDK returned, for the Go test to
// check against the memory and schedules.
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, apiKey, scenario, extra] = process.argv.slice(2);
const arg = extra ? JSON.parse(extra) : {};
// No retries: a 413 or 429 is the answer under test, not a reason to wait.
const client = new Client({ apiUrl, apiKey, defaultHeaders: {}, callerOptions: { maxRetries: 0 } });
const A = "agentik";
const M = ["memory"];

// status is 200 for a call that succeeds, else the HTTP status and the
// error's detail.
async function status(p) {
  try {
    await p;
    return { status: 200 };
  } catch (e) {
    return { status: e.status ?? String(e), message: String(e.message ?? "") };
  }
}

const human = (content) => ({ messages: [{ type: "human", content }] });

const scenarios = {
  // Puts, reads and searches of the caller's blocks, the refusals, and a
  // run whose model call carries the new value.
  async store() {
    const put = await client.store.putItem(M, "human", { value: arg.text });
    const got = await client.store.getItem(M, "human");
    const found = await client.store.searchItems(M, { query: arg.query });
    const missed = await client.store.searchItems(M, { query: "nothing-like-this" });
    const filtered = await client.store.searchItems([], { filter: { value: arg.text } });
    const all = await client.store.searchItems([], { limit: 10 });
    const paged = await client.store.searchItems(M, { limit: 1, offset: 1 });
    const elsewhere = await client.store.searchItems(["users"]);
    const namespaces = await client.store.listNamespaces();
    const noNamespaces = await client.store.listNamespaces({ prefix: ["users"] });
    const tooLong = await status(client.store.putItem(M, "human", { value: "x".repeat(arg.limit + 1) }));
    const readOnly = await status(client.store.putItem(M, "persona", { value: "changed" }));
    const notText = await status(client.store.putItem(M, "human", { value: { likes: ["tea"] } }));
    const extraKeys = await status(client.store.putItem(M, "human", { value: "a", more: 1 }));
    const newKey = await status(client.store.putItem(M, "ideas", { value: "x" }));
    const unknownKey = await status(client.store.getItem(M, "ideas"));
    const otherNamespace = await status(client.store.putItem(["users", "alice"], "human", { value: "x" }));
    const thread = await client.threads.create();
    const values = await client.runs.wait(thread.thread_id, A, { input: human("what do I like?") });
    return { put: put ?? null, got, found, missed, filtered, all, paged, elsewhere, namespaces, noNamespaces,
      tooLong, readOnly, notText, extraKeys, newKey, unknownKey, otherNamespace, values };
  },

  // What another principal sees, and what its changes do.
  async storeOther() {
    const got = await client.store.getItem(M, "human");
    const found = await client.store.searchItems(M, { query: arg.query });
    await client.store.putItem(M, "human", { value: arg.text });
    return { got, found };
  },

  async storeDelete() {
    await client.store.deleteItem(M, "human");
    return { after: await client.store.getItem(M, "human") };
  },

  // Every store call where the agent keeps no memory.
  async storeOff() {
    return {
      put: await status(client.store.putItem(M, "human", { value: "x" })),
      get: await status(client.store.getItem(M, "human")),
      del: await status(client.store.deleteItem(M, "human")),
      search: await status(client.store.searchItems(M)),
      namespaces: await status(client.store.listNamespaces()),
      crons: await status(client.crons.search({})),
      info: await fetch(apiUrl + "/info").then((r) => r.json()),
    };
  },

  // A cron on a thread, a stateless one, the refusals, search and count.
  async crons() {
    const thread = await client.threads.create();
    // Yearly: it must not fire on its own while the test runs (a */5 did,
    // at a five-minute boundary, and its run was counted with the one the
    // test starts).
    const onThread = await client.crons.createForThread(thread.thread_id, A, {
      schedule: "0 0 1 1 *", input: human("the daily report"), timezone: "Europe/Paris", multitaskStrategy: "enqueue",
    });
    const stateless = await client.crons.create(A, { schedule: arg.every, input: human("tick") });
    const tooOften = await status(client.crons.create(A, { schedule: arg.tooOften, input: human("x") }));
    const overLimit = await status(client.crons.create(A, { schedule: "0 9 * * *", input: human("x") }));
    const badExpr = await status(client.crons.create(A, { schedule: "every day at nine", input: human("x") }));
    const noInput = await status(client.crons.create(A, { schedule: "0 9 * * *" }));
    const endTime = await status(client.crons.create(A, { schedule: "0 9 * * *", input: human("x"), endTime: "2030-01-01T00:00:00Z" }));
    const otherAssistant = await status(client.crons.create("nobody", { schedule: "0 9 * * *", input: human("x") }));
    const all = await client.crons.search({ assistantId: A, sortBy: "created_at", sortOrder: "asc" });
    const byThread = await client.crons.search({ threadId: thread.thread_id });
    const count = await client.crons.count({ assistantId: A });
    const info = await fetch(apiUrl + "/info").then((r) => r.json());
    return { thread, onThread, stateless, overLimit, tooOften, badExpr, noInput, endTime, otherAssistant, all, byThread, count, info };
  },

  // The runs a cron made on its thread, then the cron changed and deleted.
  async cronsAfter() {
    const runs = await client.runs.list(arg.thread);
    const joined = await client.runs.join(arg.thread, runs[0].run_id);
    const state = await client.threads.getState(arg.thread);
    const updated = await client.crons.update(arg.onThread, { schedule: "0 9 * * 1" });
    await client.crons.delete(arg.onThread);
    await client.crons.delete(arg.stateless);
    const gone = await status(client.crons.delete(arg.onThread));
    const left = await client.crons.search({});
    return { runs, joined, state, updated, gone, left };
  },

  // Another principal's view of the owner's crons.
  async cronsOther() {
    return {
      found: await client.crons.search({}),
      count: await client.crons.count({}),
      del: await status(client.crons.delete(arg.cron)),
      update: await status(client.crons.update(arg.cron, { enabled: false })),
      onThread: await status(client.crons.createForThread(arg.thread, A, { schedule: "0 9 * * *", input: human("x") })),
    };
  },
};

const out = await scenarios[scenario]();
process.stdout.write(JSON.stringify(out));
