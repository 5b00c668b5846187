package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// TestSIGKILLWhileApprovalPending kills the real binary (SQLite) as soon as
// a call's approval_requested is committed, starts it again on the same
// database: the call still waits (and the model is not asked again); once
// approved the tool runs once and the turn is answered once.
func TestSIGKILLWhileApprovalPending(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("call_k")),
		llmtest.Text("The time is known."),
	)
	db := filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "AGENTIK_TOOL_APPROVAL=current_time=ask"}
	p := startProc(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("time?")}})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, agentik.EvApprovalRequested)
	s.Close()
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done

	p2 := startProc(t, env...)
	client2 := httpapi.NewClient(p2.url + "/agentik")
	conv2, err := client2.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	ap := conv2
	pending, err := ap.Approvals(ctx)
	if err != nil || len(pending) != 1 || pending[0].CallID != "call_k" || pending[0].ReplyTo != sent.MessageID ||
		string(pending[0].Arguments) != `{"timezone":"UTC"}` {
		t.Fatalf("pending after restart: %+v %v\n%s", pending, err, p2.log())
	}
	// The restarted process parks the turn again as it recovers it, which
	// may finish just after it starts serving: wait for that state.
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, err := conv2.Info(ctx)
		if err == nil && got.Working {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not working while it waits: %+v %v", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times before the answer", n)
	}
	s2, err := conv2.Events(ctx, 0) // the whole stream, replayed, then live
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := ap.Resolve(ctx, "call_k", agentik.Resolution{Approved: true}); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for {
		ev := waitEvent(t, s2, "")
		if ev.Cursor != 0 {
			count[ev.Type]++
		}
		if ev.Type == agentik.EvEnd {
			break
		}
	}
	if count[agentik.EvApprovalRequested] != 1 || count[agentik.EvApprovalResolved] != 1 || count[agentik.EvToolCall] != 1 ||
		count[agentik.EvToolResult] != 1 || count[agentik.EvAssistantMessage] != 1 || count[agentik.EvToolFailed] != 0 {
		t.Fatalf("durable events %v", count)
	}
	page, err := conv2.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range page.Messages {
		types = append(types, m.Type)
	}
	if len(page.Messages) != 4 || page.Messages[2].CallID != "call_k" || page.Messages[2].IsError ||
		agentik.JoinText(page.Messages[3].Content) != "The time is known." || page.Messages[3].ReplyTo != sent.MessageID {
		t.Fatalf("journal %v %+v", types, page.Messages)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
	if pending, err := ap.Approvals(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("still pending %+v %v", pending, err)
	}
	if err := ap.Resolve(ctx, "call_k", agentik.Resolution{Approved: true}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("second answer: %v", err)
	}
}

// waitEvent returns the next event of s (of type typ unless typ is "").
func waitEvent(t *testing.T, s agentik.Stream[agentik.Event], typ string) agentik.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-s.C():
			if !ok {
				t.Fatalf("stream ended waiting for %q: %v", typ, s.Err())
			}
			if typ == "" || ev.Type == typ {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %q event within 30s", typ)
		}
	}
}
