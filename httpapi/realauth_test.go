package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// TestRealAuthenticateSeam: the principal Authenticate returns is the one
// the core acts for, so conversations are private to it; a refusal is 401.
func TestRealAuthenticateSeam(t *testing.T) {
	auth := func(r *http.Request) (string, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || (tok != "alice" && tok != "bob") {
			return "", errors.New("unknown token") // not an *agentik.Error: still 401
		}
		return tok, nil
	}
	e := newRealEnv(t, Options{Authenticate: auth})
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
