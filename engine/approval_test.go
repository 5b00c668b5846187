package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// recTool records the arguments of every call.
type recTool struct {
	name string
	mu   sync.Mutex
	args []string
}

func (r *recTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: r.name, Description: "records its calls", Parameters: agentik.RawJSON(
		`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`)}
}

func (r *recTool) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.args = append(r.args, string(args))
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("done " + string(args))}}, nil
}

func (r *recTool) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.args...)
}

// approvalHarness is a harness whose agent asks before send_* and hides
// delete_*, with the two recording tools send_a and send_b beside
// current_time.
func approvalHarness(t *testing.T, opts ...option) (*harness, *recTool, *recTool) {
	a, b := &recTool{name: "send_a"}, &recTool{name: "send_b"}
	del := &recTool{name: "delete_all"}
	policy, err := agentik.ParseApprovalPolicy("send_*=ask, delete_*=deny")
	if err != nil {
		t.Fatal(err)
	}
	o := append([]option{func(o *engine.Options) {
		o.Tools = tools.NewRegistry(tools.CurrentTime{}, a, b, del)
		o.Approval = policy
	}}, opts...)
	return newHarness(t, o...), a, b
}

func isType(typ string) func(agentik.Event) bool {
	return func(ev agentik.Event) bool { return ev.Type == typ }
}

func approver(t *testing.T, c agentik.Conversation) agentik.Approver {
	t.Helper()
	return c
}

func pendingIDs(t *testing.T, c agentik.Conversation) string {
	t.Helper()
	p, err := approver(t, c).Approvals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(p))
	for i, a := range p {
		ids[i] = a.CallID
	}
	return strings.Join(ids, ",")
}

func asUser(ctx context.Context) context.Context { return agentik.WithPrincipal(ctx, "alice") }

func TestApprovalApprove(t *testing.T) {
	h, a, _ := approvalHarness(t)
	h.ctx = asUser(h.ctx)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"bob"}`).WithID("c1")), llmtest.Text("sent"))
	c, s := h.conversation()
	res := h.send(c, "mail bob")
	evs := until(t, s, isType(agentik.EvAwaitingApproval))
	if got, want := types(evs), "user_message,working,tool_call,approval_requested,awaiting_approval"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	req := evs[3]
	if req.CallID != "c1" || req.Name != "send_a" || string(req.Arguments) != `{"to":"bob"}` || req.ReplyTo != res.MessageID || req.Cursor == 0 {
		t.Fatalf("approval_requested %+v", req)
	}
	if evs[2].Cursor+1 > req.Cursor {
		t.Fatalf("request cursor %d not after its tool_call %d", req.Cursor, evs[2].Cursor)
	}
	if got := pendingIDs(t, c); got != "c1" {
		t.Fatalf("pending %q", got)
	}
	p, _ := approver(t, c).Approvals(h.ctx)
	if !strings.Contains(string(p[0].Schema), `"required"`) {
		t.Fatalf("pending approval without the tool's schema: %+v", p[0])
	}
	if info, _ := c.Info(h.ctx); !info.Working {
		t.Fatal("not working while waiting for approval")
	}
	if len(a.calls()) != 0 || len(h.llm.Requests()) != 1 {
		t.Fatalf("ran before approval: %v, %d model calls", a.calls(), len(h.llm.Requests()))
	}
	// Wrong answers change nothing.
	if err := approver(t, c).Resolve(h.ctx, "nope", agentik.Resolution{Approved: true}); agentik.ErrorCode(err) != agentik.ENotFound {
		t.Fatalf("unknown call: %v", err)
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); err != nil {
		t.Fatal(err)
	}
	evs = until(t, s, endOf(res.MessageID))
	if got, want := compact(evs), "approval_resolved,working,tool_result,start_response,append_text,assistant_message,end"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	if r := evs[0]; r.CallID != "c1" || r.Approved == nil || !*r.Approved || r.By != "alice" || r.Cursor == 0 {
		t.Fatalf("approval_resolved %+v", r)
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: false}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("second answer: %v", err)
	}
	if got := a.calls(); len(got) != 1 || got[0] != `{"to":"bob"}` {
		t.Fatalf("tool calls %v", got)
	}
	msgs := journal(t, c)
	if journalTypes(msgs) != "user_message,tool_call,tool_result,assistant_message" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
	if info, _ := c.Info(h.ctx); info.Working {
		t.Fatal("working after the turn")
	}
	if got := pendingIDs(t, c); got != "" {
		t.Fatalf("pending after answer %q", got)
	}
}

func TestApprovalEditAndApprove(t *testing.T) {
	h, a, _ := approvalHarness(t)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"bob"}`).WithID("c1")), llmtest.Text("sent"))
	c, s := h.conversation()
	res := h.send(c, "mail bob")
	until(t, s, isType(agentik.EvAwaitingApproval))
	for _, bad := range []string{`[1]`, `"x"`, `{"to":1}`, `{"cc":"x"}`, `{"to":"a","x":1}`, `{"to":"a","to":"b"}`} {
		err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true, Arguments: agentik.RawJSON(bad)})
		if agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("edited arguments %s: %v", bad, err)
		}
	}
	if got := pendingIDs(t, c); got != "c1" {
		t.Fatalf("refused edits changed the pending list: %q", got)
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true, Arguments: agentik.RawJSON(`{"to":"carol"}`)}); err != nil {
		t.Fatal(err)
	}
	until(t, s, endOf(res.MessageID))
	if got := a.calls(); len(got) != 1 || got[0] != `{"to":"carol"}` {
		t.Fatalf("tool ran with %v", got)
	}
	second := h.llm.Requests()[1].Messages
	if call := second[2].ToolCalls; len(call) != 1 || call[0].Function.Arguments != `{"to":"carol"}` {
		t.Fatalf("the model saw the call as %+v", second[2])
	}
}

