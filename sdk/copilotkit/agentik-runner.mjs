// AgentikRunner: a CopilotKit runtime agent runner that takes a thread's
// history from Agentik, so that a page reloaded after the CopilotKit runtime
// restarted shows the conversation Agentik holds.
//
// Why: CopilotKit's browser client restores a thread with POST
// /agent/<id>/connect; the runtime answers it from its runner
// (runner.connect({threadId, agentId, headers})), never from the agent. The
// default InMemoryAgentRunner only knows the runs it made since the process
// started, so after a restart (or on another replica) the chat is empty
// although Agentik has the whole thread.
//
// What it does: runs, stop and isRunning go to the wrapped runner
// (InMemoryAgentRunner). A connect for a thread this runtime is running goes
// there too (it bridges the live run); any other connect asks Agentik itself:
// one AG-UI run of the thread's agent with no messages, which Agentik answers
// with RUN_STARTED, MESSAGES_SNAPSHOT (the journal) and RUN_FINISHED, and no
// model call.
//
// No imports: it works with whatever @copilotkit/runtime and @ag-ui/client
// the application has (checked with @copilotkit/runtime 1.75.0, whose
// agents are @ag-ui/client 0.0.59 HttpAgents).
//
//   import { CopilotRuntime, InMemoryAgentRunner } from "@copilotkit/runtime/v2";
//   import { HttpAgent } from "@ag-ui/client";
//   import { AgentikRunner } from "./agentik-runner.mjs";
//
//   const agents = { agentik: new HttpAgent({ url: "http://localhost:8080/agui" }) };
//   const runtime = new CopilotRuntime({
//     agents,
//     runner: new AgentikRunner({ agents, inner: new InMemoryAgentRunner() }),
//   });

export class AgentikRunner {
  /**
   * @param {object} options
   * @param {Record<string, object> | ((agentId: string) => object)} options.agents
   *   the runtime's agents (HttpAgents pointing at Agentik's /agui), or a
   *   function returning the agent for an id
   * @param {object} options.inner the runner that makes the runs
   *   (new InMemoryAgentRunner())
   */
  constructor({ agents, inner }) {
    if (!agents) throw new Error("AgentikRunner: agents is required");
    if (!inner) throw new Error("AgentikRunner: inner (e.g. new InMemoryAgentRunner()) is required");
    this.agents = agents;
    this.inner = inner;
    // Threads with a run of this runtime in flight, kept here because the
    // runner interface only answers isRunning asynchronously while connect
    // must return its stream at once.
    this.live = new Map();
  }

  run(request) {
    const events = this.inner.run(request);
    const id = request.threadId;
    this.live.set(id, (this.live.get(id) ?? 0) + 1);
    const done = () => {
      const n = (this.live.get(id) ?? 1) - 1;
      if (n > 0) this.live.set(id, n);
      else this.live.delete(id);
    };
    events.subscribe({ complete: done, error: done });
    return events;
  }

  connect(request) {
    if (this.live.has(request.threadId)) return this.inner.connect(request);
    const agent = this.agentFor(request.agentId);
    if (!agent) return this.inner.connect(request);
    const clone = agent.clone();
    clone.threadId = request.threadId;
    if (request.headers && typeof clone.headers === "object") {
      clone.headers = { ...clone.headers, ...request.headers };
    }
    return clone.run({
      threadId: request.threadId,
      runId: globalThis.crypto.randomUUID(),
      messages: [],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
  }

  isRunning(request) {
    return this.inner.isRunning(request);
  }

  stop(request) {
    return this.inner.stop(request);
  }

  agentFor(agentId) {
    const agents = this.agents;
    const agent = typeof agents === "function" ? agents(agentId) : agents[agentId];
    return agent && typeof agent.clone === "function" && typeof agent.run === "function" ? agent : undefined;
  }
}
