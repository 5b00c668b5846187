package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// mailTool is a server tool the approval policy asks about; it records the
// arguments of each call.
type mailTool struct {
	mu   sync.Mutex
	args []string
}

func (m *mailTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Description: "Send a mail",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"to":{"type":"string"},"text":{"type":"string"}},"required":["to"]}`)}
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

func approvalEnv(t *testing.T) (*env, *mailTool) {
	mail := &mailTool{}
	e := newEnv(t, envOpts{tools: []agentik.Tool{mail},
		approval: agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}})
	return e, mail
}

// answerMsg is a message on an existing task carrying data parts (v1 or
// 0.3 form).
func answerMsg(v1 bool, taskID, contextID string, data ...map[string]any) map[string]any {
	parts := make([]any, len(data))
	for i, d := range data {
		if v1 {
			parts[i] = map[string]any{"data": d}
		} else {
			parts[i] = map[string]any{"kind": "data", "data": d}
		}
	}
	m := map[string]any{"messageId": "answer-" + agentik.NewID(), "taskId": taskID, "contextId": contextID, "parts": parts}
	if v1 {
		m["role"] = "ROLE_USER"
	} else {
		m["kind"], m["role"] = "message", "user"
	}
	return m
}

// taskOf decodes the task of a result (v1 wraps it in {"task":…} for
// SendMessage).
type wireTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string `json:"state"`
		Message struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

func taskOf(t *testing.T, raw json.RawMessage) wireTask {
	t.Helper()
	var w struct {
		Task *wireTask `json:"task"`
	}
	if json.Unmarshal(raw, &w) == nil && w.Task != nil {
		return *w.Task
	}
	var task wireTask
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatalf("task: %v: %s", err, raw)
	}
	return task
}

// waitingCalls returns the call ids of the data parts of an input-required
// status message.
func waitingCalls(t *testing.T, task wireTask) []string {
	t.Helper()
	var ids []string
	for _, p := range task.Status.Message.Parts {
		if d, ok := p["data"]; ok {
			var c struct {
				CallID string `json:"call_id"`
				Name   string `json:"name"`
			}
			if err := json.Unmarshal(d, &c); err != nil || c.Name != "send_mail" {
				t.Fatalf("data part %s", d)
			}
			ids = append(ids, c.CallID)
		}
	}
	return ids
}

func answerText(task wireTask) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestApprovalSendAndGet: message/send (blocking) returns the task
// input-required with a DataPart for the waiting call, tasks/get reads the
// same, and a message on the same taskId with a DataPart approving with
// edited arguments continues the turn to completed.
func TestApprovalSendAndGet(t *testing.T) {
	for _, v := range []struct {
		name, send, get, inputRequired, completed string
		msg                                       func(text, ctx string) map[string]any
	}{
		{"v1", "SendMessage", "GetTask", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED", v1Msg},
		{"v03", "message/send", "tasks/get", "input-required", "completed", v03Msg},
	} {
		t.Run(v.name, func(t *testing.T) {
			e, mail := approvalEnv(t)
			e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob","text":"late"}`).WithID("call_mail")), llmtest.Text("Mail sent."))
			r := e.rpc(v.send, map[string]any{"message": v.msg("mail bob", "")})
			if r.Error != nil {
				t.Fatalf("send: %+v", r.Error)
			}
			golden(t, v.name+"-input-required", r.Result)
			task := taskOf(t, r.Result)
			if task.Status.State != v.inputRequired || strings.Join(waitingCalls(t, task), ",") != "call_mail" {
				t.Fatalf("send: %s", r.raw)
			}
			g := e.rpc(v.get, map[string]any{"id": task.ID})
			if got := taskOf(t, g.Result); got.Status.State != v.inputRequired || strings.Join(waitingCalls(t, got), ",") != "call_mail" {
				t.Fatalf("get: %s", g.raw)
			}
			if n := len(mail.calls()); n != 0 {
				t.Fatalf("the tool ran %d times before the answer", n)
			}
			a := e.rpc(v.send, map[string]any{"message": answerMsg(v.name == "v1", task.ID, task.ContextID,
				map[string]any{"call_id": "call_mail", "approved": true, "arguments": map[string]any{"to": "bob@example.com", "text": "late"}})})
			if a.Error != nil {
				t.Fatalf("answer: %+v", a.Error)
			}
			done := taskOf(t, a.Result)
			if done.ID != task.ID || done.Status.State != v.completed || answerText(done) != "Mail sent." {
				t.Fatalf("answer: %s", a.raw)
			}
			if got := mail.calls(); len(got) != 1 || got[0] != `{"text":"late","to":"bob@example.com"}` {
				t.Fatalf("tool calls %v", got)
			}
			// The task is over: it takes no more input.
			again := e.rpc(v.send, map[string]any{"message": answerMsg(v.name == "v1", task.ID, task.ContextID,
				map[string]any{"call_id": "call_mail", "approved": true})})
			if again.Error == nil || again.Error.Code != CodeInvalidParams {
				t.Fatalf("answer to a completed task: %s", again.raw)
			}
		})
	}
}

