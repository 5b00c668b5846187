package ws

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// sendTool records the arguments of every call.
type sendTool struct {
	mu   sync.Mutex
	args []string
}

func (*sendTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Description: "sends a mail", Parameters: agentik.RawJSON(
		`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`)}
}

func (s *sendTool) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.args = append(s.args, string(args))
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("sent to " + string(args))}}, nil
}

func (s *sendTool) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.args...)
}

// approvalStack is a stack whose agent asks before send_*.
func approvalStack(t *testing.T) (*stack, *sendTool) {
	tool := &sendTool{}
	policy, err := agentik.ParseApprovalPolicy("send_*=ask")
	if err != nil {
		t.Fatal(err)
	}
	return newStack(t, Options{}, nil, func(o *engine.Options) {
		o.Tools = tools.NewRegistry(tools.CurrentTime{}, tool)
		o.Approval = policy
	}), tool
}

func wantApprovalRequest(t *testing.T, c *Conn) *ApprovalRequest {
	t.Helper()
	m := next(t, c)
	r, ok := m.(*ApprovalRequest)
	if !ok {
		t.Fatalf("want APPROVAL_REQUEST, got %#v", m)
	}
	return r
}

// TestApprovalOverWebSocket: the waiting call reaches the client as
// APPROVAL_REQUEST (and a client that connects while it waits gets it
// after STATUS); bad answers get ERROR invalid / not_found / conflict and
// change nothing; an approval with edited arguments runs the tool with
// them and the turn ends with the answer's text and END, which a client
// that ignores the request sees too.
func TestApprovalOverWebSocket(t *testing.T) {
	s, tool := approvalStack(t)
	c := s.dial(nil)
	s.llm.Enqueue(
		llmtest.Stream().Role().ToolCall(0, "call_m1", "send_mail", `{"to":"bob"}`).Finish("tool_calls").Done(),
		llmtest.Text("Mail sent"),
	)
	if err := c.Send(testCtx(t), "mail bob"); err != nil {
		t.Fatal(err)
	}
	req := wantApprovalRequest(t, c)
	if req.CallID != "call_m1" || req.Name != "send_mail" || string(req.Arguments) != `{"to":"bob"}` {
		t.Fatalf("request %+v", req)
	}

	// A client that connects now is told what waits, right after STATUS.
	late := s.dial(&DialOptions{ConversationID: c.ConversationID()})
	if !late.Status().Working {
		t.Fatal("a waiting turn should be working")
	}
	if r := wantApprovalRequest(t, late); r.CallID != "call_m1" || string(r.Arguments) != `{"to":"bob"}` {
		t.Fatalf("late request %+v", r)
	}

	// Refused answers: the frame's shape, an unknown call, arguments that
	// break the tool's schema.
	ctx := testCtx(t)
	c.Answer(ctx, &Approval{CallID: "call_m1", Approved: false, Arguments: []byte(`{"to":"eve"}`)})
	wantError(t, c, CodeInvalid)
	c.Answer(ctx, &Approval{CallID: "call_nope", Approved: true})
	wantError(t, c, agentik.ENotFound)
	c.Answer(ctx, &Approval{CallID: "call_m1", Approved: true, Arguments: []byte(`{"to":1}`)})
	wantError(t, c, agentik.EInvalid)
	if got := tool.calls(); len(got) != 0 {
		t.Fatalf("the tool ran before approval: %v", got)
	}

	if err := c.Answer(ctx, &Approval{CallID: "call_m1", Approved: true, Reason: "ok", Arguments: []byte(`{"to": "alice"}`)}); err != nil {
		t.Fatal(err)
	}
	text, end, others := answer(t, c)
	if text != "Mail sent" || end.Reason != EndCompleted || len(others) != 0 {
		t.Fatalf("answer %q %+v %#v", text, end, others)
	}
	text, end, others = answer(t, late)
	if text != "Mail sent" || end.Reason != EndCompleted || len(others) != 0 {
		t.Fatalf("late client %q %+v %#v", text, end, others)
	}
	if got := tool.calls(); len(got) != 1 || got[0] != `{"to":"alice"}` {
		t.Fatalf("tool calls %v", got)
	}

	// Answering twice is a conflict; the connection stays usable.
	c.Answer(ctx, &Approval{CallID: "call_m1", Approved: false})
	wantError(t, c, agentik.EConflict)
	s.llm.Enqueue(llmtest.Text("still here"))
	c.Send(ctx, "hello")
	if text, _, _ := answer(t, c); text != "still here" {
		t.Fatalf("after conflict %q", text)
	}
	if got := tool.calls(); len(got) != 1 {
		t.Fatalf("tool calls %v", got)
	}
}

// TestApprovalDeniedOverWebSocket: a denial's reason reaches the model as
// the tool's error result and the turn goes on to END.
func TestApprovalDeniedOverWebSocket(t *testing.T) {
	s, tool := approvalStack(t)
	c := s.dial(&DialOptions{Events: []string{ExtTools}})
	s.llm.Enqueue(
		llmtest.Stream().Role().ToolCall(0, "call_d1", "send_mail", `{"to":"bob"}`).Finish("tool_calls").Done(),
		llmtest.Text("Not sent"),
	)
	c.Send(testCtx(t), "mail bob")
	if m, ok := next(t, c).(*ToolCall); !ok || m.CallID != "call_d1" {
		t.Fatalf("want TOOL_CALL first, got %#v", m)
	}
	req := wantApprovalRequest(t, c)
	c.Answer(testCtx(t), &Approval{CallID: req.CallID, Approved: false, Reason: "not now"})
	text, end, others := answer(t, c)
	if text != "Not sent" || end.Reason != EndCompleted {
		t.Fatalf("answer %q %+v", text, end)
	}
	if len(others) != 1 {
		t.Fatalf("others %#v", others)
	}
	if r, ok := others[0].(*ToolResult); !ok || !r.IsError || r.Text != agentik.DeniedText("not now") {
		t.Fatalf("tool result %#v", others[0])
	}
	if got := tool.calls(); len(got) != 0 {
		t.Fatalf("a denied tool ran: %v", got)
	}
	reqs := s.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; m.Role != "tool" || m.ToolCallID != "call_d1" || !strings.Contains(string(m.Content), "not now") {
		t.Fatalf("model got %+v", m)
	}
}

func TestDecodeApprovalLimits(t *testing.T) {
	long := `{"type":"APPROVAL","call_id":"c","approved":false,"reason":"` + strings.Repeat("r", agentik.MaxApprovalReason+1) + `"}`
	if _, err := DecodeClientMessage([]byte(long)); err == nil || err.(*Error).Code != CodeInvalid {
		t.Fatalf("long reason: %v", err)
	}
	m, err := DecodeClientMessage([]byte(`{"type":"APPROVAL","call_id":"c","approved":true,"arguments":{ "to" : "x" }}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.(*Approval); string(a.Arguments) != `{"to":"x"}` || !a.Approved || a.CallID != "c" {
		t.Fatalf("decoded %+v", a)
	}
}
