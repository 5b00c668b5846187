// The page a CopilotKit user writes: the provider pointed at the CopilotKit
// runtime (same origin), the stock chat, one frontend tool with a handler and
// one human-in-the-loop tool (no handler: the user answers in the chat).
// ?thread=<id> picks the threadId; ?coagent=1 adds a view of the agent's
// shared state through useCoAgent (SPEC §19). showDevConsole makes CopilotKit show every
// error it meets as a banner, which the driver looks for.
import React from "react";
import { createRoot } from "react-dom/client";
import { CopilotKit, useCoAgent, useCopilotAction, useHumanInTheLoop } from "@copilotkit/react-core";
import { CopilotChat } from "@copilotkit/react-ui";
import "@copilotkit/react-ui/styles.css";

const params = new URLSearchParams(location.search);
const threadId = params.get("thread") ?? undefined;
const coagent = params.get("coagent") === "1";

// CoAgentState shows the state the page shares with the agent: it starts
// as initialState, is sent with each run and follows the agent's changes.
function CoAgentState() {
  const { state } = useCoAgent({ name: "agentik", initialState: { count: 1 } });
  return <pre data-testid="coagent-state">{JSON.stringify(state)}</pre>;
}

function Tools() {
  useCopilotAction({
    name: "pick_color",
    description: "Ask the user's browser for a color",
    parameters: [{ name: "hint", type: "string", description: "what kind of color" }],
    handler: async ({ hint }) => (hint === "warm" ? "red" : "blue"),
  });
  useHumanInTheLoop({
    name: "confirm_order",
    description: "Ask the user to confirm an order",
    parameters: [{ name: "item", type: "string", description: "what to order" }],
    render: ({ args, status, respond, result }) => (
      <div className="confirm" data-status={status}>
        <span>Order {args.item}?</span>
        {status === "executing" && respond ? (
          <>
            <button data-testid="approve" onClick={() => respond("approved")}>Approve</button>
            <button data-testid="reject" onClick={() => respond("rejected")}>Reject</button>
          </>
        ) : (
          <span data-testid="answered">{String(result ?? "")}</span>
        )}
      </div>
    ),
  });
  return null;
}

function App() {
  return (
    <CopilotKit
      runtimeUrl="/api/copilotkit"
      agent="agentik"
      threadId={threadId}
      showDevConsole={true}
    >
      <Tools />
      {coagent ? <CoAgentState /> : null}
      <CopilotChat className="chat" labels={{ initial: "" }} />
    </CopilotKit>
  );
}

createRoot(document.getElementById("root")).render(<App />);
