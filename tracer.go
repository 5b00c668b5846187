package agentik

import "context"

// Tracer opens the spans of what an agent's engine does: one per run of a
// turn, one per model call inside it, one per tool call. The telemetry
// package implements it with OpenTelemetry after the GenAI semantic
// conventions; the engine knows only this interface. A nil Tracer is no
// tracing: the engine then calls nothing and allocates nothing for it.
// Implementations are safe for concurrent use; every method must be cheap
// and must not block (spans are exported in the background).
type Tracer interface {
	// TraceParent returns the W3C traceparent of the span context in ctx
	// ("" when there is none). The engine stores it with the user message
	// a request sends, so that the message's turn — run now, after the
	// turns queued before it, by another process or after a restart — is
	// tied to the request's trace.
	TraceParent(ctx context.Context) string
	// StartTurn opens the span of one run of a turn. The returned context
	// carries it: the run's model and tool calls are its children, and
	// outgoing requests made with it carry it on.
	StartTurn(ctx context.Context, t TurnTrace) (context.Context, Span)
	// StartModelCall opens the span of one model call.
	StartModelCall(ctx context.Context, m ModelTrace) (context.Context, Span)
	// StartToolCall opens the span of one tool call.
	StartToolCall(ctx context.Context, t ToolTrace) (context.Context, Span)
}

// TurnTrace describes a run of a turn to Tracer.StartTurn.
type TurnTrace struct {
	ConversationID string
	ReplyTo        string // the user message the turn answers
	// TraceParent is the one stored with the user message ("" for none).
	TraceParent string
	// Linked: the run does not start on its request — it waited behind
	// other turns, continues a turn (tool results, approvals), was left by
	// a restart or sent to another process. It then starts a trace of its
	// own, linked to TraceParent, rather than a child span of it.
	Linked bool
}

// ModelTrace describes a model call to Tracer.StartModelCall.
type ModelTrace struct {
	ConversationID string
	Model          string        // the model asked for
	Request        *ModelRequest // what is sent; a tracer may record it (content capture)
}

// ToolTrace describes a tool call to Tracer.StartToolCall.
type ToolTrace struct {
	ConversationID string
	Call           ToolCall
	Description    string
	Source         string // ToolSpec.Source: "builtin", "client", an MCP server, …; "" when the tool is unknown
}

// Span is an open span. End closes it once; it must not be called twice.
type Span interface {
	End(SpanEnd)
}

// SpanEnd is how a span ended. ErrorType is empty when the operation
// succeeded, else a short, bounded code (an error code of this package,
// "tool_error", …) recorded as error.type with an error status; Detail is
// the status message then. The other fields apply to one kind of span.
type SpanEnd struct {
	ErrorType string
	Detail    string
	// Turn runs: the outcome (an EvEnd reason, approval_pending, lease_lost)
	// and the tokens of the run.
	Outcome string
	Tokens  TurnTokens
	// Model calls: the response (nil when the call failed).
	Response *ModelResponse
	// Tool calls: the result.
	Result *ToolResult
}
