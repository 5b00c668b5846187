package httpapi

import (
	"net/http"
	"slices"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// tokenNames is an edge.Tokens whose tokens are the principals' names.
type tokenNames []string

func (n tokenNames) Lookup(token string) (string, bool) { return token, slices.Contains(n, token) }
func (tokenNames) Allows(string, string) bool           { return true }
func (tokenNames) Watch(string, string, string, func()) func() bool {
	return func() bool { return true }
}

// TestRealAuthenticateSeam: the principal the edge puts in the context is
// the one the core acts for, so conversations are private to it; a refusal
// is 401.
func TestRealAuthenticateSeam(t *testing.T) {
	gate := edge.New(edge.Options{Tokens: tokenNames{"alice", "bob"}})
	e := newRealEnv(t, Options{Guard: func(h http.Handler, access edge.Access) http.Handler {
		return gate.Guard(h, edge.Route{Access: access})
	}})
	ctx := testCtx(t)
	alice := NewClient(e.base, WithToken("alice"))
	bob := NewClient(e.base, WithToken("bob"))

	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{Title: "private"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Conversation(ctx, info.ID); err != nil {
		t.Fatalf("owner: %v", err)
	}
	if _, err := bob.Conversation(ctx, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("other principal: %v", err)
	}
	if err := bob.DeleteConversation(ctx, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("other principal deletes: %v", err)
	}
	if list, err := bob.ListConversations(ctx, agentik.ListRequest{}); err != nil || len(list.Conversations) != 0 {
		t.Fatalf("other principal lists: %+v, %v", list, err)
	}
	status, body := e.raw("GET", "/agentik/conversations/"+info.ID+"/events", "", "", "Authorization", "Bearer bob")
	if status != http.StatusNotFound || errorCode(t, body) != agentik.ENotFound {
		t.Fatalf("other principal subscribes: %d %s", status, body)
	}

	for _, tok := range []string{"", "Bearer mallory"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/conversations", nil)
		if tok != "" {
			req.Header.Set("Authorization", tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("token %q: %d %v", tok, resp.StatusCode, resp.Header)
		}
	}
	if _, err := NewClient(e.base).ListConversations(ctx, agentik.ListRequest{}); agentik.ErrorCode(err) != agentik.EUnauthorized {
		t.Fatalf("client without token: %v", err)
	}
	if status, _ := e.raw("GET", "/health", "", ""); status != http.StatusOK {
		t.Fatalf("health needs no token: %d", status)
	}
}
