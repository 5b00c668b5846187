package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestContextAndApprovalBoundsREST: a message whose metadata passes the
// context bound, and an approval whose edited arguments pass the
// text bound, get 413 too_large and change nothing (issue 44.4: 15 MB of
// metadata, or of edited arguments, were stored and sent to the model).
func TestContextAndApprovalBoundsREST(t *testing.T) {
	e, llm, mail := newApprovalEnv(t)
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_1")), llmtest.Text("Mail sent."))
	st, b := e.raw("POST", DefaultPrefix+"/conversations", "application/json", `{}`)
	if st != 201 {
		t.Fatalf("create %d %s", st, b)
	}
	var info agentik.ConversationInfo
	json.Unmarshal(b, &info)
	p := DefaultPrefix + "/conversations/" + info.ID

	huge := strings.Repeat("x", 2<<20)
	st, b = e.raw("POST", p+"/messages", "application/json",
		`{"content":[{"type":"text","text":"hi"}],"context":{"metadata":{"k":"`+huge+`"}}}`)
	if st != 413 || errorCode(t, b) != "too_large" {
		t.Fatalf("metadata of 2 MiB: %d %.200s", st, b)
	}
	if st, b := e.raw("GET", p+"/messages", "", ""); st != 200 || strings.Contains(string(b), `"seq"`) {
		t.Fatalf("a refused message was stored: %d %.300s", st, b)
	}

	ev := e.openSSE(p + "/events")
	if st, b := e.raw("POST", p+"/messages", "application/json", `{"content":[{"type":"text","text":"mail bob"}]}`); st != 202 {
		t.Fatalf("send %d %s", st, b)
	}
	for next := ev.next(); next.event != agentik.EvAwaitingApproval; next = ev.next() {
	}
	for _, body := range []string{
		`{"approved":true,"arguments":{"to":"` + huge + `"}}`,
	} {
		st, b := e.raw("POST", p+"/approvals/call_1", "application/json", body)
		if st != 413 || errorCode(t, b) != "too_large" {
			t.Errorf("%.40s…: %d %.200s", body, st, b)
		}
	}
	if len(mail.calls()) != 0 {
		t.Fatal("a refused answer ran the tool")
	}
	st, b = e.raw("GET", p+"/approvals", "", "")
	if st != 200 || !strings.Contains(string(b), `"call_1"`) {
		t.Fatalf("the call no longer waits: %d %s", st, b)
	}
	if st, b := e.raw("POST", p+"/approvals/call_1", "application/json", `{"approved":true}`); st != 200 {
		t.Fatalf("approve %d %s", st, b)
	}
	for next := ev.next(); next.event != agentik.EvEnd; next = ev.next() {
	}
	if got := mail.calls(); len(got) != 1 || got[0] != `{"to":"bob"}` {
		t.Fatalf("tool calls %v", got)
	}
}
