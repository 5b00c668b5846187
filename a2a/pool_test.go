package a2a

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestSourceReusesConnections: concurrent calls to one remote agent through
// a Source with the default client reuse their connections from one round
// of calls to the next. net/http's default transport keeps two idle
// connections per host, so each round after the first would dial most of
// its calls anew.
func TestSourceReusesConnections(t *testing.T) {
	remote := newEnv(t, envOpts{})
	remote.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	var dialled atomic.Int64
	counting := httptest.NewUnstartedServer(remote.srv.Config.Handler)
	counting.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	counting.Start()
	defer counting.Close()
	src := NewSource(t.Context(), SourceOptions{Agents: []Remote{{URL: counting.URL}}})
	defer src.Close()
	tools := src.Tools(t.Context())
	if len(tools) != 1 {
		t.Fatalf("%d tools", len(tools))
	}
	const parallel, rounds = 10, 3
	for range rounds {
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				res, err := tools[0].Call(t.Context(), agentik.RawJSON(`{"message":"hi"}`))
				if err != nil || res.IsError || agentik.JoinText(res.Content) != "ok" {
					t.Errorf("call: %+v %v", res, err)
				}
			})
		}
		wg.Wait()
	}
	// The card's fetch and the first round's calls may each dial; no round
	// after that should: each call read its stream to the end, so its
	// connection was back in the pool when it returned.
	if n := dialled.Load(); n > parallel+1 {
		t.Fatalf("%d connections for %d rounds of %d concurrent calls, want at most %d", n, rounds, parallel, parallel+1)
	}
}

// TestStreamThatLingersAfterItsFinalEvent: a server that keeps the stream
// open after the final event does not hold the call: what follows it is
// read for a bounded time only, then the stream is closed.
func TestStreamThatLingersAfterItsFinalEvent(t *testing.T) {
	remote := newEnv(t, envOpts{})
	remote.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	done := make(chan struct{})
	var lingered atomic.Int64
	lingering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote.srv.Config.Handler.ServeHTTP(w, r)
		if r.Method == http.MethodPost && r.Header.Get("Accept") == "text/event-stream" {
			lingered.Add(1)
			w.(http.Flusher).Flush()
			select { // the stream stays open until the client goes or the test ends
			case <-r.Context().Done():
			case <-done:
			}
		}
	}))
	defer lingering.Close()
	defer close(done)
	src := NewSource(t.Context(), SourceOptions{Agents: []Remote{{URL: lingering.URL}}})
	defer src.Close()
	tools := src.Tools(t.Context())
	if len(tools) != 1 {
		t.Fatalf("%d tools", len(tools))
	}
	res, err := tools[0].Call(t.Context(), agentik.RawJSON(`{"message":"hi"}`))
	if err != nil || res.IsError || agentik.JoinText(res.Content) != "ok" {
		t.Fatalf("call: %+v %v", res, err)
	}
	if lingered.Load() != 1 {
		t.Fatalf("%d streams lingered, want the call's one", lingered.Load())
	}
}
