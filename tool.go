package agentik

import (
	"context"
	"time"
)

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Parameters  RawJSON `json:"parameters"`       // JSON Schema of the arguments object
	Source      string  `json:"source,omitempty"` // builtin, mcp:<server>, a2a:<agent>
}

// ToolResult is what a tool returns. A failure the model should see is a
// result with IsError set, not a Go error.
type ToolResult struct {
	Content []Content
	IsError bool
}

// ErrorResult returns a tool error result with the given text.
func ErrorResult(text string) ToolResult {
	return ToolResult{Content: []Content{Text(text)}, IsError: true}
}

// Tool is one callable tool. Call must return promptly when ctx ends. A Go
// error from Call is turned into an error result the model sees.
//
// Spec and Call must be safe for concurrent use: the engine runs the tool
// calls of one model response at the same time, each on a goroutine of its
// own, so one Tool may be in several Calls at once — twice in one round
// when the model asks for it twice, and in the turns of other
// conversations. ctx ends with the call's timeout or when its turn is
// interrupted; the engine waits for every Call of a round to return before
// the turn goes on, and keeps the result's Content (Call must not change
// it after returning).
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, args RawJSON) (ToolResult, error)
}

// ToolSource provides a set of tools that may change over time (MCP servers,
// remote A2A agents). Tools is called at the start of every model call.
type ToolSource interface {
	Tools(ctx context.Context) []Tool
}

// StartingToolSource is a ToolSource whose Tools waits, for a while after
// start-up, for tools still coming (MCP servers making their first
// connection). Starting reports whether that wait is still on: a model
// call made now without waiting could offer fewer tools than the turn's.
type StartingToolSource interface {
	ToolSource
	Starting() bool
}

// TimeoutTool is a Tool with its own call timeout (an MCP server's
// configured timeout, say). The engine uses it instead of its default
// when it is positive.
type TimeoutTool interface {
	Tool
	Timeout() time.Duration
}

// ContextSource adds text to the system context of every model call
// (SPEC §19: memory blocks, the conversation's shared state). The engine
// calls SystemContext before each model call of a turn, so the newest
// value is always seen, with a context that carries the turn's
// conversation (ConversationFrom) and its owner (PrincipalFrom); the texts
// of the sources that return one follow the system prompt, each after a
// blank line. An error fails the turn (store_error): a model call never
// goes out without the context it should have. SystemContext must be safe
// for concurrent use and cheap: it is on every model call's path.
type ContextSource interface {
	SystemContext(ctx context.Context) (string, error)
}
