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