// TestApprovalStream: message/stream ends with a final input-required
// status; the answer (the text "no") on message/stream continues the same
// task to completed, and the model got the denial.
func TestApprovalStream(t *testing.T) {
	for _, v := range []struct {
		name, stream, resub string
		msg                 func(text, ctx string) map[string]any
	}{{"v1", "SendStreamingMessage", "SubscribeToTask", v1Msg}, {"v03", "message/stream", "tasks/resubscribe", v03Msg}} {
		t.Run(v.name, func(t *testing.T) {
			e, mail := approvalEnv(t)
			e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")), llmtest.Text("Not sent."))
			evs := e.sse(v.stream, map[string]any{"message": v.msg("mail bob", "")}, nil)
			first := taskOf(t, evs[0])
			last := string(evs[len(evs)-1])
			if !strings.Contains(last, "INPUT_REQUIRED") && !strings.Contains(last, `"input-required"`) {
				t.Fatalf("stream ends %s", last)
			}
			if v.name == "v03" && !strings.Contains(last, `"final":true`) {
				t.Fatalf("0.3 stream ends without final: %s", last)
			}
			if !strings.Contains(last, `"call_id":"call_mail"`) {
				t.Fatalf("no data part for the call: %s", last)
			}
			// A resubscribe to the waiting task gets it and ends.
			rs := e.sse(v.resub, map[string]any{"id": first.ID}, nil)
			if len(rs) != 1 || !strings.Contains(string(rs[0]), `"call_id":"call_mail"`) {
				t.Fatalf("resubscribe %s", rs)
			}
			no := v.msg("no", first.ContextID)
			no["taskId"] = first.ID
			out := e.sse(v.stream, map[string]any{"message": no}, nil)
			end := string(out[len(out)-1])
			if !strings.Contains(end, "COMPLETED") && !strings.Contains(end, `"completed"`) {
				t.Fatalf("answer stream ends %s", end)
			}
			var text strings.Builder
			for _, ev := range out {
				var a struct {
					ArtifactUpdate *struct {
						Artifact struct{ Parts []struct{ Text string } } `json:"artifact"`
					} `json:"artifactUpdate"`
					Artifact *struct{ Parts []struct{ Text string } } `json:"artifact"`
				}
				json.Unmarshal(ev, &a)
				if a.ArtifactUpdate != nil {
					a.Artifact = &a.ArtifactUpdate.Artifact
				}
				if a.Artifact != nil {
					for _, p := range a.Artifact.Parts {
						text.WriteString(p.Text)
					}
				}
			}
			if text.String() != "Not sent." || len(mail.calls()) != 0 {
				t.Fatalf("answer %q, tool calls %v", text.String(), mail.calls())
			}
			reqs := e.llm.Requests()
			if n := len(reqs); n != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Text(), "denied by the user") {
				t.Fatalf("model requests %d", n)
			}
		})
	}
}

