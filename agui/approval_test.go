package agui

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// sendMail is a server tool the approval policy asks about.
type sendMail struct{}

func (sendMail) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Description: "Send a mail",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"to":{"type":"string"},"text":{"type":"string"}},"required":["to"]}`), Source: "builtin"}
}

func (sendMail) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("sent " + string(args))}}, nil
}

// withApproval: echo runs, send_* asks.
func withApproval(o *engine.Options, _ *Options) {
	o.Tools = tools.NewRegistry(echoTool{}, sendMail{})
	o.Approval = agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}
}

func lastEvent(r response) map[string]any { return r.events[len(r.events)-1] }

// interrupts returns the interrupts of a run's RUN_FINISHED (nil if none).
func interrupts(t *testing.T, r response) []map[string]any {
	t.Helper()
	last := lastEvent(r)
	if last["type"] != RunFinished {
		t.Fatalf("run ends %v", last)
	}
	o, _ := last["outcome"].(map[string]any)
	if o == nil || o["type"] != OutcomeInterrupt {
		return nil
	}
	var out []map[string]any
	for _, x := range o["interrupts"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func texts(r response) string {
	var b strings.Builder
	for _, ev := range r.events {
		if ev["type"] == TextMessageContent {
			b.WriteString(ev["delta"].(string))
		}
	}
	return b.String()
}

// approvalScript is the model of the approval runs: a response with an
// allowed and an asking call, the answer after the approval, a second
// asking call, the answer after its denial.
func approvalScript(e *env) {
	e.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob","text":"late"}`).WithID("call_mail"), llmtest.Call("echo", `{"x":1}`).WithID("call_echo")),
		llmtest.Text("Mail sent."),
		llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"eve"}`).WithID("call_mail2")),
		llmtest.Text("Not sent."))
}

// TestGoldenApprovalDialects: a turn that parks on a tool approval, as a
// 1.0 client sees it (RUN_FINISHED with an interrupt outcome, answered by
// resume: approve with edited arguments, then cancel) and as a pre-1.0
// client sees it (a plain success with the call left without a result,
// answered by a tool message each: a JSON approval, then "no").
func TestGoldenApprovalDialects(t *testing.T) {
	for _, d := range []struct {
		name  string
		input func(thread, run string, msgs ...map[string]any) map[string]any
		file  string
	}{{"1.0", input, "approval_1.0.golden"}, {"0.0", input00, "approval_0.0.golden"}} {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t, withApproval)
			approvalScript(e)
			thread := "thread-approval"
			conv := ConversationID("", thread)
			u1 := user("u1", "Mail bob that I am late")
			asst := map[string]any{"id": "m1", "role": "assistant", "toolCalls": []any{
				map[string]any{"id": "call_mail", "type": "function", "function": map[string]any{"name": "send_mail", "arguments": `{"to":"bob","text":"late"}`}},
				map[string]any{"id": "call_echo", "type": "function", "function": map[string]any{"name": "echo", "arguments": `{"x":1}`}}}}
			echoResult := map[string]any{"id": "r1", "role": "tool", "toolCallId": "call_echo", "content": `echo {"x":1}`}

			r1 := e.run(d.input(thread, "run-1", u1))
			ins := interrupts(t, r1)
			edited := map[string]any{"to": "bob@example.com", "text": "late"}
			var in2 map[string]any
			if d.name == "1.0" {
				if len(ins) != 1 || ins[0]["id"] != "call_mail" || ins[0]["toolCallId"] != "call_mail" || ins[0]["reason"] != ReasonToolApproval {
					t.Fatalf("interrupts %v", ins)
				}
				// The schema of the answer carries the tool's own.
				schema, _ := json.Marshal(ins[0]["responseSchema"])
				if !strings.Contains(string(schema), `"required":["to"]`) {
					t.Fatalf("responseSchema %s", schema)
				}
				in2 = d.input(thread, "run-2", u1, asst, echoResult)
				in2["resume"] = []any{map[string]any{"interruptId": "call_mail", "status": "resolved",
					"payload": map[string]any{"approved": true, "arguments": edited}}}
			} else {
				if ins != nil {
					t.Fatalf("pre-1.0 client got interrupts %v", ins)
				}
				a, _ := json.Marshal(map[string]any{"approved": true, "arguments": edited})
				in2 = d.input(thread, "run-2", u1, asst, echoResult,
					map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_mail", "content": string(a)})
			}
			r2 := e.run(in2)
			if texts(r2) != "Mail sent." || interrupts(t, r2) != nil {
				t.Fatalf("run 2: %v", typesOf(r2.events))
			}

			u2 := user("u2", "Now mail eve")
			r3 := e.run(d.input(thread, "run-3", u1, u2))
			var in4 map[string]any
			if d.name == "1.0" {
				if ins := interrupts(t, r3); len(ins) != 1 || ins[0]["id"] != "call_mail2" {
					t.Fatalf("run 3 interrupts %v", ins)
				}
				in4 = d.input(thread, "run-4", u1, u2)
				in4["resume"] = []any{map[string]any{"interruptId": "call_mail2", "status": "cancelled"}}
			} else {
				in4 = d.input(thread, "run-4", u1, u2, map[string]any{"id": "t2", "role": "tool", "toolCallId": "call_mail2", "content": "no"})
			}
			r4 := e.run(in4)
			if texts(r4) != "Not sent." {
				t.Fatalf("run 4: %v", typesOf(r4.events))
			}
			golden(t, d.file, transcript(r1, r2, r3, r4))

			// The tool ran once, with the edited arguments; the denial is a
			// tool error result the model saw.
			msgs := e.journal(conv)
			var results []string
			for _, m := range msgs {
				if m.Type == agentik.MsgToolResult {
					results = append(results, m.CallID+"="+agentik.JoinText(m.Content))
				}
			}
			want := `call_echo=echo {"x":1};call_mail=sent {"text":"late","to":"bob@example.com"};call_mail2=denied by the user`
			if d.name == "1.0" {
				want += ": cancelled"
			}
			if got := strings.Join(results, ";"); got != want {
				t.Fatalf("results %s\nwant    %s", got, want)
			}
			// Who answered is recorded: the anonymous caller here.
			n := 0
			e.waitDurable(conv, func(ev agentik.Event) bool {
				if ev.Type == agentik.EvApprovalResolved {
					n++
				}
				return n == 2
			})
		})
	}
}

// TestApprovalResumeErrors: answers that cannot be taken are refused
// before streaming with the native API's codes, and change nothing.
func TestApprovalResumeErrors(t *testing.T) {
	e := newEnvAuth(t, anyToken{}, withApproval)
	approvalScript(e)
	thread := "thread-errors"
	auth := func(who string) []string { return []string{"Authorization", "Bearer " + who} }
	post := func(who string, in map[string]any) response {
		b, _ := json.Marshal(in)
		return e.post(string(b), auth(who)...)
	}
	u1 := user("u1", "Mail bob")
	r1 := post("alice", input(thread, "run-1", u1))
	if r1.status != http.StatusOK {
		t.Fatalf("run 1: %d %s", r1.status, r1.body)
	}
	_, r1.events = parseFrames(t, r1.body)
	if ins := interrupts(t, r1); len(ins) != 1 {
		t.Fatalf("run 1 interrupts %v", ins)
	}
	resume := func(run string, entries ...map[string]any) map[string]any {
		in := input(thread, run, u1)
		list := make([]any, len(entries))
		for i, x := range entries {
			list[i] = x
		}
		in["resume"] = list
		return in
	}
	approve := map[string]any{"interruptId": "call_mail", "status": "resolved", "payload": map[string]any{"approved": true}}
	code := func(r response) string {
		var body struct{ Error struct{ Code string } }
		json.Unmarshal(r.body, &body)
		return body.Error.Code
	}
	for _, c := range []struct {
		name   string
		who    string
		in     map[string]any
		status int
		code   string
	}{
		{"unknown id", "alice", resume("r", map[string]any{"interruptId": "call_nope", "status": "resolved", "payload": map[string]any{"approved": true}}), 404, "not_found"},
		{"unknown id beside a good one", "alice", resume("r", approve, map[string]any{"interruptId": "call_nope", "status": "cancelled"}), 404, "not_found"},
		{"other principal", "mallory", resume("r", approve), 404, "not_found"},
		{"no payload", "alice", resume("r", map[string]any{"interruptId": "call_mail", "status": "resolved"}), 422, "invalid"},
		{"approved missing", "alice", resume("r", map[string]any{"interruptId": "call_mail", "status": "resolved", "payload": map[string]any{"reason": "x"}}), 422, "invalid"},
		{"arguments not matching the schema", "alice", resume("r", map[string]any{"interruptId": "call_mail", "status": "resolved",
			"payload": map[string]any{"approved": true, "arguments": map[string]any{"text": "no recipient"}}}), 422, "invalid"},
		{"arguments with a denial", "alice", resume("r", map[string]any{"interruptId": "call_mail", "status": "resolved",
			"payload": map[string]any{"approved": false, "arguments": map[string]any{"to": "x"}}}), 422, "invalid"},
		{"bad status", "alice", resume("r", map[string]any{"interruptId": "call_mail", "status": "maybe"}), 422, "invalid"},
		{"twice in one run", "alice", resume("r", approve, approve), 422, "invalid"},
		{"bad tool message", "alice", input(thread, "r", u1, map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_mail", "content": "perhaps"}), 422, "invalid"},
	} {
		r := post(c.who, c.in)
		if r.status != c.status || code(r) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
		}
	}
	// Nothing changed: the call still waits, and the model was asked once.
	conv, err := e.eng.Conversation(agentik.WithPrincipal(testCtx(t), "alice"), ConversationID("alice", thread))
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	pend, err := conv.Approvals(agentik.WithPrincipal(testCtx(t), "alice"))
	if err != nil || len(pend) != 1 || pend[0].CallID != "call_mail" {
		t.Fatalf("pending %v %v", pend, err)
	}
	if n := len(e.llm.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	// A reloaded 1.0 client (no messages, no resume) is told what waits.
	reload := post("alice", input(thread, "run-reload"))
	_, reload.events = parseFrames(t, reload.body)
	if ins := interrupts(t, reload); len(ins) != 1 || ins[0]["id"] != "call_mail" || reload.events[1]["type"] != MessagesSnapshot {
		t.Fatalf("reload %v", typesOf(reload.events))
	}
	// The answer, then the same answer again: 409 conflict.
	ok := post("alice", resume("run-2", approve))
	_, ok.events = parseFrames(t, ok.body)
	if ok.status != http.StatusOK || texts(ok) != "Mail sent." {
		t.Fatalf("resume: %d %v", ok.status, typesOf(ok.events))
	}
	if r := post("alice", resume("run-3", approve)); r.status != http.StatusConflict || code(r) != "conflict" {
		t.Fatalf("second answer: %d %s", r.status, r.body)
	}
	if r := post("mallory", resume("run-3", approve)); r.status != http.StatusNotFound {
		t.Fatalf("other principal after: %d %s", r.status, r.body)
	}
}

// TestApprovalMessageWhileWaiting: a 1.0 client that sends a new message
// instead of answering (a fresh client without the interrupt) gets the
// waiting interrupts back at once; the message waits behind the parked
// turn (enqueue) and is answered after it.
func TestApprovalMessageWhileWaiting(t *testing.T) {
	e := newEnv(t, withApproval)
	e.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")),
		llmtest.Text("Mail sent."),
		llmtest.Text("Second answer."))
	thread := "thread-busy"
	u1, u2 := user("u1", "Mail bob"), user("u2", "And then?")
	e.run(input(thread, "run-1", u1))
	r2 := e.run(input(thread, "run-2", u1, u2))
	if ins := interrupts(t, r2); len(ins) != 1 || ins[0]["id"] != "call_mail" {
		t.Fatalf("run 2 %v", typesOf(r2.events))
	}
	in := input(thread, "run-3", u1, u2)
	in["resume"] = []any{map[string]any{"interruptId": "call_mail", "status": "resolved", "payload": map[string]any{"approved": true}}}
	if r3 := e.run(in); texts(r3) != "Mail sent." {
		t.Fatalf("run 3 %v", typesOf(r3.events))
	}
	conv := ConversationID("", thread)
	e.waitDurable(conv, func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && agentik.JoinText(ev.Message.Content) == "Second answer."
	})
}
