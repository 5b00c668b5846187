package agentik

import "context"

type principalKey struct{}

// WithPrincipal returns a context acting for principal p. The empty principal
// is the anonymous caller of an open (unauthenticated) server.
func WithPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx acts for ("" when none).
func PrincipalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

type conversationKey struct{}

// WithConversation returns a context carrying the conversation a turn runs
// for; the engine sets it on every tool call, so tool sources that keep state
// per conversation (a remote A2A context, say) can find it.
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// ConversationFrom returns the conversation id ctx carries ("" when none).
func ConversationFrom(ctx context.Context) string {
	id, _ := ctx.Value(conversationKey{}).(string)
	return id
}
