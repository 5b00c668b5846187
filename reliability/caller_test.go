package reliability_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/coder/websocket"
)

// The hostile-caller tests (docs/reliability.md, "Hostile caller"): what one
// careless or hostile caller can make the server do, tried through the real
// facades.

// TestFailureDetailIsForOperators: a model failure shows every caller the
// stable code and a safe sentence — never the provider's answer or an
// internal address — on every facade and in the journal; the detail is in
// the log for the operator.
func TestFailureDetailIsForOperators(t *testing.T) {
	faults := []struct {
		name   string
		secret []string // what the cause says; no caller may see it
		setup  func(t *testing.T) serverOptions
	}{
		{
			name:   "model answers 401",
			secret: []string{"sk-leak-4242", "HTTP 401", "openai:"},
			setup: func(t *testing.T) serverOptions {
				llm := llmtest.NewServer()
				t.Cleanup(llm.Close)
				for range 4 {
					llm.Enqueue(llmtest.APIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-leak-4242"))
				}
				return serverOptions{llm: llm, retries: -1}
			},
		},
		{
			name:   "model endpoint refuses connections",
			secret: []string{"127.0.0.1", "connection refused", "dial tcp"},
			setup: func(t *testing.T) serverOptions {
				llm := llmtest.NewServer()
				llm.Close() // its address now refuses connections
				return serverOptions{llm: llm, retries: -1}
			},
		},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			s := newServer(t, f.setup(t))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			seen := map[string]string{} // facade → everything its caller received

			// REST: the SSE stream of the turn and the journal.
			conv := s.createConversation(t)
			events, err := openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events?after=0")
			if err != nil {
				t.Fatal(err)
			}
			res := s.send(t, conv, "hello")
			var sse strings.Builder
			for _, ev := range waitFor(t, events, 20*time.Second, endOf(res.MessageID)) {
				sse.WriteString(ev.event + " " + ev.data + "\n")
			}
			events.close()
			seen["SSE"] = sse.String()
			seen["REST journal"] = string(do(t, "GET", s.url+"/agentik/conversations/"+conv+"/messages", nil).body)

			// WebSocket: USER_MESSAGE, then frames until ERROR and END.
			c, _, err := websocket.Dial(ctx, s.wsURL(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var frames strings.Builder
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"USER_MESSAGE","text":"hello"}`)); err != nil {
				t.Fatal(err)
			}
			for !strings.Contains(frames.String(), `"END"`) {
				_, b, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("WebSocket: %v after %s", err, frames.String())
				}
				frames.Write(append(b, '\n'))
			}
			c.CloseNow()
			seen["WebSocket"] = frames.String()

			// A2A: a blocking send returns the failed task.
			a2aConv := s.createConversation(t)
			seen["A2A"] = string(do(t, "POST", s.url+"/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"`+a2aConv+`","parts":[{"text":"hello"}]}}}`)).body)

			// AG-UI: the run's stream ends with RUN_ERROR.
			req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/agui", strings.NewReader(`{"threadId":"failing","runId":"r1","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[{"id":"u1","role":"user","content":"hello"}]}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			seen["AG-UI"] = string(b)

			for facade, got := range seen {
				if !strings.Contains(got, agentik.CodeLLMError) || !strings.Contains(got, "the model call failed") {
					t.Errorf("%s: no %s with its safe sentence in what the caller got:\n%s", facade, agentik.CodeLLMError, got)
				}
				for _, secret := range f.secret {
					if strings.Contains(got, secret) {
						t.Errorf("%s: the caller sees %q:\n%s", facade, secret, got)
					}
				}
			}
			if logs := s.logs.String(); !strings.Contains(logs, f.secret[0]) {
				t.Errorf("the operator's log lacks the cause %q:\n%s", f.secret[0], logs)
			}
		})
	}
}

