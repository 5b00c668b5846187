package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/coder/websocket"
)

// TestPerPrincipalLimitsThroughTheBinary: the per-principal limits set in
// the binary's environment refuse one principal with 429 and Retry-After
// (WebSocket: ERROR rate_limited) and leave the other principal alone.
func TestPerPrincipalLimitsThroughTheBinary(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("slow ").Pause(gate).Content("answer").Finish("stop").Done(), llmtest.Text("for bob"))
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken+",bob:"+bobToken,
		"AGENTIK_CONVERSATIONS_PER_MINUTE=2", "AGENTIK_MESSAGES_PER_MINUTE=1", "AGENTIK_MAX_CONCURRENT_TURNS=1", "AGENTIK_WS_MAX_CONNECTIONS=1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(token, method, path, body string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, p.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	limited := func(what string, status int, body string, h http.Header) {
		t.Helper()
		secs, err := strconv.Atoi(h.Get("Retry-After"))
		if status != http.StatusTooManyRequests || !strings.Contains(body, `"rate_limited"`) || err != nil || secs < 1 || secs > 60 {
			t.Fatalf("%s: %d %s Retry-After %q, want 429 rate_limited with Retry-After", what, status, body, h.Get("Retry-After"))
		}
	}
	create := func(token string) (int, string, http.Header) {
		return call(token, "POST", "/agentik/conversations", `{}`)
	}
	id := func(body string) string {
		var info agentik.ConversationInfo
		json.Unmarshal([]byte(body), &info)
		return info.ID
	}
	send := func(token, conv string) (int, string, http.Header) {
		return call(token, "POST", "/agentik/conversations/"+conv+"/messages", `{"content":[{"type":"text","text":"hi"}]}`)
	}

	// Conversations created per minute: 2 for alice, then 429; bob has his own.
	_, first, _ := create(aliceToken)
	_, second, _ := create(aliceToken)
	a, b := id(first), id(second)
	if a == "" || b == "" {
		t.Fatalf("creates: %s %s", first, second)
	}
	st, body, h := create(aliceToken)
	limited("third conversation in a minute", st, body, h)
	st, bobConv, _ := create(bobToken)
	if st != http.StatusCreated {
		t.Fatalf("bob's create: %d %s", st, bobConv)
	}

	// Concurrent turns: alice's turn in a runs (held at the gate), so a
	// message to b would start a second one.
	if st, body, _ := send(aliceToken, a); st != http.StatusAccepted {
		t.Fatalf("first message: %d %s", st, body)
	}
	st, body, h = send(aliceToken, b)
	limited("a second concurrent turn", st, body, h)
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	conv, err := alice.Conversation(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	events, err := conv.Events(ctx, 0) // before the turn can end
	if err != nil {
		t.Fatal(err)
	}
	gate.Release()
	for ev := range events.C() {
		if ev.Type == agentik.EvEnd {
			break
		}
	}
	events.Close()

	// Messages per minute: alice's one is spent.
	st, body, h = send(aliceToken, b)
	limited("a second message in a minute", st, body, h)

	// WebSocket: one connection for alice; a second is ERROR rate_limited,
	// and a message on the first one is too (no message left this minute).
	dial := func(token, conv string) *websocket.Conn {
		t.Helper()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/agentik/ws?conversation_id="+conv,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	frame := func(c *websocket.Conn) (map[string]any, error) {
		_, b, err := c.Read(ctx)
		if err != nil {
			return nil, err
		}
		var f map[string]any
		return f, json.Unmarshal(b, &f)
	}
	ws1 := dial(aliceToken, b)
	if f, err := frame(ws1); err != nil || f["type"] != "STATUS" {
		t.Fatalf("first connection: %v %v", f, err)
	}
	ws2 := dial(aliceToken, b)
	if f, err := frame(ws2); err != nil || f["type"] != "ERROR" || f["code"] != agentik.ERateLimited {
		t.Fatalf("second connection: %v %v", f, err)
	}
	if _, err := frame(ws2); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("second connection not closed with 1013: %v", err)
	}
	if err := ws1.Write(ctx, websocket.MessageText, []byte(`{"type":"USER_MESSAGE","text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if f, err := frame(ws1); err != nil || f["type"] != "ERROR" || f["code"] != agentik.ERateLimited {
		t.Fatalf("USER_MESSAGE over the rate: %v %v", f, err)
	}

	// Bob is untouched by all of it.
	if st, body, _ := send(bobToken, id(bobConv)); st != http.StatusAccepted {
		t.Fatalf("bob's message: %d %s", st, body)
	}
}
