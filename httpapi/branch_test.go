package httpapi

import (
	"net/http"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/branchtest"
)

// TestRealBranching runs the branching scenario (SPEC §18) through this
// API's client on the real stack over SQLite.
func TestRealBranching(t *testing.T) {
	e := newRealEnv(t, Options{})
	branchtest.Run(t, e.client, e.llm)
}

// TestRealBranchingWhileBusy: a regenerate while a turn runs follows its
// if_busy; a head move waits for the turn (SPEC §18), over SQLite.
func TestRealBranchingWhileBusy(t *testing.T) {
	e := newRealEnv(t, Options{})
	branchtest.RunBusy(t, e.client, e.llm)
}

// TestRealBranchingOtherPrincipal: another principal's fork, regenerate and
// head move of a conversation are 404, and make nothing.
func TestRealBranchingOtherPrincipal(t *testing.T) {
	gate := edge.New(edge.Options{Tokens: tokenNames{"alice", "bob"}})
	e := newRealEnv(t, Options{Guard: func(h http.Handler, access edge.Access) http.Handler {
		return gate.Guard(h, edge.Route{Access: access})
	}})
	ctx := testCtx(t)
	alice := NewClient(e.base, WithToken("alice"))
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{Title: "private"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/fork", `{}`},
		{"POST", "/regenerate", `{}`},
		{"PUT", "/head", `{"seq":1}`},
		{"POST", "/messages", `{"content":[{"type":"text","text":"x"}],"parent":0}`},
	} {
		status, body := e.raw(r.method, "/agentik/conversations/"+info.ID+r.path, "application/json", r.body, "Authorization", "Bearer bob")
		if status != http.StatusNotFound || errorCode(t, body) != agentik.ENotFound {
			t.Fatalf("bob %s %s: %d %s", r.method, r.path, status, body)
		}
	}
	bob := NewClient(e.base, WithToken("bob"))
	if list, err := bob.ListConversations(ctx, agentik.ListRequest{}); err != nil || len(list.Conversations) != 0 {
		t.Fatalf("bob's conversations after the refused fork: %+v, %v", list, err)
	}
	if list, err := alice.ListConversations(ctx, agentik.ListRequest{}); err != nil || len(list.Conversations) != 1 {
		t.Fatalf("alice's conversations: %+v, %v", list, err)
	}
}
