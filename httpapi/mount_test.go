package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// TestMountPrefixes: two agents on one mux at different prefixes, each with
// its own conversations, and the health probes once.
func TestMountPrefixes(t *testing.T) {
	one, two := newRealEnv(t, Options{}), newRealEnv(t, Options{})
	mux := http.NewServeMux()
	Mount(mux, "/agents/one", one.eng, Options{})
	Mount(mux, "/agents/two/", two.eng, Options{}) // a trailing slash is tolerated
	MountHealth(mux, one.store.Ping)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := testCtx(t)

	c1 := NewClient(srv.URL + "/agents/one")
	c2 := NewClient(srv.URL + "/agents/two/")
	info, err := c1.CreateConversation(ctx, agentik.CreateRequest{Title: "on one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Conversation(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Conversation(ctx, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("agent two sees agent one's conversation: %v", err)
	}
	if got, err := c2.FetchInfo(ctx); err != nil || got.ID != "test" {
		t.Fatalf("info of two: %+v, %v", got, err)
	}
	for _, path := range []string{"/health/ready", "/agents/one", "/agents/two/conversations"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(srv.URL + "/agents/three/conversations")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		// Outside every prefix the mux's own 404 answers.
		t.Fatalf("unmounted prefix: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
