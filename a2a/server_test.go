package a2a

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
)

// TestGoldenExchanges pins the wire form of both versions: card, blocking
// send, get task (with and without history), follow-up in a context.
func TestGoldenExchanges(t *testing.T) {
	e := newEnv(t, envOpts{})
	resp, err := http.Get(e.srv.URL + CardPath)
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	cb, _ := json.Marshal(card)
	golden(t, "card", []byte(strings.ReplaceAll(string(cb), e.srv.URL, "http://host")))
	resp, _ = http.Get(e.srv.URL + LegacyCardPath)
	var legacy map[string]any
	json.NewDecoder(resp.Body).Decode(&legacy)
	resp.Body.Close()
	if _, ok := legacy["supportedInterfaces"]; ok || legacy["url"] != e.url || legacy["preferredTransport"] != "JSONRPC" {
		t.Fatalf("legacy card: %v", legacy)
	}

	for _, v := range []struct {
		name, send, get string
		msg             func(string, string) map[string]any
	}{
		{"v1", "SendMessage", "GetTask", v1Msg},
		{"v03", "message/send", "tasks/get", v03Msg},
	} {
		t.Run(v.name, func(t *testing.T) {
			e.llm.Enqueue(llmtest.Text("Hi there"), llmtest.Text("Again"))
			r := e.rpc(v.send, map[string]any{"message": v.msg("hello", "")})
			golden(t, v.name+"-send", r.raw)
			var task struct {
				Task *struct {
					ID        string `json:"id"`
					ContextID string `json:"contextId"`
				} `json:"task"`
				ID        string `json:"id"`
				ContextID string `json:"contextId"`
			}
			json.Unmarshal(r.Result, &task)
			id, ctxID := task.ID, task.ContextID
			if task.Task != nil {
				id, ctxID = task.Task.ID, task.Task.ContextID
			}
			if id == "" || ctxID == "" {
				t.Fatalf("no ids: %s", r.raw)
			}
			golden(t, v.name+"-get", e.rpc(v.get, map[string]any{"id": id}).raw)
			golden(t, v.name+"-get-nohistory", e.rpc(v.get, map[string]any{"id": id, "historyLength": 0}).raw)
			r2 := e.rpc(v.send, map[string]any{"message": v.msg("again", ctxID)})
			if !strings.Contains(string(r2.raw), ctxID) || strings.Contains(string(r2.raw), id+`"`) {
				t.Fatalf("follow-up not in the same context as a new task: %s", r2.raw)
			}
			// The model saw the first exchange: the context is the conversation.
			reqs := e.llm.Requests()
			last := reqs[len(reqs)-1]
			if len(last.Messages) < 3 || last.Messages[len(last.Messages)-3].Text() != "hello" {
				t.Fatalf("follow-up did not continue the conversation: %+v", last.Messages)
			}
		})
	}
}