// TestApprovalAnswerErrors: answers that cannot be taken are refused with
// the native API's code in error.data and change nothing; an answer to one
// of two waiting calls leaves the task input-required.
func TestApprovalAnswerErrors(t *testing.T) {
	e, mail := approvalEnv(t)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("c1"), llmtest.Call("send_mail", `{"to":"eve"}`).WithID("c2")),
		llmtest.Text("Both answered."))
	r := e.rpc("message/send", map[string]any{"message": v03Msg("mail both", "")})
	task := taskOf(t, r.Result)
	if strings.Join(waitingCalls(t, task), ",") != "c1,c2" {
		t.Fatalf("send %s", r.raw)
	}
	send := func(parts ...map[string]any) rpcResp {
		return e.rpc("message/send", map[string]any{"message": answerMsg(false, task.ID, task.ContextID, parts...)})
	}
	dataCode := func(r rpcResp) string {
		if r.Error == nil {
			return ""
		}
		var d struct{ Code string }
		json.Unmarshal(r.Error.Data, &d)
		return d.Code
	}
	if r := send(map[string]any{"call_id": "nope", "approved": true}, map[string]any{"call_id": "c1", "approved": true}); r.Error == nil || r.Error.Code != CodeTaskNotFound || dataCode(r) != "not_found" {
		t.Fatalf("unknown call id: %s", r.raw)
	}
	if r := send(map[string]any{"approved": true}); r.Error == nil || r.Error.Code != CodeInvalidParams {
		t.Fatalf("no call id with two waiting: %s", r.raw)
	}
	if r := send(map[string]any{"call_id": "c1", "approved": true, "arguments": map[string]any{"text": "no recipient"}}); r.Error == nil || r.Error.Code != CodeInvalidParams || dataCode(r) != "invalid" {
		t.Fatalf("arguments against the schema: %s", r.raw)
	}
	if r := send(map[string]any{"call_id": "c1"}); r.Error == nil || r.Error.Code != CodeInvalidParams {
		t.Fatalf("approved missing: %s", r.raw)
	}
	perhaps := v03Msg("perhaps", task.ContextID)
	perhaps["taskId"] = task.ID
	if r := e.rpc("message/send", map[string]any{"message": perhaps}); r.Error == nil || r.Error.Code != CodeInvalidParams {
		t.Fatalf("text answer: %s", r.raw)
	}
	if len(mail.calls()) != 0 || len(e.llm.Requests()) != 1 {
		t.Fatal("a refused answer changed something")
	}
	// One of two: still input-required, for the other.
	one := send(map[string]any{"call_id": "c1", "approved": true})
	if got := taskOf(t, one.Result); got.Status.State != "input-required" || strings.Join(waitingCalls(t, got), ",") != "c2" {
		t.Fatalf("after one answer: %s", one.raw)
	}
	if r := send(map[string]any{"call_id": "c1", "approved": false}); r.Error == nil || r.Error.Code != CodeUnsupportedOperation || dataCode(r) != "conflict" {
		t.Fatalf("second answer: %s", r.raw)
	}
	last := send(map[string]any{"call_id": "c2", "approved": false, "reason": "not eve"})
	if got := taskOf(t, last.Result); got.Status.State != "completed" || answerText(got) != "Both answered." {
		t.Fatalf("after both: %s", last.raw)
	}
	if got := mail.calls(); len(got) != 1 || got[0] != `{"to":"bob"}` {
		t.Fatalf("tool calls %v", got)
	}
}

// a2aNPM holds the pinned official client (package-lock.json); the tests
// of cmd/agentik use the same directory.
const a2aNPM = "testdata/npm"

var (
	npmOnce sync.Once
	npmErr  error
)

