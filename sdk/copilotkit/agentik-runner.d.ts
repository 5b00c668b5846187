// Types of agentik-runner.mjs (structural, so that no CopilotKit or AG-UI
// version is imported): pass it as CopilotRuntime's `runner`.

/** The part of an @ag-ui/client HttpAgent the runner uses. */
export interface AgentikAgent {
  clone(): AgentikAgent;
  run(input: unknown): unknown;
  threadId?: string;
  headers?: Record<string, string>;
}

/** The part of a CopilotKit AgentRunner (e.g. InMemoryAgentRunner) it wraps. */
export interface InnerRunner {
  run(request: { threadId: string; agent: unknown; input: unknown }): any;
  connect(request: { threadId: string; agentId?: string; headers?: Record<string, string> }): any;
  isRunning(request: { threadId: string }): Promise<boolean>;
  stop(request: { threadId: string; runId?: string }): Promise<boolean | undefined>;
}

export declare class AgentikRunner {
  constructor(options: {
    agents: Record<string, AgentikAgent> | ((agentId: string) => AgentikAgent | undefined);
    inner: InnerRunner;
  });
  run(request: { threadId: string; agent: unknown; input: unknown }): any;
  connect(request: { threadId: string; agentId?: string; headers?: Record<string, string> }): any;
  isRunning(request: { threadId: string }): Promise<boolean>;
  stop(request: { threadId: string; runId?: string }): Promise<boolean | undefined>;
}
