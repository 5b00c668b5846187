// Package a2a is Agentik's A2A (Agent2Agent) protocol support, both ways.
//
// Server: a facade over any agentik.Agent that serves the agent card and one
// JSON-RPC endpoint speaking A2A 1.0 (SendMessage, SendStreamingMessage,
// GetTask, CancelTask, SubscribeToTask) and the 0.3 names of the same
// methods (message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe). A contextId is a conversation id, a task is one turn,
// cancel is an interrupt, and streaming maps the core's events to status and
// artifact updates ending with a final status. A turn whose tool calls wait
// for approval is input-required; a message on the same taskId answers them
// (approval.go). The facade keeps no state:
// tasks are read back from the conversation's journal, so they outlive the
// request and the process.
//
// Client: Source makes remote A2A agents tools of this agent. Each remote
// card becomes one tool; a call sends the model's request to the remote
// agent (streaming when it can) and keeps one remote contextId per local
// conversation, so follow-ups continue the remote conversation. A remote
// that is down or fails gives a tool error the model sees, never a failed
// turn.
//
// The wire layer is written here rather than taken from
// github.com/a2aproject/a2a-go: its server keeps tasks in its own task store
// and event queues (here a task is a turn already recorded in the journal),
// serves one protocol version per handler, and in the versions checked
// answers JSON-RPC with text/plain, reports bad params as parse errors and
// hangs a request when an executor ends without a final event. The tests use
// the official @a2a-js/sdk client to hold this implementation to the wire.
package a2a
