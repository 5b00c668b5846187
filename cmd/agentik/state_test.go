package main

// The conversation's shared state (SPEC §19, docs/state.md) through the
// real binary, on SQLite and on PostgreSQL: the native API's GET, PUT and
// PATCH with their bounds, another principal refused, and the agent's
// update_state tool through a scripted model that sees the state in its
// system context.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// stateModel answers "count up" by setting /count to 3 with update_state,
// "break it" with a patch that does not apply, and everything else (a
// tool's result included) with text.
func stateModel(r llmtest.Request) llmtest.Reply {
	if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
		return llmtest.Text("done")
	}
	switch r.LastUserText() {
	case "count up":
		return llmtest.ToolCalls(llmtest.Call("update_state", `{"patch":[{"op":"replace","path":"/count","value":3}]}`))
	case "break it":
		return llmtest.ToolCalls(llmtest.Call("update_state", `{"patch":[{"op":"remove","path":"/nope"}]}`))
	}
	return llmtest.Text("hello")
}

// stateServer starts the binary with an agent whose state tool is on, on
// database (a SQLite path or a PostgreSQL URL), for alice and bob.
func stateServer(t *testing.T, database string, llm *llmtest.Server) *proc {
	t.Helper()
	file := filepath.Join(t.TempDir(), "agentik.yaml")
	cfg := fmt.Sprintf(`database: %q
auth:
  tokens:
    - {principal: alice, token_env: ALICE_TOKEN}
    - {principal: bob, token_env: BOB_TOKEN}
agents:
  - id: agentik
    system_prompt: "You are a test."
    model: {base_url: %q, model: test}
    state: {tool: true}
`, database, llm.URL())
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return startProc(t, "AGENTIK_CONFIG="+file, "ALICE_TOKEN="+aliceToken, "BOB_TOKEN="+bobToken)
}

func TestSharedStateSQLite(t *testing.T) {
	testSharedState(t, filepath.Join(t.TempDir(), "agentik.db"))
}

func TestSharedStatePostgres(t *testing.T) {
	testSharedState(t, pgSchema(t))
}

