package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// a2aCall posts one JSON-RPC request to the A2A endpoint at url and returns
// its result (failing on an error answer).
func a2aCall(t *testing.T, url, method string, params any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := http.Post(url+"/a2a", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Error != nil {
		t.Fatalf("%s: %v %s", method, err, out.Error)
	}
	return out.Result
}

func taskState(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return s
}

// userMessage returns the journal's user message whose text begins with
// text.
func userMessage(t *testing.T, c *httpapi.Client, conv, text string) agentik.Message {
	t.Helper()
	cv, err := c.Conversation(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	page, err := cv.Messages(context.Background(), agentik.MessagesRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(page.Messages, func(m agentik.Message) bool {
		return m.Type == agentik.MsgUser && strings.HasPrefix(agentik.JoinText(m.Content), text)
	})
	if i < 0 {
		t.Fatalf("no user message %q in %+v", text, page.Messages)
	}
	return page.Messages[i]
}

// closedBy waits until the turn answering the user message with text is
// closed and says how: interrupted:<reason>, or the closing message's type
// and text.
func closedBy(t *testing.T, c *httpapi.Client, conv, text string) string {
	t.Helper()
	user := userMessage(t, c, conv, text)
	cv, _ := c.Conversation(context.Background(), conv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := cv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for ev := range s.C() {
		switch {
		case ev.Type == agentik.EvInterrupted && ev.ReplyTo == user.ID:
			return "interrupted:" + ev.Reason
		case ev.Message != nil && ev.Message.ReplyTo == user.ID && ev.Message.ClosesTurn():
			return ev.Message.Type + ":" + agentik.JoinText(ev.Message.Content)
		}
	}
	t.Fatalf("the turn of %q was not closed: %v", text, s.Err())
	return ""
}

// TestPostgresWithdrawQueuedTurnOnAnotherProcess: a turn queued behind a
// turn that process A runs is withdrawn — closed with interrupted{user},
// never answered — when its cancel reaches process B: an A2A CancelTask
// posted to B, and an AG-UI client disconnecting from its run on B. A's
// running turns go on. (Before, B could not withdraw a turn queued in the
// shared store: AG-UI left it to run, A2A interrupted it once it started.)
func TestPostgresWithdrawQueuedTurnOnAnotherProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	first, alpha := llmtest.NewGate(), llmtest.NewGate()
	defer first.Release()
	defer alpha.Release()
	gates := map[string]*llmtest.Gate{"first": first, "alpha": alpha}
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		if g := gates[r.LastUserText()]; g != nil {
			return llmtest.Stream().Role().Content("partial ").Pause(g).Content("late").Finish("stop").Done()
		}
		return echo(r)
	})
	ps, cs := pgProcs(t, llm, 2)
	a, b := ps[0], ps[1]
	asked := func(text string) bool {
		return slices.ContainsFunc(llm.Requests(), func(r llmtest.Request) bool { return strings.HasPrefix(r.LastUserText(), text) })
	}

	t.Run("a2a", func(t *testing.T) {
		msg := func(id, text, contextID string) map[string]any {
			m := map[string]any{"kind": "message", "messageId": id, "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
			if contextID != "" {
				m["contextId"] = contextID
			}
			return map[string]any{"message": m, "configuration": map[string]any{"blocking": false}}
		}
		t1 := a2aCall(t, a.url, "message/send", msg("m1", "first", ""))
		<-first.Reached() // A runs the first task's turn
		ctxID, _ := t1["contextId"].(string)
		t2 := a2aCall(t, b.url, "message/send", msg("m2", "second", ctxID))
		canceled := a2aCall(t, b.url, "tasks/cancel", map[string]any{"id": t2["id"]})
		if taskState(canceled) != "canceled" {
			t.Fatalf("cancel of the queued task through B: %v", canceled)
		}
		if closed := closedBy(t, cs[0], ctxID, "second"); closed != "interrupted:user" {
			t.Fatalf("the queued task's turn: %q", closed)
		}
		if got := taskState(a2aCall(t, a.url, "tasks/get", map[string]any{"id": t1["id"]})); got != "working" {
			t.Fatalf("the running task reads %s", got)
		}
		first.Release()
		if closed := closedBy(t, cs[1], ctxID, "first"); closed != "assistant_message:partial late" {
			t.Fatalf("the running task's turn: %q", closed)
		}
		if asked("second") {
			t.Fatal("the model was asked to answer the canceled task")
		}
	})

	t.Run("agui", func(t *testing.T) {
		thread := agentik.NewID()
		run := func(id string, msgs ...map[string]any) []byte {
			b, _ := json.Marshal(map[string]any{"threadId": thread, "runId": id, "messages": msgs, "tools": []any{},
				"context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}})
			return b
		}
		u1 := map[string]any{"id": "u1", "role": "user", "content": "alpha"}
		u2 := map[string]any{"id": "u2", "role": "user", "content": "beta"}
		done := make(chan []map[string]any, 1)
		go func() { done <- aguiRunQuiet(a.url, run("r1", u1)) }()
		<-alpha.Reached() // A runs the first run's turn

		// The second run, on B, is queued behind it; its client goes away.
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", b.url+"/agui", strings.NewReader(string(run("r2", u1, u2))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n') // RUN_STARTED: the message is stored
		if err != nil || !strings.Contains(line, "RUN_STARTED") {
			t.Fatalf("run 2 on B began with %q, %v", line, err)
		}
		cancel()
		resp.Body.Close()

		// B withdraws the turn once it notices the disconnect.
		if closed := closedBy(t, cs[0], agui.ConversationID("", thread), "beta"); closed != "interrupted:user" {
			t.Fatalf("the disconnected run's turn: %q", closed)
		}
		alpha.Release()
		evs := <-done
		if aguiText(evs) != "partial late" || evs[len(evs)-1]["type"] != "RUN_FINISHED" {
			t.Fatalf("run 1 on A: %v", evs)
		}
		if asked("beta") {
			t.Fatal("the model was asked to answer the withdrawn run")
		}
	})
}

// aguiRunQuiet posts an AG-UI run and returns its events (nil on failure).
func aguiRunQuiet(url string, body []byte) []map[string]any {
	req, _ := http.NewRequest("POST", url+"/agui", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var evs []map[string]any
	for line := range strings.Lines(string(raw)) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) == nil {
			evs = append(evs, ev)
		}
	}
	return evs
}
