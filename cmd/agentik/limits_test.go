package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
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

// TestLimitsCountPerPrincipalAcrossAgents: a principal's limits count what
// it does with every agent together, not per agent (two agents do not give
// twice every limit), on SQLite and across two processes on PostgreSQL.
// Both agents allow one running conversation, three messages and three
// conversations a minute.
func TestLimitsCountPerPrincipalAcrossAgents(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			llm := llmtest.NewServer()
			defer llm.Close()
			gate := llmtest.NewGate()
			defer gate.Release()
			llm.Enqueue(llmtest.Stream().Role().Content("slow ").Pause(gate).Content("answer").Finish("stop").Done())
			llm.Handle(echo)
			file := filepath.Join(t.TempDir(), "agentik.yaml")
			os.WriteFile(file, []byte(fmt.Sprintf(`database: ./agentik.db
auth:
  tokens:
    - {principal: dave, token_env: DAVE_TOKEN}
agents:
  - id: alpha
    model: {base_url: %[1]q, model: m}
    limits: {max_concurrent_turns: 1, messages_per_minute: 3, conversations_per_minute: 3}
  - id: beta
    model: {base_url: %[1]q, model: m}
    limits: {max_concurrent_turns: 1, messages_per_minute: 3, conversations_per_minute: 3}
`, llm.URL())), 0o600)
			env := []string{"AGENTIK_CONFIG=" + file, "DAVE_TOKEN=" + daveToken}
			n := 1
			if db == "postgres" {
				env, n = append(env, "AGENTIK_DATABASE_URL="+pgSchema(t)), 2
			}
			ps, _ := startProcs(t, n, env...)
			// alpha on the first process, beta on the last (the same one on SQLite)
			alpha := httpapi.NewClient(ps[0].url+"/agents/alpha", httpapi.WithToken(daveToken))
			beta := httpapi.NewClient(ps[n-1].url+"/agents/beta", httpapi.WithToken(daveToken))
			ctx := testCtx(t)
			send := func(c *httpapi.Client, id, text string) (agentik.SendResult, error) {
				conv, err := c.Conversation(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				defer conv.Close()
				return conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
			}
			x, err := alpha.CreateConversation(ctx, agentik.CreateRequest{})
			if err != nil {
				t.Fatal(err)
			}
			y, err := beta.CreateConversation(ctx, agentik.CreateRequest{})
			if err != nil {
				t.Fatal(err)
			}
			convX, _ := alpha.Conversation(ctx, x.ID)
			defer convX.Close()
			s, err := convX.Events(ctx, agentik.LiveOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := send(alpha, x.ID, "slow") // message 1
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-gate.Reached(): // alpha answers x
			case <-time.After(30 * time.Second):
				t.Fatal("no model call for x within 30 s")
			}
			_, err = send(beta, y.ID, "other")
			rateLimited(t, "a second running conversation, on the other agent", err)
			gate.Release()
			until(t, s, "end of x's turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
			// Each answered before the next: one running conversation at most.
			convY, _ := beta.Conversation(ctx, y.ID)
			defer convY.Close()
			sy, err := convY.Events(ctx, agentik.LiveOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer sy.Close()
			res, err = send(beta, y.ID, "two") // message 2
			if err != nil {
				t.Fatalf("message 2 on beta: %v", err)
			}
			until(t, sy, "end of y's turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
			res, err = send(alpha, x.ID, "three") // message 3
			if err != nil {
				t.Fatalf("message 3 on alpha: %v", err)
			}
			until(t, s, "end of x's second turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
			_, err = send(beta, y.ID, "four")
			rateLimited(t, "a fourth message in a minute, two on each agent", err)
			if _, err := alpha.CreateConversation(ctx, agentik.CreateRequest{}); err != nil { // conversation 3
				t.Fatal(err)
			}
			_, err = beta.CreateConversation(ctx, agentik.CreateRequest{})
			rateLimited(t, "a fourth conversation in a minute, two on each agent", err)
		})
	}
}