func TestApprovalDeny(t *testing.T) {
	h, a, _ := approvalHarness(t)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"bob"}`).WithID("c1")), llmtest.Text("ok, not sent"))
	c, s := h.conversation()
	res := h.send(c, "mail bob")
	until(t, s, isType(agentik.EvAwaitingApproval))
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: false, Arguments: agentik.RawJSON(`{"to":"x"}`)}); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("a denial with arguments: %v", err)
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: false, Reason: "not now"}); err != nil {
		t.Fatal(err)
	}
	evs := until(t, s, endOf(res.MessageID))
	if got, want := compact(evs), "approval_resolved,tool_failed,working,start_response,append_text,assistant_message,end"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	if r := evs[0]; r.Approved == nil || *r.Approved || r.Reason != "not now" {
		t.Fatalf("resolved %+v", r)
	}
	if len(a.calls()) != 0 {
		t.Fatalf("denied tool ran: %v", a.calls())
	}
	second := h.llm.Requests()[1].Messages
	if last := second[len(second)-1]; last.Role != "tool" || !strings.HasSuffix(last.Text(), "denied by the user: not now") {
		t.Fatalf("the model got %+v", last)
	}
}

func TestApprovalExpires(t *testing.T) {
	h, a, _ := approvalHarness(t, func(o *engine.Options) { o.ApprovalTimeout = 100 * time.Millisecond })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"bob"}`).WithID("c1")), llmtest.Text("it expired"))
	c, s := h.conversation()
	res := h.send(c, "mail bob")
	evs := until(t, s, isType(agentik.EvApprovalRequested))
	if exp := evs[len(evs)-1].ExpiresAt; exp.IsZero() || exp.Sub(evs[len(evs)-1].Date.Time) != 100*time.Millisecond {
		t.Fatalf("expires_at %v", exp)
	}
	evs = until(t, s, endOf(res.MessageID))
	var resolved *agentik.Event
	for i := range evs {
		if evs[i].Type == agentik.EvApprovalResolved {
			resolved = &evs[i]
		}
	}
	if resolved == nil || resolved.Approved == nil || *resolved.Approved || resolved.Reason != agentik.ApprovalExpired || resolved.By != "" {
		t.Fatalf("resolution %+v in %s", resolved, types(evs))
	}
	if len(a.calls()) != 0 {
		t.Fatal("expired call ran")
	}
	second := h.llm.Requests()[1].Messages
	if last := second[len(second)-1]; !strings.HasSuffix(last.Text(), "denied by the user: expired") {
		t.Fatalf("model got %q", last.Text())
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("answer after expiry: %v", err)
	}
}

