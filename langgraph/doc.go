// Package langgraph is the Agent Protocol / LangGraph API front door
// (SPEC §17): the endpoints LangGraph's clients call — the LangGraph SDKs,
// their React useStream hook, agent-chat-ui, Deep Agents' remote
// subagents — mapped onto Agentik's agents, conversations and turns.
//
// An agent is an assistant (assistant_id = graph_id = agent id), a
// conversation is a thread, a turn is a run (run_id = the id of the user
// message the turn answers). A thread's state is its head path in
// LangChain's message shape; its checkpoints are the turn boundaries of
// that path (docs/langgraph.md). The package speaks to agentik.Agent only;
// the process mounts it as one row of its front-door table.
package langgraph
