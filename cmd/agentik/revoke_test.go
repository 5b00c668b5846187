package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/ws"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rvStream is a streamed HTTP answer (SSE) read line by line on its own
// goroutine: lines carries its non-empty lines and is closed when the
// answer ends, after end is set.
type rvStream struct {
	name  string
	lines chan string
	end   time.Time
}

// rvOpen sends req, which must be answered 200, and reads its answer.
func rvOpen(t *testing.T, name string, req *http.Request) *rvStream {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
	}
	s := &rvStream{name: name, lines: make(chan string, 256)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if sc.Text() == "" {
				continue
			}
			select {
			case s.lines <- sc.Text():
			case <-req.Context().Done():
			}
		}
		s.end = time.Now()
		close(s.lines)
	}()
	return s
}

// until reads s until a line containing want; false when s ends first.
func (s *rvStream) until(t *testing.T, want string) bool {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return false
			}
			if strings.Contains(l, want) {
				return true
			}
		case <-deadline:
			t.Fatalf("%s: no line with %q", s.name, want)
		}
	}
}

// ended waits until s ends or deadline passes, and says when it ended.
func (s *rvStream) ended(deadline time.Time) (time.Time, bool) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				return s.end, true
			}
		case <-timer.C:
			return time.Time{}, !s.open()
		}
	}
}

// open reports whether s has not ended, reading what it has sent so far.
func (s *rvStream) open() bool {
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				return false
			}
		default:
			return true
		}
	}
}

func rvRequest(ctx context.Context, method, url, token, body string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// rvMCP opens an MCP session at the previous revision without the SDK's
// own stream, and opens that stream (GET) itself, to see it end.
func rvMCP(t *testing.T, ctx context.Context, endpoint, token string) (*sdk.ClientSession, *rvStream) {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "agentik-test", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tokenTransport{token}},
		MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	req := rvRequest(ctx, http.MethodGet, endpoint, token, "")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return cs, rvOpen(t, "MCP session stream of "+token, req)
}

