package agentik

import "context"

// ctxKey is the context key of a value of type T. A key is a pointer, so
// that using it allocates nothing, to a struct with a name, so that no two
// keys are equal.
type ctxKey[T any] struct{ name string }

var (
	principalKey    = &ctxKey[string]{"principal"}
	conversationKey = &ctxKey[string]{"conversation"}
	stateKey        = &ctxKey[ConversationState]{"conversation state"}
	facadeKey       = &ctxKey[string]{"facade"}
)

func (k *ctxKey[T]) with(ctx context.Context, v T) context.Context {
	return context.WithValue(ctx, k, v)
}

// from returns the value ctx carries under k (the zero value when none).
func (k *ctxKey[T]) from(ctx context.Context) T {
	v, _ := ctx.Value(k).(T)
	return v
}

// WithPrincipal returns a context acting for principal p. The empty principal
// is the anonymous caller of an open (unauthenticated) server.
func WithPrincipal(ctx context.Context, p string) context.Context { return principalKey.with(ctx, p) }

// PrincipalFrom returns the principal ctx acts for ("" when none).
func PrincipalFrom(ctx context.Context) string { return principalKey.from(ctx) }

// WithConversation returns a context carrying the conversation a turn runs
// for; the engine sets it on every tool call, so tool sources that keep state
// per conversation (a remote A2A context, say) can find it.
func WithConversation(ctx context.Context, id string) context.Context {
	return conversationKey.with(ctx, id)
}

// ConversationFrom returns the conversation id ctx carries ("" when none).
func ConversationFrom(ctx context.Context) string { return conversationKey.from(ctx) }

// ConversationState is durable state kept with one conversation, by key,
// and deleted with it: what a tool remembers per conversation (a remote A2A
// agent's contextId), shared by every process that uses the store and kept
// across restarts. The engine puts the state of the turn's conversation in
// the context of each tool call (ConversationStateFrom). Keys are the
// tool's own namespace (Write.State gives their bounds). Safe for
// concurrent use.
type ConversationState interface {
	// State returns the value of key (nil when it is not set).
	State(ctx context.Context, key string) (RawJSON, error)
	// SetState sets key to value; nil removes it.
	SetState(ctx context.Context, key string, value RawJSON) error
}

// WithConversationState returns a context carrying s.
func WithConversationState(ctx context.Context, s ConversationState) context.Context {
	return stateKey.with(ctx, s)
}

// ConversationStateFrom returns the conversation state ctx carries (nil
// when none).
func ConversationStateFrom(ctx context.Context) ConversationState { return stateKey.from(ctx) }

// WithFacade returns ctx marked as a request of facade ("sse", "agui",
// "a2a", "ws", "mcp", "irc"): the engine labels the event streams asked
// with it (Observer.Subscribers). cmd/agentik marks the HTTP facades'
// requests; the IRC and MCP facades, whose core calls do not run on an
// HTTP request's context, mark their own.
func WithFacade(ctx context.Context, facade string) context.Context {
	return facadeKey.with(ctx, facade)
}

// FacadeFrom returns the facade of WithFacade, or "other".
func FacadeFrom(ctx context.Context) string {
	if f := facadeKey.from(ctx); f != "" {
		return f
	}
	return "other"
}

var sharerKey = &ctxKey[StateSharer]{"shared state"}

// WithSharedState returns a context carrying the shared state of the
// conversation a turn runs for (SPEC §19). The engine sets it on every tool
// call and context source call, so the update_state tool and the state's
// context source reach it.
func WithSharedState(ctx context.Context, s StateSharer) context.Context {
	return sharerKey.with(ctx, s)
}

// SharedStateFrom returns the shared state ctx carries (nil when none).
func SharedStateFrom(ctx context.Context) StateSharer { return sharerKey.from(ctx) }