func TestApprovalInterruptWhilePending(t *testing.T) {
	h, a, b := approvalHarness(t)
	h.ctx = asUser(h.ctx)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"x"}`).WithID("c1"), llmtest.Call("send_b", `{"to":"y"}`).WithID("c2")))
	c, s := h.conversation()
	res := h.send(c, "mail both")
	until(t, s, isType(agentik.EvAwaitingApproval))
	ok, err := c.Interrupt(h.ctx)
	if err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	evs := until(t, s, endOf(res.MessageID))
	if got, want := types(evs), "approval_resolved,tool_failed,approval_resolved,tool_failed,interrupted,end"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	if r := evs[0]; r.Reason != agentik.ApprovalInterrupted || r.By != "alice" || *r.Approved {
		t.Fatalf("resolution %+v", r)
	}
	if end := evs[len(evs)-1]; end.Reason != agentik.EndInterrupted {
		t.Fatalf("end %+v", end)
	}
	if len(a.calls())+len(b.calls()) != 0 || len(h.llm.Requests()) != 1 {
		t.Fatal("a tool or the model ran after the interrupt")
	}
	if got := pendingIDs(t, c); got != "" {
		t.Fatalf("pending %q", got)
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("answer after interrupt: %v", err)
	}
	if info, _ := c.Info(h.ctx); info.Working {
		t.Fatal("working after interrupt")
	}
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns %v", open)
	}
	// The conversation stays usable.
	h.llm.Enqueue(llmtest.Text("fresh"))
	r2 := h.send(c, "again")
	until(t, s, endOf(r2.MessageID))
}

func TestApprovalTwoPendingEitherOrder(t *testing.T) {
	for _, order := range [][]string{{"c1", "c2"}, {"c2", "c1"}} {
		t.Run(strings.Join(order, "_then_"), func(t *testing.T) {
			h, a, b := approvalHarness(t)
			h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"x"}`).WithID("c1"), llmtest.Call("send_b", `{"to":"y"}`).WithID("c2")),
				llmtest.Text("both done"))
			c, s := h.conversation()
			res := h.send(c, "mail both")
			until(t, s, isType(agentik.EvAwaitingApproval))
			if got := pendingIDs(t, c); got != "c1,c2" {
				t.Fatalf("pending %q", got)
			}
			if err := approver(t, c).Resolve(h.ctx, order[0], agentik.Resolution{Approved: true}); err != nil {
				t.Fatal(err)
			}
			until(t, s, isType(agentik.EvApprovalResolved))
			if got := pendingIDs(t, c); got != order[1] {
				t.Fatalf("pending after one answer %q", got)
			}
			if len(h.llm.Requests()) != 1 || len(a.calls())+len(b.calls()) != 0 {
				t.Fatal("ran before every call was answered")
			}
			if info, _ := c.Info(h.ctx); !info.Working {
				t.Fatal("not working with one approval left")
			}
			if err := approver(t, c).Resolve(h.ctx, order[1], agentik.Resolution{Approved: true}); err != nil {
				t.Fatal(err)
			}
			until(t, s, endOf(res.MessageID))
			if len(a.calls()) != 1 || len(b.calls()) != 1 {
				t.Fatalf("calls %v %v", a.calls(), b.calls())
			}
			reqs := h.llm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls", len(reqs))
			}
			var ids []string
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" {
					ids = append(ids, m.ToolCallID)
				}
			}
			if strings.Join(ids, ",") != "c1,c2" {
				t.Fatalf("results fed back %v", ids)
			}
		})
	}
}

