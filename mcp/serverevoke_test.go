package mcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// revocableTokens is an edge.Tokens whose tokens the test revokes, as a
// reload that removes them would.
type revocableTokens struct {
	mu      sync.Mutex
	tokens  map[string]string // token → principal
	watches map[*tokenWatch]bool
	changed chan struct{} // a watch was added or released
}

type tokenWatch struct {
	token, principal string
	revoked          func()
}

var _ edge.Tokens = (*revocableTokens)(nil)

func newRevocableTokens(tokens map[string]string) *revocableTokens {
	return &revocableTokens{tokens: tokens, watches: map[*tokenWatch]bool{}, changed: make(chan struct{}, 1)}
}

func (t *revocableTokens) Lookup(token string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.tokens[token]
	return p, ok
}

func (t *revocableTokens) Allows(string, string) bool { return true }

func (t *revocableTokens) Watch(token, principal, _ string, revoked func()) func() bool {
	w := &tokenWatch{token, principal, revoked}
	t.mu.Lock()
	valid := t.tokens[token] == principal
	if valid {
		t.watches[w] = true
	}
	t.mu.Unlock()
	if !valid {
		revoked()
		return func() bool { return false }
	}
	t.notify()
	return func() bool {
		t.mu.Lock()
		held := t.watches[w]
		delete(t.watches, w)
		t.mu.Unlock()
		t.notify()
		return held
	}
}

// revoke removes token and calls the revoked funcs of its watches.
func (t *revocableTokens) revoke(token string) {
	var gone []*tokenWatch
	t.mu.Lock()
	delete(t.tokens, token)
	for w := range t.watches {
		if w.token == token {
			gone = append(gone, w)
			delete(t.watches, w)
		}
	}
	t.mu.Unlock()
	t.notify()
	for _, w := range gone {
		w.revoked()
	}
}

func (t *revocableTokens) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// waitWatching waits until token is watched n times.
func (t *revocableTokens) waitWatching(tb testing.TB, token string, n int) {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for {
		t.mu.Lock()
		got := 0
		for w := range t.watches {
			if w.token == token {
				got++
			}
		}
		t.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-t.changed:
		case <-deadline:
			tb.Fatalf("%s is watched %d times, want %d", token, got, n)
		}
	}
}

// behindEdge puts e's handler behind a real edge that authenticates with
// tokens, on a listener of its own, and points e at it.
func behindEdge(t *testing.T, e *serveEnv, tokens edge.Tokens) {
	ed := edge.New(edge.Options{Tokens: tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(ed.Guard(e.h, edge.Route{Access: edge.Private, Agent: "helper"}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	e.url = srv.URL
}

// dialRevision opens a session at the previous revision with token and no
// standalone stream (the test opens its own); prog, when not nil, collects
// its progress notifications.
func (e *serveEnv) dialRevision(t *testing.T, token string, prog *progressLog) *sdk.ClientSession {
	t.Helper()
	co := &sdk.ClientOptions{}
	if prog != nil {
		withProgress(prog)(co)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "go-test-client", Version: "1.0"}, co)
	tr := &sdk.StreamableClientTransport{Endpoint: e.url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
		MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := client.Connect(serveCtx(t), tr, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolPrevious})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if cs.ID() == "" {
		t.Fatal("the previous revision opened no session")
	}
	return cs
}

// sessionRequest sends a request of session id with token: a GET (the
// session's stream) or a POST of body.
func (e *serveEnv) sessionRequest(ctx context.Context, t *testing.T, token, id, method, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", ProtocolPrevious)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestServeRevokedCredentialClosesItsSessions: a session of the previous
// revisions ends when the credential of the request that opened it is
// revoked, whatever credential its later requests carry: its running call
// ends (and interrupts its turn, as a cancelled call does), its stream
// ends, and its id is unknown from then on. Another principal's session
// goes on, and a session closed by its client releases its watch.
func TestServeRevokedCredentialClosesItsSessions(t *testing.T) {
	e := newServeEnv(t)
	tokens := newRevocableTokens(map[string]string{"tok-alice": "alice", "tok-alice-2": "alice", "tok-bob": "bob"})
	behindEdge(t, e, tokens)
	ctx := serveCtx(t)

	bob := e.dialRevision(t, "tok-bob", nil)
	prog := newProgressLog()
	alice := e.dialRevision(t, "tok-alice", prog)
	sid := alice.ID()

	// Alice's session stream, opened with her other token, which stays.
	sctx, cancelStream := context.WithCancel(ctx)
	defer cancelStream()
	stream := e.sessionRequest(sctx, t, "tok-alice-2", sid, http.MethodGet, "")
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET of the session: %d", stream.StatusCode)
	}
	streamEnded := make(chan time.Time, 1)
	go func() {
		io.Copy(io.Discard, stream.Body)
		streamEnded <- time.Now()
	}()

	// A call of the session that runs: the model is held.
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(llmtest.Stream().Role().Content("partial ").Pause(gate).Content("never").Finish("stop").Done())
	type callEnd struct {
		at  time.Time
		res *sdk.CallToolResult
		err error
	}
	called := make(chan callEnd, 1)
	go func() {
		res, err := alice.CallTool(ctx, withToken(&sdk.CallToolParams{Name: ToolAsk, Arguments: map[string]any{"message": "long", "new_conversation": true}}, "p-1"))
		called <- callEnd{time.Now(), res, err}
	}()
	<-gate.Reached()
	prog.waitFor(t, "partial ")
	conv := e.onlyWorking(t, "alice")
	events := e.events(t, "alice", conv)

	revokedAt := time.Now()
	tokens.revoke("tok-alice")

	deadline := time.After(10 * time.Second)
	select {
	case end := <-called:
		// The call's own request is cut by the edge, or its error result
		// comes first.
		if end.err == nil && !end.res.IsError {
			t.Errorf("the running call of the revoked session answered %q", resultText(end.res))
		}
		t.Logf("running call ended %v after the revocation", end.at.Sub(revokedAt))
	case <-deadline:
		t.Fatal("the running call of the revoked session goes on")
	}
	select {
	case at := <-streamEnded:
		t.Logf("session stream ended %v after the revocation", at.Sub(revokedAt))
	case <-deadline:
		t.Fatal("the stream of the revoked session goes on")
	}
	e.waitEnd(t, events, agentik.EndInterrupted)
	resp := e.sessionRequest(ctx, t, "tok-alice-2", sid, http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the revoked session's id with another token: %d %s, want 404", resp.StatusCode, b)
	}

	// Bob's session goes on.
	e.llm.Enqueue(llmtest.Text("bob's answer"))
	res, _ := ask(t, ctx, bob, map[string]any{"message": "still there?"}, nil)
	if res.IsError || resultText(res) != "bob's answer" {
		t.Fatalf("bob's ask after alice's revocation: %q", resultText(res))
	}
	// Closing it (DELETE) releases its watch.
	tokens.waitWatching(t, "tok-bob", 1)
	if err := bob.Close(); err != nil {
		t.Fatal(err)
	}
	tokens.waitWatching(t, "tok-bob", 0)
}