// needNPM installs the pinned @a2a-js/sdk when node_modules is missing or
// older than the lock file. A machine without npm fails the test.
func needNPM(t *testing.T) {
	t.Helper()
	npmOnce.Do(func() {
		lock, err := os.Stat(filepath.Join(a2aNPM, "package-lock.json"))
		if err != nil {
			npmErr = err
			return
		}
		mods, err := os.Stat(filepath.Join(a2aNPM, "node_modules", "@a2a-js", "sdk", "package.json"))
		if err == nil && !mods.ModTime().Before(lock.ModTime()) {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = a2aNPM
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if npmErr != nil {
		t.Fatalf("installing @a2a-js/sdk with npm ci in %s (Node 20 and npm are required): %v", a2aNPM, npmErr)
	}
}

// TestApprovalOfficialClient: @a2a-js/sdk 1.3.0, natively (A2A 1.0) and
// through its 0.3 layer, through the input-required round trip against a
// real listener: blocking send and getTask input-required, an approval
// with edited arguments on the same taskId completing the task, then a
// stream ending input-required and a streamed denial completing it.
func TestApprovalOfficialClient(t *testing.T) {
	needNPM(t)
	for _, mode := range []string{"v1", "v03"} {
		t.Run(mode, func(t *testing.T) {
			e, mail := approvalEnv(t)
			e.llm.Enqueue(
				llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")), llmtest.Text("Mail sent."),
				llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"eve"}`).WithID("call_mail2")), llmtest.Text("Not sent."))
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "approval.mjs", e.srv.URL, mode)
			cmd.Dir = a2aNPM
			out, err := cmd.CombinedOutput()
			t.Logf("approval.mjs %s:\n%s", mode, out)
			if err != nil || !strings.Contains(string(out), "\nOK\n") {
				t.Fatalf("approval.mjs %s: %v", mode, err)
			}
			if got := mail.calls(); len(got) != 1 || got[0] != `{"to":"bob@example.com"}` {
				t.Fatalf("tool calls %v", got)
			}
			// The denial's reason reached the model.
			reqs := e.llm.Requests()
			if n := len(reqs); n != 4 || !strings.Contains(reqs[3].Messages[len(reqs[3].Messages)-1].Text(), "denied by the user: not eve") {
				t.Fatalf("model requests %d", n)
			}
		})
	}
}

// FuzzAnswers: the decoder of answers to waiting calls never panics, refuses
// with invalid params only, and what it takes is a valid resolution.
func FuzzAnswers(f *testing.F) {
	for _, seed := range []string{`{"call_id":"c1","approved":true}`, `{"approved":false,"reason":"no"}`,
		`{"call_id":"c1","approved":true,"arguments":{"to":"x"}}`, `{"call_id":1}`, `[]`, `{`, ``, `yes`, `no`} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	pend := []agentik.PendingApproval{{CallID: "c1", Name: "send_mail"}}
	f.Fuzz(func(t *testing.T, b []byte, data bool) {
		p := TextPart(string(b))
		if data {
			p = Part{Kind: "data", Data: b}
		}
		answers, rerr := answersOf([]Part{p}, pend)
		if rerr != nil {
			if rerr.Code != CodeInvalidParams || rerr.Message == "" {
				t.Fatalf("error %+v", rerr)
			}
			return
		}
		if len(answers) == 0 {
			t.Fatal("no answer and no error")
		}
		for _, a := range answers {
			if a.callID == "" {
				t.Fatalf("answer without call id: %q", b)
			}
			if err := a.res.Validate(); err != nil {
				t.Fatalf("resolution %+v: %v", a.res, err)
			}
		}
	})
}

// TestApprovalCancel: canceling an input-required task denies its waiting
// call (reason interrupted) and the task is canceled.
func TestApprovalCancel(t *testing.T) {
	e, mail := approvalEnv(t)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")))
	task := taskOf(t, e.rpc("message/send", map[string]any{"message": v03Msg("mail bob", "")}).Result)
	if task.Status.State != "input-required" {
		t.Fatalf("state %s", task.Status.State)
	}
	c := e.rpc("tasks/cancel", map[string]any{"id": task.ID})
	if c.Error != nil || taskOf(t, c.Result).Status.State != "canceled" {
		t.Fatalf("cancel: %s", c.raw)
	}
	if g := taskOf(t, e.rpc("tasks/get", map[string]any{"id": task.ID}).Result); g.Status.State != "canceled" {
		t.Fatalf("get after cancel: %s", g.Status.State)
	}
	conv, err := e.eng.Conversation(t.Context(), task.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	page, err := conv.Messages(t.Context(), agentik.MessagesRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	last := page.Messages[len(page.Messages)-1]
	if last.Type != agentik.MsgToolResult || !last.IsError || agentik.JoinText(last.Content) != agentik.DeniedText(agentik.ApprovalInterrupted) || len(mail.calls()) != 0 {
		t.Fatalf("journal ends %+v", last)
	}
}