// call makes a request as token and returns its status and body.
func call(t *testing.T, method, u, token, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func testSharedState(t *testing.T, database string) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(stateModel)
	p := stateServer(t, database, llm)
	ctx := context.Background()
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	u := p.url + "/agentik/conversations/" + info.ID + "/state"
	const patchType = "application/json-patch+json"
	expect := func(what string, status int, body string, wantStatus int, want string) {
		t.Helper()
		if status != wantStatus || (want != "" && body != want) {
			t.Fatalf("%s: %d %s, want %d %s", what, status, body, wantStatus, want)
		}
	}
	st, body := call(t, "GET", u, aliceToken, "", "")
	expect("empty state", st, body, 200, `{}`)
	st, body = call(t, "PUT", u, aliceToken, "application/json", `{"items":["a"],"count":1}`)
	expect("put", st, body, 200, `{"count":1,"items":["a"]}`)
	st, body = call(t, "PATCH", u, aliceToken, patchType, `[{"op":"replace","path":"/count","value":2},{"op":"add","path":"/items/-","value":"b"}]`)
	const two = `{"count":2,"items":["a","b"]}`
	expect("patch", st, body, 200, two)

	// Refused, and nothing changes.
	big := `{"x":"` + strings.Repeat("y", agentik.MaxSharedState) + `"}`
	// Forty copies of the whole state, each doubling it: refused before
	// the state is built, not after.
	var copies []string
	for i := range 40 {
		copies = append(copies, fmt.Sprintf(`{"op":"copy","from":"","path":"/c%d"}`, i))
	}
	doubling := "[" + strings.Join(copies, ",") + "]"
	for _, r := range []struct {
		method, ct, body string
		status           int
		code             string
	}{
		{"PATCH", patchType, `[{"op":"test","path":"/count","value":1},{"op":"remove","path":"/items"}]`, 422, agentik.EInvalid},
		{"PATCH", patchType, `[{"op":"remove","path":"/nope"}]`, 422, agentik.EInvalid},
		{"PATCH", patchType, `[{"op":"replace","path":"","value":[1]}]`, 422, agentik.EInvalid},
		{"PATCH", patchType, `{"op":"add","path":"/a","value":1}`, 422, agentik.EInvalid},
		{"PATCH", patchType, `[{"op":"add","path":"a","value":1}]`, 422, agentik.EInvalid},
		{"PATCH", patchType, `[{"op":`, 400, agentik.EMalformed},
		{"PATCH", patchType, `[{"op":"add","path":"/x","value":"` + strings.Repeat("y", agentik.MaxSharedState) + `"}]`, 413, agentik.ETooLarge},
		{"PATCH", patchType, doubling, 413, agentik.ETooLarge},
		{"PUT", "application/json", `[1]`, 422, agentik.EInvalid},
		{"PUT", "application/json", `"x"`, 422, agentik.EInvalid},
		{"PUT", "application/json", `null`, 422, agentik.EInvalid},
		{"PUT", "application/json", big, 413, agentik.ETooLarge},
		{"PUT", "text/plain", `{}`, 415, ""},
	} {
		st, body := call(t, r.method, u, aliceToken, r.ct, r.body)
		if st != r.status || (r.code != "" && !strings.Contains(body, `"code":"`+r.code+`"`)) {
			t.Fatalf("%s %.80s: %d %.200s, want %d %s", r.method, r.body, st, body, r.status, r.code)
		}
		if st, got := call(t, "GET", u, aliceToken, "", ""); st != 200 || got != two {
			t.Fatalf("after the refused %s %.80s: %d %s", r.method, r.body, st, got)
		}
	}

	// Bob can neither read nor change it, nor learn that it exists.
	for _, r := range []struct{ method, ct, body string }{
		{"GET", "", ""},
		{"PUT", "application/json", `{"owned":true}`},
		{"PATCH", patchType, `[{"op":"add","path":"/owned","value":true}]`},
	} {
		st, body := call(t, r.method, u, bobToken, r.ct, r.body)
		if st != 404 || !strings.Contains(body, `"code":"not_found"`) {
			t.Fatalf("bob %s: %d %s", r.method, st, body)
		}
	}
	if st, got := call(t, "GET", u, aliceToken, "", ""); st != 200 || got != two {
		t.Fatalf("after bob: %d %s", st, got)
	}

	// The agent sees the state and changes it.
	conv, _ := alice.Conversation(ctx, info.ID)
	stream, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	res := send(t, conv, "count up")
	until(t, stream, "the answer to count up", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
	const three = `{"count":3,"items":["a","b"]}`
	if st, got := call(t, "GET", u, aliceToken, "", ""); st != 200 || got != three {
		t.Fatalf("after update_state: %d %s", st, got)
	}
	reqs := requestsFor(llm, "count up")
	if len(reqs) != 2 || !strings.Contains(system(reqs[0]), "<state>"+two+"</state>") ||
		!strings.Contains(system(reqs[1]), "<state>"+three+"</state>") || !strings.Contains(strings.Join(reqs[0].ToolNames(), ","), "update_state") {
		t.Fatalf("the model's requests for count up: %d, systems %q", len(reqs), systems(reqs))
	}

	// A patch that does not apply is a tool error the model sees.
	res = send(t, conv, "break it")
	until(t, stream, "the answer to break it", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
	reqs = requestsFor(llm, "break it")
	if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Text(), "the state did not change") {
		t.Fatalf("break it: %d requests, last %+v", len(reqs), reqs[len(reqs)-1].Messages)
	}
	if st, got := call(t, "GET", u, aliceToken, "", ""); st != 200 || got != three {
		t.Fatalf("after the failed update_state: %d %s", st, got)
	}

	// Every change, and only those, is a durable state_updated event.
	replay, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	var changes []string
	for _, ev := range until(t, replay, "the replayed answer to break it", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == res.MessageID
	}) {
		if ev.Type == agentik.EvStateUpdated {
			changes = append(changes, ev.By+" "+string(ev.State)+" "+string(ev.Patch))
		}
	}
	want := []string{
		`alice {"count":1,"items":["a"]} [{"op":"add","path":"/count","value":1},{"op":"add","path":"/items","value":["a"]}]`,
		`alice ` + two + ` [{"op":"replace","path":"/count","value":2},{"op":"replace","path":"/items","value":["a","b"]}]`,
		`agent ` + three + ` [{"op":"replace","path":"/count","value":3}]`,
	}
	if strings.Join(changes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("state_updated events:\n%s\nwant\n%s", strings.Join(changes, "\n"), strings.Join(want, "\n"))
	}

	// Bob's turns never see alice's state.
	bob := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(bobToken))
	binfo, err := bob.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	bconv, _ := bob.Conversation(ctx, binfo.ID)
	bs, err := bconv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	bres := send(t, bconv, "bob asks")
	until(t, bs, "bob's answer", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == bres.MessageID })
	if reqs := requestsFor(llm, "bob asks"); len(reqs) != 1 || strings.Contains(system(reqs[0]), "<state>") {
		t.Fatalf("bob's model request: %q", systems(reqs))
	}
}

// requestsFor returns the model requests whose last user text is text.
func requestsFor(s *llmtest.Server, text string) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range s.Requests() {
		if r.LastUserText() == text {
			out = append(out, r)
		}
	}
	return out
}

// system is a request's system message.
func system(r llmtest.Request) string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			var s string
			json.Unmarshal(m.Content, &s)
			return s
		}
	}
	return ""
}

func systems(rs []llmtest.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, system(r))
	}
	return out
}
