package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

type mailTool struct {
	mu   sync.Mutex
	args []string
}

func (m *mailTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Parameters: agentik.RawJSON(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)}
}

func (m *mailTool) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.args = append(m.args, string(args))
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("sent")}}, nil
}

func (m *mailTool) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.args...)
}

// newApprovalEnv is the real stack with an agent that asks before send_*.
func newApprovalEnv(t *testing.T) (*env, *llmtest.Server, *mailTool) {
	t.Helper()
	mail := &mailTool{}
	policy, _ := agentik.ParseApprovalPolicy("send_*=ask")
	st := stacktest.New(t, stacktest.Engine(func(o *engine.Options) {
		o.Tools = tools.NewRegistry(mail)
		o.Approval = policy
	}))
	return newEnv(t, st.Engine, Options{Ready: st.Store.Ping}), st.LLM, mail
}

func TestApprovalsREST(t *testing.T) {
	e, llm, mail := newApprovalEnv(t)
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_1")), llmtest.Text("Mail sent."))
	st, b := e.raw("POST", DefaultPrefix+"/conversations", "application/json", `{}`)
	if st != 201 {
		t.Fatalf("create %d %s", st, b)
	}
	var info agentik.ConversationInfo
	json.Unmarshal(b, &info)
	p := DefaultPrefix + "/conversations/" + info.ID
	ev := e.openSSE(p + "/events")
	if st, b := e.raw("POST", p+"/messages", "application/json", `{"content":[{"type":"text","text":"mail bob"}]}`); st != 202 {
		t.Fatalf("send %d %s", st, b)
	}
	var req sseEv
	for req.event != agentik.EvApprovalRequested {
		req = ev.next()
	}
	if req.id == "" || req.ev.CallID != "call_1" || req.ev.Name != "send_mail" || string(req.ev.Arguments) != `{"to":"bob"}` || req.ev.ReplyTo == "" {
		t.Fatalf("SSE approval_requested %+v", req)
	}
	for next := ev.next(); next.event != agentik.EvAwaitingApproval; next = ev.next() {
	}
	st, b = e.raw("GET", p, "", "")
	if st != 200 || !strings.Contains(string(b), `"working":true`) {
		t.Fatalf("info while waiting %d %s", st, b)
	}
	st, b = e.raw("GET", p+"/approvals", "", "")
	var list approvalList
	if st != 200 || json.Unmarshal(b, &list) != nil || len(list.Approvals) != 1 || list.Approvals[0].CallID != "call_1" ||
		list.Approvals[0].ConversationID != info.ID || len(list.Approvals[0].Schema) == 0 {
		t.Fatalf("GET approvals %d %s", st, b)
	}
	// Hostile and wrong answers: a clear 4xx, nothing changes.
	for _, c := range []struct {
		path, body, code string
		status           int
	}{
		{p + "/approvals/call_1", `{"approved":"yes"}`, "invalid", 422},
		{p + "/approvals/call_1", `{}`, "invalid", 422},
		{p + "/approvals/call_1", `{"approved":true`, "malformed", 400},
		{p + "/approvals/call_1", `{"approved":true,"arguments":[1]}`, "invalid", 422},
		{p + "/approvals/call_1", `{"approved":true,"arguments":{"to":5}}`, "invalid", 422},
		{p + "/approvals/call_1", `{"approved":false,"arguments":{"to":"x"}}`, "invalid", 422},
		{p + "/approvals/nope", `{"approved":true}`, "not_found", 404},
		{DefaultPrefix + "/conversations/" + agentik.NewID() + "/approvals/call_1", `{"approved":true}`, "not_found", 404},
	} {
		st, b := e.raw("POST", c.path, "application/json", c.body)
		if st != c.status || errorCode(t, b) != c.code {
			t.Errorf("POST %s %s: %d %s, want %d %s", c.path, c.body, st, b, c.status, c.code)
		}
	}
	if len(mail.calls()) != 0 {
		t.Fatal("a refused answer ran the tool")
	}
	st, b = e.raw("POST", p+"/approvals/call_1", "application/json", `{"approved":true,"arguments":{"to":"carol"}}`)
	if st != 200 || string(b) != `{"call_id":"call_1","approved":true}`+"\n" && string(b) != `{"call_id":"call_1","approved":true}` {
		t.Fatalf("approve %d %q", st, b)
	}
	var res sseEv
	for res.event != agentik.EvApprovalResolved {
		res = ev.next()
	}
	if res.ev.Approved == nil || !*res.ev.Approved || res.ev.CallID != "call_1" || string(res.ev.Arguments) != `{"to":"carol"}` {
		t.Fatalf("SSE approval_resolved %+v", res)
	}
	for next := ev.next(); next.event != agentik.EvEnd; next = ev.next() {
	}
	st, b = e.raw("POST", p+"/approvals/call_1", "application/json", `{"approved":false}`)
	if st != 409 || errorCode(t, b) != "conflict" {
		t.Fatalf("second answer %d %s", st, b)
	}
	if got := mail.calls(); len(got) != 1 || got[0] != `{"to":"carol"}` {
		t.Fatalf("tool calls %v", got)
	}
	if st, b := e.raw("GET", p+"/approvals", "", ""); st != 200 || string(b) != `{"approvals":[]}`+"\n" && string(b) != `{"approvals":[]}` {
		t.Fatalf("GET approvals after %d %q", st, b)
	}
}

func TestApprovalsGoClientAndReconnect(t *testing.T) {
	e, llm, mail := newApprovalEnv(t)
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_1")), llmtest.Text("Not sent."))
	ctx := testCtx(t)
	info, err := e.client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := e.client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("mail")}}); err != nil {
		t.Fatal(err)
	}
	for ev := range s.C() {
		if ev.Type == agentik.EvAwaitingApproval {
			break
		}
	}
	s.Close()
	// A subscriber that (re)connects live-only is told what is pending.
	s2, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	first, second := <-s2.C(), <-s2.C()
	if first.Type != agentik.EvWorking || second.Type != agentik.EvApprovalRequested || second.CallID != "call_1" {
		t.Fatalf("join %+v %+v", first, second)
	}
	list, err := conv.Approvals(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("approvals %v %v", list, err)
	}
	if err := conv.Resolve(ctx, "call_1", agentik.Resolution{Approved: false, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if err := conv.Resolve(ctx, "call_1", agentik.Resolution{Approved: true}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("second answer: %v", err)
	}
	for ev := range s2.C() {
		if ev.Type == agentik.EvEnd {
			break
		}
	}
	if len(mail.calls()) != 0 {
		t.Fatal("denied call ran")
	}
}

func FuzzDecodeResolution(f *testing.F) {
	for _, s := range []string{`{"approved":true}`, `{"approved":false,"reason":"no"}`, `{"approved":true,"arguments":{"a":1}}`,
		`{"approved":true,"arguments":[1]}`, `{}`, `null`, `{"approved":true,"approved":false}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := agentik.DecodeResolution(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EInvalid && c != agentik.EMalformed {
				t.Fatalf("error code %q for %q", c, b)
			}
			return
		}
		if len(r.Arguments) > 0 && (!r.Approved || !json.Valid(r.Arguments) || r.Arguments[0] != '{') {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}