// TestErrors checks error codes, echoed ids and HTTP forms; a refused
// request stores nothing.
func TestErrors(t *testing.T) {
	e := newEnv(t, envOpts{})
	type tc struct {
		name, body string
		status     int
		code       int
		id         string
	}
	cases := []tc{
		{"parse", `{"jsonrpc":"2.0","id":1,`, 200, CodeParseError, "null"},
		{"not object", `[1,2]`, 200, CodeInvalidRequest, "null"},
		{"no id", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, 200, CodeInvalidRequest, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, 200, CodeInvalidRequest, "null"},
		{"bad version", `{"jsonrpc":"1.0","id":"a","method":"GetTask"}`, 200, CodeInvalidRequest, `"a"`},
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"tasks/destroy","params":{}}`, 200, CodeMethodNotFound, "3"},
		{"params array", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":[1]}`, 200, CodeInvalidParams, "4"},
		{"missing message", `{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{}}`, 200, CodeInvalidParams, "5"},
		{"bad part kind 0.3", `{"jsonrpc":"2.0","id":6,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"bogus"}]}}}`, 200, CodeInvalidParams, "6"},
		{"empty part 1.0", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{}]}}}`, 200, CodeInvalidParams, "7"},
		{"no parts", `{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, 200, CodeInvalidParams, "8"},
		{"agent role", `{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}`, 200, CodeInvalidParams, "9"},
		{"no message id", `{"jsonrpc":"2.0","id":10,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"x"}]}}}`, 200, CodeInvalidParams, "10"},
		{"unknown context", `{"jsonrpc":"2.0","id":11,"method":"SendMessage","params":{"message":{"messageId":"m","contextId":"01a22e67-633d-764e-8ad0-82237a01c5ce","role":"ROLE_USER","parts":[{"text":"x"}]}}}`, 200, CodeInvalidParams, "11"},
		{"file uri", `{"jsonrpc":"2.0","id":12,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"http://169.254.169.254/","mimeType":"image/png"}}]}}}`, 200, CodeContentTypeNotSupported, "12"},
		{"image without image model", `{"jsonrpc":"2.0","id":13,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"iVBORw0KGgo=","mediaType":"image/png"}]}}}`, 200, CodeContentTypeNotSupported, "13"},
		{"pdf", `{"jsonrpc":"2.0","id":14,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"JVBERg==","mediaType":"application/pdf"}]}}}`, 200, CodeContentTypeNotSupported, "14"},
		{"task not found", `{"jsonrpc":"2.0","id":"t","method":"tasks/get","params":{"id":"nope"}}`, 200, CodeTaskNotFound, `"t"`},
		{"task not found well formed", `{"jsonrpc":"2.0","id":15,"method":"GetTask","params":{"id":"01a22e67-633d-764e-8ad0-82237a01c5ce:1"}}`, 200, CodeTaskNotFound, "15"},
		{"cancel unknown", `{"jsonrpc":"2.0","id":16,"method":"CancelTask","params":{"id":"x:1"}}`, 200, CodeTaskNotFound, "16"},
		{"no task id", `{"jsonrpc":"2.0","id":17,"method":"GetTask","params":{}}`, 200, CodeInvalidParams, "17"},
		{"push", `{"jsonrpc":"2.0","id":18,"method":"tasks/pushNotificationConfig/set","params":{}}`, 200, CodePushNotSupported, "18"},
		{"list tasks", `{"jsonrpc":"2.0","id":19,"method":"ListTasks","params":{}}`, 200, CodeUnsupportedOperation, "19"},
		{"extended card", `{"jsonrpc":"2.0","id":20,"method":"GetExtendedAgentCard","params":{}}`, 200, CodeExtendedCardNotAvailable, "20"},
		{"message to a task", `{"jsonrpc":"2.0","id":21,"method":"SendMessage","params":{"message":{"messageId":"m","taskId":"x","role":"ROLE_USER","parts":[{"text":"x"}]}}}`, 200, CodeTaskNotFound, "21"},
		{"too large", `{"jsonrpc":"2.0","id":22,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 70<<10) + `"}]}}}`, 413, CodeInvalidRequest, "null"},
		{"stream bad params", `{"jsonrpc":"2.0","id":23,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, 200, CodeInvalidParams, "23"},
		{"resubscribe unknown", `{"jsonrpc":"2.0","id":24,"method":"tasks/resubscribe","params":{"id":"x"}}`, 200, CodeTaskNotFound, "24"},
	}
	for _, c := range cases {
		status, ct, b := e.post(c.body)
		var r rpcResp
		if err := json.Unmarshal(b, &r); err != nil || ct != "application/json" {
			t.Errorf("%s: %s %v %s", c.name, ct, err, b)
			continue
		}
		if status != c.status || r.Error == nil || r.Error.Code != c.code || string(r.ID) != c.id || r.Result != nil || r.JSONRPC != "2.0" {
			t.Errorf("%s: HTTP %d %s, want %d code %d id %s", c.name, status, b, c.status, c.code, c.id)
		}
	}
	// Transport refusals.
	req, _ := http.NewRequest(http.MethodPost, e.url, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", resp.StatusCode)
	}
	resp, _ = http.Get(e.url)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	// Nothing was stored by any refused request and the model was never asked.
	list, err := e.eng.ListConversations(t.Context(), listAll)
	if err != nil || len(list.Conversations) != 0 || len(e.llm.Requests()) != 0 {
		t.Fatalf("refused requests left %d conversations, %d model calls (%v)", len(list.Conversations), len(e.llm.Requests()), err)
	}
	// A terminal task takes no more input.
	e.llm.Enqueue(llmtest.Text("done"))
	r := e.rpc("message/send", map[string]any{"message": v03Msg("x", "")})
	var task struct{ ID, ContextID string }
	json.Unmarshal(r.Result, &task)
	m := v03Msg("more", task.ContextID)
	m["taskId"] = task.ID
	if r := e.rpc("message/send", map[string]any{"message": m}); r.Error == nil || r.Error.Code != CodeInvalidParams {
		t.Fatalf("message to a completed task: %s", r.raw)
	}
	if r := e.rpc("tasks/cancel", map[string]any{"id": task.ID}); r.Error == nil || r.Error.Code != CodeTaskNotCancelable {
		t.Fatalf("cancel of a completed task: %s", r.raw)
	}
}

// TestStreamAndCancel streams a turn with a tool call in both versions, and
// cancels a running task.
func TestStreamAndCancel(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, v := range []struct {
		name, stream, cancel, get, send string
		msg                             func(string, string) map[string]any
	}{
		{"v1", "SendStreamingMessage", "CancelTask", "GetTask", "SendMessage", v1Msg},
		{"v03", "message/stream", "tasks/cancel", "tasks/get", "message/send", v03Msg},
	} {
		t.Run(v.name, func(t *testing.T) {
			e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Stream().Role().Content("It is ", "now.").Finish("stop").Done())
			evs := e.sse(v.stream, map[string]any{"message": v.msg("time?", "")}, nil)
			var kinds []string
			var text string
			for _, raw := range evs {
				k, state, chunk := kindOf(t, raw)
				kinds = append(kinds, k+":"+state)
				text += chunk
			}
			all := strings.Join(kinds, " ")
			if !strings.HasPrefix(all, "task:submitted status:working") || !strings.HasSuffix(all, "status:completed") ||
				text != "It is now." || !strings.Contains(string(joinRaw(evs)), `"tool_call"`) || !strings.Contains(string(joinRaw(evs)), `"tool_result"`) {
				t.Fatalf("stream %s text %q:\n%s", all, text, joinRaw(evs))
			}
			if v.name == "v03" && !strings.Contains(string(evs[len(evs)-1]), `"final":true`) {
				t.Fatalf("0.3 final status without final:true: %s", evs[len(evs)-1])
			}

			// Cancel of a running task.
			gate := llmtest.NewGate()
			defer gate.Release()
			e.llm.Enqueue(llmtest.Stream().Role().Content("partial").Pause(gate).Content(" rest").Finish("stop").Done())
			cfg := map[string]any{"returnImmediately": true}
			if v.name == "v03" {
				cfg = map[string]any{"blocking": false}
			}
			r := e.rpc(v.send, map[string]any{"message": v.msg("slow", ""), "configuration": cfg})
			id := taskIDOf(t, r.Result)
			<-gate.Reached()
			// The model has written "partial"; wait until the engine has
			// read it (a subscriber joining a running turn gets the text so
			// far), so the interrupt keeps it rather than racing it.
			convID, _, _ := parseTaskID(id)
			waitForText(t, e, convID, "partial")
			got := e.rpc(v.get, map[string]any{"id": id})
			if _, state, _ := kindOf(t, got.Result); state != "working" {
				t.Fatalf("running task reads %s", got.raw)
			}
			c := e.rpc(v.cancel, map[string]any{"id": id})
			if _, state, _ := kindOf(t, c.Result); state != "canceled" || !strings.Contains(string(c.raw), "partial") {
				t.Fatalf("cancel: %s", c.raw)
			}
			if _, state, _ := kindOf(t, e.rpc(v.get, map[string]any{"id": id}).Result); state != "canceled" {
				t.Fatal("canceled task does not read canceled")
			}
		})
	}
}

// TestPartsIn sends an image as bytes and a data part; the model gets the
// image and the JSON.
func TestPartsIn(t *testing.T) {
	e := newEnv(t, envOpts{imageInput: true})
	png := []byte("\x89PNG\r\n\x1a\n0000")
	e.llm.Enqueue(llmtest.Text("a picture"), llmtest.Text("ok"))
	r := e.rpc("message/send", map[string]any{"message": map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": []any{
		map[string]any{"kind": "text", "text": "what is this?"},
		map[string]any{"kind": "file", "file": map[string]any{"bytes": base64.StdEncoding.EncodeToString(png), "mimeType": "image/png"}},
		map[string]any{"kind": "data", "data": map[string]any{"city": "Paris"}},
	}}})
	if r.Error != nil {
		t.Fatalf("send: %s", r.raw)
	}
	req := e.llm.Requests()[0]
	user := req.Messages[len(req.Messages)-1]
	var img, data bool
	for _, p := range user.Parts() {
		if p.ImageURL != nil && strings.HasPrefix(p.ImageURL.URL, "data:image/png;base64,") {
			img = true
		}
		if strings.Contains(p.Text, `"city":"Paris"`) {
			data = true
		}
	}
	if !img || !data {
		t.Fatalf("model request lacks image or data: %s", req.Raw)
	}
	// The history shows the image back as a file with bytes.
	if !strings.Contains(string(r.raw), `"bytes":"`+base64.StdEncoding.EncodeToString(png)) {
		t.Fatalf("history: %s", r.raw)
	}
	// v1.0 raw part.
	r = e.rpc("SendMessage", map[string]any{"message": map[string]any{"messageId": "m2", "role": "ROLE_USER", "parts": []any{
		map[string]any{"raw": base64.StdEncoding.EncodeToString(png), "mediaType": "image/png"}}}})
	if r.Error != nil {
		t.Fatalf("v1 raw image: %s", r.raw)
	}
}

