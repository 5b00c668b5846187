package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// cutTool is a send_mail that, once started, goes out whatever happens to
// its context: it tells when it starts and when its context ends (the turn
// was interrupted), and finishes with "mail sent" when released.
type cutTool struct {
	started, cut, release chan struct{}
}

func (g *cutTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (g *cutTool) Call(ctx context.Context, _ agentik.RawJSON) (agentik.ToolResult, error) {
	close(g.started)
	select {
	case <-ctx.Done():
		close(g.cut)
	case <-g.release:
	}
	<-g.release
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("mail sent")}}, nil
}

// notHere is the send_mail of a process that must not run it.
type notHere struct{ t *testing.T }

func (n notHere) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (n notHere) Call(context.Context, agentik.RawJSON) (agentik.ToolResult, error) {
	n.t.Error("send_mail ran on the process that takes no lease")
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("wrong process")}}, nil
}

// leaseless never gets a lease: its process answers approvals, interrupts
// and stores messages, and the other process runs every turn.
type leaseless struct{ agentik.Coordinator }

func (leaseless) Acquire(context.Context, string) (agentik.Lease, error) {
	return agentik.Lease{}, nil
}

// TestApprovedCallInterruptedWhileItRunsAcrossProcesses is issue 44.1 on
// two processes sharing PostgreSQL: process A runs the turn; the call is
// approved and, once it runs on A, the turn is interrupted — through B (the
// interrupt travels to A as a notice) or through A. The tool finishes
// after the interrupt, and its result is journaled before the turn closes:
// tool_result "mail sent", then interrupted; nothing is left pending, open
// or working on either process, and the next turn's model sees the result.
// Deterministic: B never takes a lease (so A runs both turns), and the tool
// is released only once its context on A has ended.
func TestApprovedCallInterruptedWhileItRunsAcrossProcesses(t *testing.T) {
	for _, tc := range []struct {
		name string
		via  int // the process answering, interrupting and sending: 0 A, 1 B
	}{{"through B", 1}, {"through A", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			llm := llmtest.NewServer()
			defer llm.Close()
			llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{}`).WithID("m1")), llmtest.Text("noted"))
			dsn := freshSchema(t)
			mail := &cutTool{started: make(chan struct{}), cut: make(chan struct{}), release: make(chan struct{})}
			release := sync.OnceFunc(func() { close(mail.release) })
			policy, _ := agentik.ParseApprovalPolicy("send_*=ask")
			a := newNode(t, dsn, llm, nodeOptions{tools: tools.NewRegistry(mail), approval: policy})
			b := newNode(t, dsn, llm, nodeOptions{scan: time.Hour, tools: tools.NewRegistry(notHere{t}), approval: policy,
				wrap: func(c agentik.Coordinator) agentik.Coordinator { return leaseless{c} }})
			t.Cleanup(release) // before the nodes stop, on failure too
			ctx := agentik.WithPrincipal(context.Background(), "alice")
			id, cs := sharedConversation(t, ctx, a, b)
			via := cs[tc.via]
			s := liveEvents(t, ctx, cs[1]) // B sees the turn A runs

			m := sendText(t, cs[0], "mail bob")
			waitFor(t, s, "the turn parked", func(ev agentik.Event) bool {
				return ev.Type == agentik.EvAwaitingApproval && ev.ReplyTo == m.MessageID
			})
			if err := via.Resolve(ctx, "m1", agentik.Resolution{Approved: true}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-mail.started:
			case <-time.After(30 * time.Second):
				t.Fatal("the approved call did not start on A within 30s")
			}
			if ok, err := via.Interrupt(ctx); err != nil || !ok {
				t.Fatalf("interrupt: %v %v", ok, err)
			}
			select {
			case <-mail.cut: // the interrupt reached the call on A
			case <-time.After(30 * time.Second):
				t.Fatal("the running call was not interrupted within 30s")
			}
			release() // the mail goes out after the interrupt
			waitFor(t, s, "the end of the interrupted turn", func(ev agentik.Event) bool {
				return ev.Type == agentik.EvEnd && ev.ReplyTo == m.MessageID
			})

			// The journal: the call's result, then the close.
			evs, err := a.store.Events(ctx, id, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var seq []string
			var result *agentik.Message
			for _, ev := range evs {
				switch {
				case ev.Message != nil:
					seq = append(seq, ev.Message.Type)
					if ev.Message.Type == agentik.MsgToolResult && ev.Message.CallID == "m1" {
						result = ev.Message
					}
				case ev.Type == agentik.EvInterrupted:
					seq = append(seq, ev.Type)
				}
			}
			if got := strings.Join(seq, ","); got != "user_message,tool_call,tool_result,interrupted" {
				t.Fatalf("journal %s", got)
			}
			if result.IsError || agentik.JoinText(result.Content) != "mail sent" || result.ReplyTo != m.MessageID {
				t.Fatalf("result %+v", result)
			}
			if ev := closing(t, a.store, id, m.MessageID); ev.Type != agentik.EvInterrupted || ev.Reason != agentik.ReasonUser {
				t.Fatalf("the turn closed with %+v", ev)
			}
			apps, err := a.store.ApprovalEvents(ctx, id, 0)
			if err != nil || len(apps) != 2 || apps[1].Approved == nil || !*apps[1].Approved {
				t.Fatalf("approval events %+v %v", apps, err)
			}
			if open, err := a.store.OpenTurnsOf(ctx, id); err != nil || len(open) != 0 {
				t.Fatalf("open turns %+v %v", open, err)
			}
			for i, c := range cs {
				if list, err := c.Approvals(ctx); err != nil || len(list) != 0 {
					t.Fatalf("pending on %c: %+v %v", 'A'+i, list, err)
				}
				if info, err := c.Info(ctx); err != nil || info.Working {
					t.Fatalf("working on %c: %v %v", 'A'+i, info.Working, err)
				}
			}

			// The next turn's model knows the mail went out.
			next := sendText(t, via, "did it go?")
			waitFor(t, s, "the end of the next turn", func(ev agentik.Event) bool {
				return ev.Type == agentik.EvEnd && ev.ReplyTo == next.MessageID
			})
			reqs := llm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			var sawResult bool
			for _, msg := range reqs[1].Messages {
				sawResult = sawResult || (msg.Role == "tool" && msg.ToolCallID == "m1" && msg.Text() == "mail sent")
			}
			if !sawResult {
				t.Fatalf("the model does not see what ran: %+v", reqs[1].Messages)
			}
		})
	}
}