func TestApprovalMixedAskAndAllow(t *testing.T) {
	h, a, _ := approvalHarness(t)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("t1"), llmtest.Call("send_a", `{"to":"x"}`).WithID("c1")),
		llmtest.Text("done"))
	c, s := h.conversation()
	res := h.send(c, "time and mail")
	evs := until(t, s, isType(agentik.EvAwaitingApproval))
	// The allowed call ran while the other waits.
	if got, want := types(evs), "user_message,working,tool_call,tool_call,approval_requested,tool_result,awaiting_approval"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	if evs[5].Message.CallID != "t1" || evs[4].CallID != "c1" {
		t.Fatalf("events %+v", evs)
	}
	if len(h.llm.Requests()) != 1 {
		t.Fatal("model called again before the approval")
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); err != nil {
		t.Fatal(err)
	}
	until(t, s, endOf(res.MessageID))
	if len(a.calls()) != 1 {
		t.Fatal("approved call did not run")
	}
	msgs := journal(t, c)
	if journalTypes(msgs) != "user_message,tool_call,tool_call,tool_result,tool_result,assistant_message" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
}

func TestApprovalDenyPolicyHidesTool(t *testing.T) {
	h, _, _ := approvalHarness(t)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("delete_all", `{"to":"x"}`).WithID("d1")), llmtest.Text("no"))
	c, s := h.conversation()
	res := h.send(c, "delete")
	until(t, s, endOf(res.MessageID))
	for _, n := range h.llm.Requests()[0].ToolNames() {
		if n == "delete_all" {
			t.Fatal("denied tool offered to the model")
		}
	}
	msgs := journal(t, c)
	if msgs[2].Type != agentik.MsgToolResult || !msgs[2].IsError || !strings.Contains(agentik.JoinText(msgs[2].Content), "unknown tool") {
		t.Fatalf("a denied tool called anyway: %+v", msgs[2])
	}
}

