package agentik

import (
	"context"
	"errors"
)

// ModelMessage is one message of the context sent to the model.
//
//	user        Content (text and images)
//	assistant   Content (text), Reasoning, ToolCalls
//	tool        CallID, Name, Content (the result), IsError
//	summary     Content (text of a compaction summary)
type ModelMessage struct {
	Role      string     `json:"role"`
	Content   []Content  `json:"content,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	CallID    string     `json:"call_id,omitempty"`
	Name      string     `json:"name,omitempty"`
	IsError   bool       `json:"is_error,omitempty"`
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Arguments RawJSON `json:"arguments"` // a JSON object
}

// ModelRequest is one model call.
type ModelRequest struct {
	System   string
	Messages []ModelMessage
	Tools    []ToolSpec
	// Params are the sampling parameters of the turn (nil: the model's
	// own settings decide).
	Params *ModelParams
}

// ModelParams are per-turn sampling parameters a client asks for (the
// OpenAI-compatible door's temperature, top_p, seed and token limit). Each
// nil field leaves the model's setting as configured. A user message
// keeps them (SendRequest.Params), so its turn uses them whichever process
// runs it, and after a restart.
type ModelParams struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	// MaxTokens bounds the tokens of each model call's answer.
	MaxTokens *int64 `json:"max_tokens,omitempty"`
}

// Empty reports whether p sets nothing.
func (p *ModelParams) Empty() bool {
	return p == nil || (p.Temperature == nil && p.TopP == nil && p.Seed == nil && p.MaxTokens == nil)
}

// Delta kinds.
const (
	DeltaReasoning = "reasoning"
	DeltaText      = "text"
)

// ModelDelta is one streamed piece of a response.
type ModelDelta struct {
	Kind string
	Text string
}

// ModelResponse is a complete model answer.
type ModelResponse struct {
	Text         string
	Reasoning    string
	ToolCalls    []ToolCall
	Tokens       TurnTokens
	FinishReason string
	// ID and Model are the response's id and the model that answered, as
	// the provider reported them ("" when it did not): for traces.
	ID    string
	Model string
}

// ModelInfo describes the model behind an LLM.
type ModelInfo struct {
	Name          string
	ContextTokens int
	ImageInput    bool
}

// LLM is a streaming chat model. Generate calls onDelta for each streamed
// piece in order (from the calling goroutine) and returns the complete
// response. A response counts only if the model finished it: a stream cut
// short is an error. Transient failures (429, 5xx, connection errors) before
// the first delta are retried inside Generate. Errors wrap ErrContextOverflow
// when the context was too long, and ctx.Err() when ctx ended. Safe for
// concurrent use.
type LLM interface {
	Info() ModelInfo
	Generate(ctx context.Context, req ModelRequest, onDelta func(ModelDelta)) (ModelResponse, error)
}

// An EarlyStarter is an LLM that can send a model call before the turn
// makes it: the engine starts the call that will answer a message while
// the message commits, so the request travels during the commit instead of
// after it. Nothing of the call is seen until the turn takes it over.
type EarlyStarter interface {
	// StartEarly sends req. It returns nil when it cannot (the request
	// cannot be built); the call ends with ctx. It keeps nothing of req
	// once it returns (the engine reuses req.Messages).
	StartEarly(ctx context.Context, req ModelRequest) EarlyCall
}

// EarlyCall is a call sent by StartEarly.
type EarlyCall interface {
	// Generate is the LLM's Generate. When req is the request sent early,
	// it takes the early call over (its response may already be waiting);
	// otherwise it drops the early call and calls anew.
	Generate(ctx context.Context, req ModelRequest, onDelta func(ModelDelta)) (ModelResponse, error)
	// Cancel drops the call unless Generate took it; idempotent.
	Cancel()
}

// ErrContextOverflow marks an LLM error caused by a context too long for the model.
var ErrContextOverflow = errors.New("context length exceeded")