// TestResubscribeFinished: resubscribing to a finished task gives the task
// and ends.
func TestResubscribeFinished(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.llm.Enqueue(llmtest.Text("done here"))
	id := taskIDOf(t, e.rpc("SendMessage", map[string]any{"message": v1Msg("x", "")}).Result)
	evs := e.sse("SubscribeToTask", map[string]any{"id": id}, nil)
	if len(evs) != 1 {
		t.Fatalf("events %s", joinRaw(evs))
	}
	if k, state, _ := kindOf(t, evs[0]); k != "task" || state != "completed" || !strings.Contains(string(evs[0]), "done here") {
		t.Fatalf("resubscribe: %s", evs[0])
	}
}

func joinRaw(evs [][]byte) []byte {
	var b []byte
	for _, e := range evs {
		b = append(append(b, e...), '\n')
	}
	return b
}

// kindOf returns kind, state and text chunk of one result of either version.
func kindOf(t *testing.T, raw []byte) (kind, state, text string) {
	t.Helper()
	v := V1
	if strings.Contains(string(raw), `"kind"`) {
		v = V03
	}
	ev, err := decodeEvent(v, raw)
	if err != nil {
		if task, err2 := decodeTask(v, raw); err2 == nil {
			ev = task
		} else {
			t.Fatalf("%v: %s", err, raw)
		}
	}
	switch e := ev.(type) {
	case *Task:
		for _, a := range e.Artifacts {
			for _, p := range a.Parts {
				text += p.Text
			}
		}
		return "task", e.Status.State, text
	case *StatusUpdate:
		return "status", e.Status.State, ""
	case *ArtifactUpdate:
		for _, p := range e.Artifact.Parts {
			text += p.Text
		}
		return "artifact", "", text
	case *Message:
		return "message", "", ""
	}
	return "?", "", ""
}

