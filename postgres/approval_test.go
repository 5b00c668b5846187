package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// slowTool blocks until release is closed; countTool counts its calls.
type slowTool struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *slowTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "slow", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (s *slowTool) Call(ctx context.Context, _ agentik.RawJSON) (agentik.ToolResult, error) {
	s.once.Do(func() { close(s.started) })
	select {
	case <-s.release:
		return agentik.ToolResult{Content: []agentik.Content{agentik.Text("slow done")}}, nil
	case <-ctx.Done():
		return agentik.ToolResult{}, ctx.Err()
	}
}

type countTool struct {
	mu sync.Mutex
	n  int
}

func (c *countTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (c *countTool) Call(context.Context, agentik.RawJSON) (agentik.ToolResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("sent")}}, nil
}

// TestApprovalAnsweredThroughAnotherProcess: process A runs a turn whose
// model response has an allowed call (still running on A, which holds the
// lease) and one that needs approval; process B approves it; the approved
// call then runs exactly once, and the model is called again once, after
// both have results. A second answer through A is refused.
func TestApprovalAnsweredThroughAnotherProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("slow", `{}`).WithID("s1"), llmtest.Call("send_mail", `{}`).WithID("m1")),
		llmtest.Text("all done"))
	dsn := freshSchema(t)
	slow := &slowTool{started: make(chan struct{}), release: make(chan struct{})}
	defer func() {
		select {
		case <-slow.release:
		default:
			close(slow.release)
		}
	}()
	mail := &countTool{}
	policy, _ := agentik.ParseApprovalPolicy("send_*=ask")
	reg := tools.NewRegistry(slow, mail)
	a := newNode(t, dsn, llm, nodeOptions{tools: reg, approval: policy})
	b := newNode(t, dsn, llm, nodeOptions{tools: reg, approval: policy})
	ctx := agentik.WithPrincipal(context.Background(), "alice")
	id, cs := sharedConversation(t, ctx, a, b)
	convA, convB := cs[0], cs[1]
	s := liveEvents(t, ctx, convB)
	m := sendText(t, convA, "go")
	waitFor(t, s, "the approval request", func(ev agentik.Event) bool { return ev.Type == agentik.EvApprovalRequested })
	<-slow.started // A holds the turn, running the allowed call
	list, err := convB.Approvals(ctx)
	if err != nil || len(list) != 1 || list[0].CallID != "m1" {
		t.Fatalf("B's pending list %+v %v", list, err)
	}
	if err := convB.Resolve(ctx, "m1", agentik.Resolution{Approved: true}); err != nil {
		t.Fatal(err)
	}
	if err := convA.Resolve(ctx, "m1", agentik.Resolution{Approved: false}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("second answer through A: %v", err)
	}
	close(slow.release)
	waitFor(t, s, "the answer", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == m.MessageID
	})
	page, err := convB.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, msg := range page.Messages {
		types = append(types, msg.Type)
	}
	if got := len(page.Messages); got != 6 || page.Messages[5].Type != agentik.MsgAssistant {
		t.Fatalf("journal %v", types)
	}
	mail.mu.Lock()
	n := mail.n
	mail.mu.Unlock()
	if n != 1 {
		t.Fatalf("approved call ran %d times", n)
	}
	if got := len(llm.Requests()); got != 2 {
		t.Fatalf("%d model calls", got)
	}
	evs, err := b.store.ApprovalEvents(ctx, id, 0)
	if err != nil || len(evs) != 2 || evs[1].By != "alice" {
		t.Fatalf("approval events %+v %v", evs, err)
	}
}

// TestApprovalAnsweredOnceByTheStore: two approval_resolved events for one
// call are refused by the database whoever commits them.
func TestApprovalAnsweredOnceByTheStore(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	st, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}
	if _, err := st.CreateConversation(ctx, c); err != nil {
		t.Fatal(err)
	}
	yes := true
	ev := agentik.Event{ConversationID: c.ID, Date: agentik.Now(), Type: agentik.EvApprovalResolved, CallID: "x", Approved: &yes}
	if _, _, err := st.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{ev}}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("second answer: %v", err)
	}
}