func TestApprovalSurvivesRestart(t *testing.T) {
	for _, policy := range []string{engine.RestartResume, engine.RestartInterrupt} {
		t.Run(policy, func(t *testing.T) {
			onRestart := func(o *engine.Options) { o.OnRestart = policy }
			h, a, _ := approvalHarness(t, onRestart)
			h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"x"}`).WithID("c1")))
			c, s := h.conversation()
			res := h.send(c, "mail")
			until(t, s, isType(agentik.EvAwaitingApproval))
			h.stop()

			h.llm.Enqueue(llmtest.Text("sent after restart"))
			h.start(func(o *engine.Options) {
				pol, _ := agentik.ParseApprovalPolicy("send_*=ask")
				o.Tools = tools.NewRegistry(a)
				o.Approval = pol
				o.OnRestart = policy
			})
			c2, err := h.eng.Conversation(h.ctx, c.ID())
			if err != nil {
				t.Fatal(err)
			}
			s2, err := c2.Events(h.ctx, agentik.LiveOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			// A subscriber is told what waits.
			join := until(t, s2, isType(agentik.EvApprovalRequested))
			if types(join) != "working,approval_requested" || join[1].CallID != "c1" {
				t.Fatalf("join %s", types(join))
			}
			if got := pendingIDs(t, c2); got != "c1" {
				t.Fatalf("pending after restart %q", got)
			}
			if info, _ := c2.Info(h.ctx); !info.Working {
				t.Fatal("not working after restart")
			}
			if got := h.eng.PendingApprovals(); len(got) != 1 || got[0].CallID != "c1" {
				t.Fatalf("engine pending %+v", got)
			}
			if err := approver(t, c2).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); err != nil {
				t.Fatal(err)
			}
			until(t, s2, endOf(res.MessageID))
			if len(a.calls()) != 1 {
				t.Fatalf("tool ran %d times", len(a.calls()))
			}
			msgs := journal(t, c2)
			if journalTypes(msgs) != "user_message,tool_call,tool_result,assistant_message" {
				t.Fatalf("journal %s", journalTypes(msgs))
			}
			if got := h.eng.PendingApprovals(); len(got) != 0 {
				t.Fatalf("engine pending after answer %+v", got)
			}
		})
	}
}

func TestApprovalBusyPolicies(t *testing.T) {
	park := func(t *testing.T) (*harness, *recTool, agentik.Conversation, agentik.Stream[agentik.Event], agentik.SendResult) {
		h, a, _ := approvalHarness(t)
		h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_a", `{"to":"x"}`).WithID("c1")))
		c, s := h.conversation()
		res := h.send(c, "mail")
		until(t, s, isType(agentik.EvAwaitingApproval))
		return h, a, c, s, res
	}
	t.Run("reject", func(t *testing.T) {
		h, _, c, _, _ := park(t)
		_, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("x")}, IfBusy: agentik.BusyReject})
		if agentik.ErrorCode(err) != agentik.EBusy {
			t.Fatalf("reject while waiting: %v", err)
		}
		if n := len(journal(t, c)); n != 2 {
			t.Fatalf("journal grew to %d", n)
		}
	})
	t.Run("enqueue", func(t *testing.T) {
		h, a, c, s, r1 := park(t)
		r2 := h.send(c, "then this")
		if got := pendingIDs(t, c); got != "c1" {
			t.Fatalf("pending %q", got)
		}
		if len(h.llm.Requests()) != 1 {
			t.Fatal("queued message answered before the waiting turn")
		}
		h.llm.Enqueue(llmtest.Text("sent"), llmtest.Text("and this"))
		if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); err != nil {
			t.Fatal(err)
		}
		until(t, s, endOf(r1.MessageID))
		until(t, s, endOf(r2.MessageID))
		if len(a.calls()) != 1 {
			t.Fatal("approved call did not run")
		}
		msgs := journal(t, c)
		if journalTypes(msgs) != "user_message,tool_call,user_message,tool_result,assistant_message,assistant_message" ||
			msgs[4].ReplyTo != r1.MessageID || msgs[5].ReplyTo != r2.MessageID {
			t.Fatalf("journal %s", journalTypes(msgs))
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		h, a, c, s, r1 := park(t)
		h.llm.Enqueue(llmtest.Text("answering the new one"))
		r2 := h.send(c, "forget it", agentik.BusyInterrupt)
		until(t, s, endOf(r1.MessageID))
		until(t, s, endOf(r2.MessageID))
		if len(a.calls()) != 0 {
			t.Fatal("interrupted call ran")
		}
		msgs := journal(t, c)
		if journalTypes(msgs) != "user_message,tool_call,tool_result,user_message,assistant_message" || !msgs[2].IsError {
			t.Fatalf("journal %s", journalTypes(msgs))
		}
		evs, _ := h.store.Events(h.ctx, c.ID(), 0, 0)
		var interrupted string
		for _, ev := range evs {
			if ev.Type == agentik.EvInterrupted {
				interrupted = ev.Reason
			}
		}
		if interrupted != agentik.ReasonBusyPolicy {
			t.Fatalf("interrupted reason %q", interrupted)
		}
	})
	// The interrupt closes the waiting turn, and that is all it cuts: a
	// message queued behind it (which closing it let start) is answered.
	t.Run("interrupt with one queued", func(t *testing.T) {
		h, _, c, s, r1 := park(t)
		r2 := h.send(c, "then this") // queued behind the parked turn
		h.llm.Enqueue(llmtest.Text("answering the queued one"), llmtest.Text("answering the new one"))
		r3 := h.send(c, "forget it", agentik.BusyInterrupt)
		until(t, s, endOf(r1.MessageID))
		evs := until(t, s, endOf(r2.MessageID))
		if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
			t.Fatalf("the queued turn ended %s: %s", end.Reason, types(evs))
		}
		until(t, s, endOf(r3.MessageID))
	})
}

func TestParseApprovalPolicy(t *testing.T) {
	p, err := agentik.ParseApprovalPolicy("send_*=ask,delete_*=deny, send_note=allow ,")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"send_mail": "ask", "send_note": "ask", "delete_x": "deny", "other": "allow"} {
		if got := p.Action(name); got != want {
			t.Errorf("%s: %s, want %s (first match wins)", name, got, want)
		}
	}
	for _, bad := range []string{"x", "a=maybe", "=ask", "[=ask"} {
		if _, err := agentik.ParseApprovalPolicy(bad); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestApprovalInterruptWhileAllowedCallsRun: the turn is interrupted while
// an allowed call of the response still runs and the other call waits for
// approval (the turn has not parked yet): the waiting call ends with
// approval_resolved (denied, reason interrupted, by who interrupted) and
// its denial, committed with the interrupted record; one call answered
// before the interrupt keeps its answer. Nothing waits afterwards.
func TestApprovalInterruptWhileAllowedCallsRun(t *testing.T) {
	bt := blockTool{started: make(chan struct{})}
	a, b := &recTool{name: "send_a"}, &recTool{name: "send_b"}
	h := newHarness(t, func(o *engine.Options) {
		o.Tools = tools.NewRegistry(bt, a, b)
		o.Approval = agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}
		o.ToolTimeout = time.Hour
	})
	h.ctx = asUser(h.ctx)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("block", `{}`).WithID("blk"),
		llmtest.Call("send_a", `{"to":"x"}`).WithID("c1"), llmtest.Call("send_b", `{"to":"y"}`).WithID("c2")))
	c, s := h.conversation()
	res := h.send(c, "block and mail")
	<-bt.started
	// c2 is answered while the allowed call runs; c1 is not.
	if err := approver(t, c).Resolve(h.ctx, "c2", agentik.Resolution{Approved: true}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Interrupt(h.ctx); err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	evs := until(t, s, endOf(res.MessageID))
	var resolved []agentik.Event
	for _, ev := range evs {
		if ev.Type == agentik.EvApprovalResolved {
			resolved = append(resolved, ev)
		}
	}
	if len(resolved) != 2 || resolved[0].CallID != "c2" || !*resolved[0].Approved {
		t.Fatalf("resolutions %+v (events %s)", resolved, types(evs))
	}
	if r := resolved[1]; r.CallID != "c1" || *r.Approved || r.Reason != agentik.ApprovalInterrupted || r.By != "alice" {
		t.Fatalf("interrupt resolution %+v", r)
	}
	if got := types(evs[len(evs)-4:]); got != "approval_resolved,tool_failed,interrupted,end" {
		t.Fatalf("close %s (all %s)", got, types(evs))
	}
	if len(a.calls())+len(b.calls()) != 0 || len(h.llm.Requests()) != 1 {
		t.Fatal("a tool or the model ran after the interrupt")
	}
	// Every approval_requested has its approval_resolved, in the store.
	stored, err := h.store.ApprovalEvents(h.ctx, c.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	req, done := map[string]bool{}, map[string]bool{}
	for _, ev := range stored {
		switch ev.Type {
		case agentik.EvApprovalRequested:
			req[ev.CallID] = true
		case agentik.EvApprovalResolved:
			if done[ev.CallID] {
				t.Fatalf("%s answered twice", ev.CallID)
			}
			done[ev.CallID] = true
		}
	}
	if len(req) != 2 || len(done) != 2 || !done["c1"] || !done["c2"] {
		t.Fatalf("requested %v resolved %v", req, done)
	}
	if got := pendingIDs(t, c); got != "" {
		t.Fatalf("pending %q", got)
	}
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("answer after interrupt: %v", err)
	}
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns %v", open)
	}
	// The model of the next turn sees the round whole: the call cut short,
	// the denial of the close, the approved call that never ran.
	h.llm.Enqueue(llmtest.Text("ok"))
	res = h.send(c, "what happened?")
	until(t, s, endOf(res.MessageID))
	got := map[string]string{}
	for _, m := range h.llm.Requests()[1].Messages {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Text()
		}
	}
	want := map[string]string{"blk": agentik.ToolInterruptedText, "c1": agentik.DeniedText(agentik.ApprovalInterrupted), "c2": agentik.ToolNotRunText}
	if len(got) != len(want) {
		t.Fatalf("tool results the model sees: %v", got)
	}
	for id, text := range want {
		if !strings.HasSuffix(got[id], text) { // the adapter marks errors ("Error: …")
			t.Errorf("%s: the model sees %q, want %q", id, got[id], text)
		}
	}
}

// gatedTool is a tool like send_mail: once started it finishes whatever
// happens to its context (the mail goes out), when the test releases it.
type gatedTool struct {
	name             string
	started, release chan struct{}
}

func (g gatedTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: g.name, Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (g gatedTool) Call(context.Context, agentik.RawJSON) (agentik.ToolResult, error) {
	close(g.started)
	<-g.release
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("mail sent")}}, nil
}

// TestApprovedCallInterruptedWhileItRuns: a call approved and then
// interrupted while it runs has its result in the journal, and the model of
// the next turn sees it (issue 44.1: the mail went out and neither the
// transcript nor the model knew). Deterministic: the tool is gated.
func TestApprovedCallInterruptedWhileItRuns(t *testing.T) {
	mail := gatedTool{name: "send_mail", started: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) {
		o.Tools = tools.NewRegistry(mail)
		o.Approval = agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}
		o.ToolTimeout = time.Hour
	})
	h.ctx = asUser(h.ctx)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{}`).WithID("c1")), llmtest.Text("noted"))
	c, s := h.conversation()
	res := h.send(c, "mail bob")
	until(t, s, isType(agentik.EvAwaitingApproval))
	if err := approver(t, c).Resolve(h.ctx, "c1", agentik.Resolution{Approved: true}); err != nil {
		t.Fatal(err)
	}
	<-mail.started
	if ok, err := c.Interrupt(h.ctx); err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	close(mail.release) // the mail goes out after the interrupt
	evs := until(t, s, endOf(res.MessageID))
	if got := types(evs[len(evs)-3:]); got != "tool_result,interrupted,end" {
		t.Fatalf("close %s (all %s)", got, types(evs))
	}
	msgs := journal(t, c)
	if got := journalTypes(msgs); !strings.HasSuffix(got, "tool_call,tool_result") {
		t.Fatalf("journal %s", got)
	}
	if r := msgs[len(msgs)-1]; r.CallID != "c1" || r.IsError || agentik.JoinText(r.Content) != "mail sent" {
		t.Fatalf("result %+v", r)
	}
	if info, _ := c.Info(h.ctx); info.Working {
		t.Fatal("still working")
	}
	if got := pendingIDs(t, c); got != "" {
		t.Fatalf("pending %q", got)
	}
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns %v", open)
	}
	res = h.send(c, "did it go?")
	until(t, s, endOf(res.MessageID))
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	var sawResult bool
	for _, m := range reqs[1].Messages {
		sawResult = sawResult || (m.Role == "tool" && m.ToolCallID == "c1" && m.Text() == "mail sent")
	}
	if !sawResult {
		t.Fatalf("the model does not see what ran: %+v", reqs[1].Messages)
	}
}