// rvAGUI starts an AG-UI run of a new thread and reads its stream.
func rvAGUI(t *testing.T, ctx context.Context, url, token, text string) *rvStream {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"threadId": agentik.NewID(), "runId": "r1", "tools": []any{}, "context": []any{},
		"state": map[string]any{}, "forwardedProps": map[string]any{},
		"messages": []any{map[string]any{"id": "u1", "role": "user", "content": text}}})
	req := rvRequest(ctx, http.MethodPost, url+"/agui", token, string(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return rvOpen(t, "AG-UI run of "+token, req)
}

// rvEvents opens the event stream of a conversation.
func rvEvents(t *testing.T, ctx context.Context, url, token, conv string) *rvStream {
	t.Helper()
	req := rvRequest(ctx, http.MethodGet, url+"/agentik/conversations/"+conv+"/events", token, "")
	req.Header.Set("Accept", "text/event-stream")
	return rvOpen(t, "event stream of "+token, req)
}

// TestRevokedTokenEndsOpenConnections: a token taken away by a reload of
// the tokens file (SIGHUP) ends every connection it opened: a
// conversation's event stream, a WebSocket (ERROR unauthorized first), an
// MCP session (its stream ends and its id is unknown, even to the
// principal's new token) and an AG-UI run's stream. Nothing sent on the
// WebSocket afterwards is stored. Another principal's connections of the
// same kinds go on and work.
func TestRevokedTokenEndsOpenConnections(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice:tok-alice-1\nbob:tok-bob-22\n")
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS_FILE="+file)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	endpoint := p.url + "/mcp"

	type user struct {
		token  string
		api    *httpapi.Client
		conv   string
		events *rvStream
		ws     *ws.Conn
		mcp    *sdk.ClientSession
		get    *rvStream
		agui   *rvStream
		gate   *llmtest.Gate
	}
	open := func(token string) *user {
		u := &user{token: token, api: httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(token))}
		info, err := u.api.CreateConversation(ctx, agentik.CreateRequest{Title: token})
		if err != nil {
			t.Fatal(err)
		}
		u.conv = info.ID
		u.events = rvEvents(t, ctx, p.url, token, u.conv)
		if u.ws, err = ws.Dial(ctx, wsURL(p), &ws.DialOptions{Token: token, ConversationID: u.conv}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { u.ws.Close() })
		u.mcp, u.get = rvMCP(t, ctx, endpoint, token)
		// An AG-UI run whose model answer is held: its stream stays open.
		u.gate = llmtest.NewGate()
		t.Cleanup(u.gate.Release)
		llm.Enqueue(llmtest.Stream().Role().Content("partial ").Pause(u.gate).Content("rest").Finish("stop").Done())
		u.agui = rvAGUI(t, ctx, p.url, token, "hold on")
		<-u.gate.Reached()
		return u
	}
	alice := open("tok-alice-1")
	bob := open("tok-bob-22")

	write("alice:tok-alice-2\nbob:tok-bob-22\n") // alice's token replaced
	sighup := time.Now()
	p.cmd.Process.Signal(syscall.SIGHUP)

	// Generous bounds for a loaded machine: they fail the test, they wait
	// for nothing.
	deadline := sighup.Add(10 * time.Second)
	for _, s := range []*rvStream{alice.events, alice.get, alice.agui} {
		if at, ok := s.ended(deadline); ok {
			t.Logf("%s ended %v after SIGHUP", s.name, at.Sub(sighup).Round(time.Millisecond))
		} else {
			t.Errorf("%s goes on after the revocation", s.name)
		}
	}
	var last ws.ServerMessage
	var refused, closed bool
	wsDeadline := time.NewTimer(time.Until(deadline))
	defer wsDeadline.Stop()
wsLoop:
	for {
		select {
		case m, ok := <-alice.ws.Messages():
			if !ok {
				closed = true
				t.Logf("alice's WebSocket closed %v after SIGHUP", time.Since(sighup).Round(time.Millisecond))
				break wsLoop
			}
			last = m
			if e, ok := m.(*ws.Error); ok && e.Code == agentik.EUnauthorized && !refused {
				refused = true
				// Sent once the server has refused the connection, maybe
				// before it is closed: the server must not take it.
				alice.ws.Send(ctx, "after the revocation")
			}
		case <-wsDeadline.C:
			t.Error("alice's WebSocket goes on after the revocation")
			break wsLoop
		}
	}
	if closed && !refused {
		t.Errorf("alice's WebSocket closed without ERROR unauthorized; last message %#v (%v)", last, alice.ws.Err())
	}
	// And once more, on a connection closed, or one left open by mistake.
	alice.ws.Send(ctx, "after the revocation")

	// The old token is refused; the new one does not reach the old MCP
	// session, whose id is unknown now.
	resp, err := http.DefaultClient.Do(rvRequest(ctx, http.MethodGet, p.url+"/agentik/conversations", "tok-alice-1", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old token after SIGHUP: %d", resp.StatusCode)
	}
	req := rvRequest(ctx, http.MethodPost, endpoint, "tok-alice-2", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.mcp.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("alice's MCP session with her new token after SIGHUP: %d %.200s, want 404", resp.StatusCode, b)
	} else {
		t.Logf("alice's MCP session id unknown %v after SIGHUP (when asked)", time.Since(sighup).Round(time.Millisecond))
	}

	// Bob's connections go on: his AG-UI run finishes on its stream, a
	// message he sends on his WebSocket is answered there and seen on his
	// event stream, and his MCP session answers.
	for _, s := range []*rvStream{bob.events, bob.get, bob.agui} {
		if !s.open() {
			t.Fatalf("%s ended after alice's revocation", s.name)
		}
	}
	bob.gate.Release()
	if !bob.agui.until(t, "RUN_FINISHED") {
		t.Fatal("bob's AG-UI run ended without RUN_FINISHED")
	}
	llm.Enqueue(llmtest.Text("bob's answer"))
	if err := bob.ws.Send(ctx, "still there?"); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	answered := time.After(20 * time.Second)
bobLoop:
	for {
		select {
		case m, ok := <-bob.ws.Messages():
			if !ok {
				break bobLoop
			}
			if tc, ok := m.(*ws.TextChunk); ok {
				text.WriteString(tc.Text)
			}
			if _, ok := m.(*ws.End); ok {
				break bobLoop
			}
		case <-answered:
			t.Fatal("bob's WebSocket message is not answered")
		}
	}
	if text.String() != "bob's answer" {
		t.Fatalf("bob's WebSocket answer %q (%v)", text.String(), bob.ws.Err())
	}
	for _, ev := range []string{"event: " + agentik.EvUserMessage, "event: " + agentik.EvAssistantMessage, "event: " + agentik.EvEnd} {
		if !bob.events.until(t, ev) {
			t.Fatalf("bob's event stream ended before %q", ev)
		}
	}
	if _, err := bob.mcp.ListTools(ctx, nil); err != nil {
		t.Fatalf("bob's MCP session: %v", err)
	}
	if !bob.get.open() {
		t.Fatal("bob's MCP session stream ended")
	}

	// Nothing alice sent on the closed WebSocket was stored.
	ac := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken("tok-alice-2"))
	conv, err := ac.Conversation(ctx, alice.conv)
	if err != nil {
		t.Fatal(err)
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 0 {
		t.Fatalf("alice's conversation holds %d messages after the revocation", len(page.Messages))
	}
}