// TestDuplicateKeysByCase: encoding/json fills one struct field from keys
// that differ only by case, the last one winning; such bodies are refused
// like any duplicate key, on the fields that decide where a request goes.
func TestDuplicateKeysByCase(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	other := s.createConversation(t)
	before, beforeOther := s.stored(t, conv), s.stored(t, other)
	for _, tc := range []struct {
		name, path, body string
		refused          func(reply) (string, error)
	}{
		{"REST content/Content", "/agentik/conversations/" + conv + "/messages",
			`{"content":[{"type":"text","text":"a"}],"Content":[{"type":"text","text":"b"}]}`, restRefusal},
		{"AG-UI threadId/ThreadID", "/agui",
			`{"threadId":"` + conv + `","ThreadID":"` + other + `","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}`, restRefusal},
		{"A2A contextId/ContextID", "/a2a",
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","contextId":"` + conv + `","ContextId":"` + other + `","parts":[{"text":"hi"}]}}}`, rpcRefusal},
	} {
		got, err := tc.refused(do(t, "POST", s.url+tc.path, []byte(tc.body), "Accept", "text/event-stream"))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if !strings.Contains(got, "400") && !strings.Contains(got, "-32700") {
			t.Errorf("%s: %s, want 400 malformed / -32700", tc.name, got)
		}
	}
	if got, err := wsRefusal(t, s, "?conversation_id="+conv, `{"type":"USER_MESSAGE","text":"a","Text":"b"}`); err != nil || !strings.Contains(got, "malformed") {
		t.Errorf("WebSocket text/Text: %s %v", got, err)
	}
	if after, afterOther := s.stored(t, conv), s.stored(t, other); after != before || afterOther != beforeOther {
		t.Errorf("refused but stored: %+v → %+v, %+v → %+v", before, after, beforeOther, afterOther)
	}
}

// TestOneRunOneTurn: an AG-UI run is one turn for all the user messages it
// brings, and a run that brings more than the bound is refused before
// anything is stored or any model is called (today's attack: 20,000 new
// user messages in a 0.9 MB body answered as 20,000 turns).
func TestOneRunOneTurn(t *testing.T) {
	s := newServer(t, serverOptions{})
	run := func(thread string, n int) string {
		var b strings.Builder
		b.WriteString(`{"threadId":"` + thread + `","runId":"r1","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"id":"m` + strconv.Itoa(i) + `","role":"user","content":"x"}`)
		}
		b.WriteString("]}")
		return b.String()
	}
	anyConv := s.createConversation(t)
	before := s.stored(t, anyConv)
	flood := run("flood", 20000)
	r := do(t, "POST", s.url+"/agui", []byte(flood), "Accept", "text/event-stream")
	if got, err := restRefusal(r); err != nil || got != "422 invalid" {
		t.Fatalf("20,000 new messages in %d bytes: %s %v", len(flood), got, err)
	}
	if after := s.stored(t, anyConv); after != before || len(s.llm.Requests()) != 0 {
		t.Fatalf("the refused run stored something or called the model: %+v → %+v, %d model calls", before, after, len(s.llm.Requests()))
	}

	s.llm.Enqueue(llmtest.Text("one answer"))
	r = do(t, "POST", s.url+"/agui", []byte(run("bounded", agui.DefaultMaxRunMessages)), "Accept", "text/event-stream")
	if r.status != 200 || !strings.Contains(string(r.body), "RUN_FINISHED") {
		t.Fatalf("%d messages: %d %s", agui.DefaultMaxRunMessages, r.status, r.body)
	}
	if n := len(s.llm.Requests()); n != 1 {
		t.Fatalf("%d messages of one run made %d model calls, want 1", agui.DefaultMaxRunMessages, n)
	}
	ctx := context.Background()
	list, _, err := s.store.ListConversations(ctx, "", 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.ID == anyConv {
			continue
		}
		msgs, _, err := s.store.Messages(ctx, c.ID, agentik.MessagesRequest{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[0].Type != agentik.MsgUser || len(msgs[0].Content) != agui.DefaultMaxRunMessages || msgs[1].Type != agentik.MsgAssistant {
			t.Fatalf("the run's journal: %d messages, first %+v", len(msgs), msgs[0])
		}
	}
}

// TestMemoryOneCallerCanTake: a body of 500,000 tiny parts is refused before
// it is decoded (an array of at most agentik.MaxJSONArray elements), a
// message of more than agentik.MaxContentParts parts or more text than the
// limit is refused, and temporal conversations — memory only — hold at most
// the per-principal budget, which is given back when one is deleted.
func TestMemoryOneCallerCanTake(t *testing.T) {
	const budget = 3 << 20
	s := newServer(t, serverOptions{maxBody: 16 << 20, engine: func(o *engine.Options) { o.TemporalBytes = budget }})
	conv := s.createConversation(t)
	parts := func(n int) string {
		return `{"content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"x"},`, n), ",") + `]}`
	}
	send := func(conv, body string) reply {
		return do(t, "POST", s.url+"/agentik/conversations/"+conv+"/messages", []byte(body))
	}
	before := s.stored(t, conv)
	for _, tc := range []struct {
		name, body string
	}{
		{"500,000 parts (13.5 MB)", parts(500_000)},
		{"257 parts", parts(agentik.MaxContentParts + 1)},
		{"text over 1 MiB", `{"content":[{"type":"text","text":"` + strings.Repeat("a", agentik.DefaultMaxTextBytes/2) + `"},{"type":"text","text":"` + strings.Repeat("b", agentik.DefaultMaxTextBytes/2+1) + `"}]}`},
	} {
		if got, err := restRefusal(send(conv, tc.body)); err != nil || got != "413 too_large" {
			t.Errorf("%s: %s %v, want 413 too_large", tc.name, got, err)
		}
	}
	if after := s.stored(t, conv); after != before {
		t.Fatalf("refused but stored: %+v → %+v", before, after)
	}
	s.llm.Enqueue(llmtest.Text("ok"))
	if r := send(conv, parts(agentik.MaxContentParts)); r.status != http.StatusAccepted {
		t.Fatalf("%d parts: %d %s", agentik.MaxContentParts, r.status, r.body)
	}

	// Temporal conversations: 900 KB messages until the budget is spent.
	temporal := func() string {
		var info agentik.ConversationInfo
		do(t, "POST", s.url+"/agentik/conversations", []byte(`{"temporal":true}`)).decode(t, &info)
		return info.ID
	}
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("t", 900_000) + `"}]}`
	first := temporal()
	accepted := 0
	for i := 0; ; i++ {
		s.llm.Enqueue(llmtest.Text("ok"))
		r := send(first, big)
		if r.status == http.StatusAccepted {
			accepted++
			continue
		}
		if got, err := restRefusal(r); err != nil || got != "413 too_large" || accepted != budget/900_000 {
			t.Fatalf("temporal message %d: %s %v after %d accepted", i+1, got, err, accepted)
		}
		break
	}
	second := temporal()
	if got, err := restRefusal(send(second, big)); err != nil || got != "413 too_large" {
		t.Fatalf("a second temporal conversation over the budget: %s %v", got, err)
	}
	if r := do(t, "DELETE", s.url+"/agentik/conversations/"+first, nil); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := send(second, big); r.status != http.StatusAccepted {
		t.Fatalf("after the delete gave the memory back: %d %s", r.status, r.body)
	}
}
