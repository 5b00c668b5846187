package agentik

import "time"

// Observer receives what the engine does, for metrics and traces. The
// telemetry package implements it; the engine knows only this interface.
// Every method must be cheap and safe for concurrent use. Labels are
// bounded: agent ids, tool names, model names and outcomes, never
// conversation ids or principals.
type Observer interface {
	// TurnStarted: a turn of agent began running.
	TurnStarted(agent string)
	// TurnEnded: it ended with outcome (an EvEnd reason: completed,
	// interrupted, error, client_tools) after d.
	TurnEnded(agent, outcome string, d time.Duration)
	// FirstToken: the first streamed piece of the turn came d after its start.
	FirstToken(agent string, d time.Duration)
	// ModelCall: one model call ended with outcome ("ok" or an error code)
	// after d, using tok.
	ModelCall(agent, model, outcome string, d time.Duration, tok TurnTokens)
	// ToolCall: one tool call ended with outcome ("ok" or "error") after d.
	ToolCall(agent, tool, outcome string, d time.Duration)
	// Subscribers: the event streams of agent served to facade (FacadeFrom
	// the context the stream was asked with) grew by delta (+1 when one
	// opens, -1 when it ends).
	Subscribers(agent, facade string, delta int)
}

// NopObserver observes nothing; it is the engine's default.
type NopObserver struct{}

func (NopObserver) TurnStarted(string)                                          {}
func (NopObserver) TurnEnded(string, string, time.Duration)                     {}
func (NopObserver) FirstToken(string, time.Duration)                            {}
func (NopObserver) ModelCall(string, string, string, time.Duration, TurnTokens) {}
func (NopObserver) ToolCall(string, string, string, time.Duration)              {}
func (NopObserver) Subscribers(string, string, int)                             {}