func taskIDOf(t *testing.T, raw []byte) string {
	t.Helper()
	var w struct {
		Task *struct {
			ID string `json:"id"`
		} `json:"task"`
		ID string `json:"id"`
	}
	json.Unmarshal(raw, &w)
	if w.Task != nil {
		return w.Task.ID
	}
	if w.ID == "" {
		t.Fatalf("no task id in %s", raw)
	}
	return w.ID
}

// TestCardIgnoresHostHeader: without a configured URL the card names the
// listener the request came in on, whatever Host a caller sends, so a
// forged Host cannot make the card send other clients elsewhere.
func TestCardIgnoresHostHeader(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, path := range []string{CardPath, LegacyCardPath} {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		req.Host = "evil.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), "evil.example.com") || !strings.Contains(string(b), e.srv.URL+"/a2a") {
			t.Fatalf("%s with Host evil.example.com: %d %s", path, resp.StatusCode, b)
		}
	}
}

// waitForText returns once the conversation's running turn has streamed
// want (as the partial text a joining subscriber gets, or a later delta).
func waitForText(t *testing.T, e *env, convID, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conv, err := e.eng.Conversation(ctx, convID)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text string
	for ev := range st.C() {
		if ev.Type == agentik.EvAppendText {
			text += ev.Text
			if strings.Contains(text, want) {
				return
			}
		}
	}
	t.Fatalf("the turn never streamed %q (got %q): %v", want, text, st.Err())
}

// A stream whose subscriber lost deltas (the bus had no room for them)
// still carries the answer's text whole in its artifact chunks, in both
// protocol versions: the rest comes from the stored message, with no gap
// and no repeat.
func TestStreamLostDeltasArriveWhole(t *testing.T) {
	e := newEnv(t, envOpts{loseDeltas: true})
	for _, v := range []struct {
		name, stream string
		msg          func(string, string) map[string]any
	}{{"v1", "SendStreamingMessage", v1Msg}, {"v03", "message/stream", v03Msg}} {
		t.Run(v.name, func(t *testing.T) {
			reply, want := stacktest.LossyAnswer(40)
			e.llm.Enqueue(reply)
			var text string
			var kinds []string
			for _, raw := range e.sse(v.stream, map[string]any{"message": v.msg("hi", "")}, nil) {
				k, state, chunk := kindOf(t, raw)
				kinds = append(kinds, k+":"+state)
				text += chunk
			}
			if text != want || !strings.HasSuffix(strings.Join(kinds, " "), "status:completed") {
				t.Fatalf("streamed %q (%s)\nwant %q", text, strings.Join(kinds, " "), want)
			}
		})
	}
}
