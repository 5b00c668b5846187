package mcp

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestServeOfficialTypeScriptClient drives the facade with the official
// TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2, pinned in
// testdata/npm, installed by TestMain): it speaks the previous protocol
// revision with a session and validates every structured result against the
// tool's output schema. The scenarios of client.mjs run in order in one
// Node process, so the model's replies are scripted up front in that order.
func TestServeOfficialTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required: %v", err)
	}
	e := newServeEnv(t)
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(
		llmtest.Stream().Role().Content("Hello", ", ", "world", "!").Finish("stop").Done(), // ask
		llmtest.Text("Continued."),  // continue
		llmtest.Text("Still here."), // session
		llmtest.ServerError(),       // failure
		llmtest.Stream().Role().Content("partial ").Pause(gate).Content("never").Finish("stop").Done(), // cancel
	)
	cmd := exec.CommandContext(serveCtx(t), node, "client.mjs", e.url)
	cmd.Dir = npmDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	res := map[string]json.RawMessage{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			name, v, _ := strings.Cut(r, " ")
			res[name] = json.RawMessage(v)
		}
	}
	get := func(name string, v any) {
		t.Helper()
		raw, ok := res[name]
		if !ok {
			t.Fatalf("scenario %s printed no result:\n%s\n%s", name, stdout.String(), stderr.String())
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v: %s", name, err, raw)
		}
	}

	var proto struct {
		Version string
		Server  struct{ Name, Version string }
	}
	get("protocol", &proto)
	if proto.Version != ProtocolPrevious || proto.Server.Name != "Helper" {
		t.Errorf("protocol %+v", proto)
	}
	var tools struct{ Names []string }
	get("tools", &tools)
	if strings.Join(tools.Names, ",") != "ask,list_conversations,read_conversation" {
		t.Errorf("tools %v", tools.Names)
	}
	var ask struct {
		IsError    bool
		Text       string
		Structured AskOutput
		Streamed   string
		Increasing bool
	}
	get("ask", &ask)
	if ask.IsError || ask.Text != "Hello, world!" || ask.Structured.Answer != "Hello, world!" || !agentik.ValidID(ask.Structured.ConversationID) {
		t.Fatalf("ask %+v", ask)
	}
	if ask.Streamed != "Hello, world!" || !ask.Increasing {
		t.Errorf("progress %q (increasing %v)", ask.Streamed, ask.Increasing)
	}
	conv := ask.Structured.ConversationID
	var cont, session struct {
		IsError        bool
		Text           string
		ConversationID string `json:"conversation_id"`
	}
	get("continue", &cont)
	get("session", &session)
	if cont.IsError || cont.Text != "Continued." || cont.ConversationID != conv || session.Text != "Still here." || session.ConversationID != conv {
		t.Errorf("continue %+v, session %+v", cont, session)
	}
	var failure struct {
		IsError bool
		Text    string
	}
	get("failure", &failure)
	if !failure.IsError || failure.Text != "The agent could not answer (llm_error): the model call failed" {
		t.Errorf("failure %+v", failure)
	}
	var cancel struct {
		Aborted bool
		Error   *string
	}
	get("cancel", &cancel)
	if !cancel.Aborted || cancel.Error == nil {
		t.Errorf("cancel %+v", cancel)
	}
	var iso struct {
		Listed    int
		ReadError bool
		ReadText  string
	}
	get("isolation", &iso)
	if iso.Listed != 0 || !iso.ReadError || !strings.Contains(iso.ReadText, "not found") {
		t.Errorf("isolation %+v", iso)
	}
	var read struct {
		Count   int
		HasMore bool `json:"has_more"`
		First   TranscriptEntry
	}
	get("read", &read)
	if read.Count != 2 || !read.HasMore || read.First.Text != "Say hello" || read.First.Type != agentik.MsgUser {
		t.Errorf("read %+v", read)
	}
	var noauth *struct {
		Name    string
		Code    *int
		Message string
	}
	get("noauth", &noauth)
	if noauth == nil || !strings.Contains(noauth.Message, "401") && (noauth.Code == nil || *noauth.Code != 401) {
		t.Errorf("a client without a token got in: %+v", noauth)
	}

	// The cancelled ask's turn was interrupted, nothing else was. The
	// interrupt is written by the turn itself, just after the cancel.
	want := "user_message,assistant_message,user_message,assistant_message,user_message,assistant_message,user_message,assistant_message(interrupted)"
	msgs := e.journal("alice", conv)
	for deadline := time.Now().Add(10 * time.Second); types(msgs) != want && time.Now().Before(deadline); msgs = e.journal("alice", conv) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := types(msgs); got != want {
		t.Fatalf("journal %s", got)
	}
	if agentik.JoinText(msgs[len(msgs)-1].Content) != "partial " {
		t.Fatalf("partial answer %+v", msgs[len(msgs)-1])
	}
}
