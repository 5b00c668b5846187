package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// A script answers approvals inline: each line is read once the previous
// message is answered or a call waits, so "n …" and "y" reach the calls
// they follow even though the whole input is written at once; a line that
// is neither is asked again.
func TestChatApprovalPiped(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"Europe/Paris"}`).WithID("call_deny")),
		llmtest.Text("Denied, fine."),
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("call_yes")),
		llmtest.Text("It is noon."),
	)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_TOOL_APPROVAL=current_time=ask")
	c := startCLI(t, nil, "chat", "--url", p.url)
	io.WriteString(c.stdin, "time in Paris?\nmaybe\nn not now\ntime in UTC?\ny\n")
	c.stdin.Close()
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, c.stdout(), c.stderr())
	}
	out := c.stdout()
	order := []string{
		`? current_time {"timezone":"Europe/Paris"}  (call_deny)`, "approve? [y/n",
		"error: answer y to approve, or n to deny",
		"✗ current_time: denied by the user: not now", "Denied, fine.\n",
		`? current_time {"timezone":"UTC"}  (call_yes)`,
		"← current_time: ", "It is noon.\n",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("stdout lacks %q after offset %d:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	if strings.Contains(out, "\x1b[") {
		t.Fatalf("not plain output:\n%q", out)
	}

	// The journal: two user messages (the answers were not sent as
	// messages), the denial as the call's error result, each turn answered once.
	ctx := context.Background()
	client := httpapi.NewClient(p.url + "/agentik")
	list, err := client.ListConversations(ctx, agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 1 {
		t.Fatalf("%v %+v", err, list)
	}
	conv, _ := client.Conversation(ctx, list.Conversations[0].ID)
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range page.Messages {
		types = append(types, m.Type)
		if m.Type == agentik.MsgToolResult && m.CallID == "call_deny" && (!m.IsError || agentik.JoinText(m.Content) != "denied by the user: not now") {
			t.Fatalf("denied result %+v", m)
		}
		if m.Type == agentik.MsgToolResult && m.CallID == "call_yes" && m.IsError {
			t.Fatalf("approved result %+v", m)
		}
	}
	if got := strings.Join(types, ","); got != "user_message,tool_call,tool_result,assistant_message,user_message,tool_call,tool_result,assistant_message" {
		t.Fatalf("journal %s", got)
	}
}

// An approval answered by another client is reported and not asked again;
// a script whose input ends while a call waits exits 1 and leaves the call
// pending; in process the same answers work.
func TestChatApprovalElsewhereAndEOF(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("call_api")),
		llmtest.Text("Answered by the API."),
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("call_left")),
	)
	env := []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL=" + llm.URL(),
		"AGENTIK_TOOL_APPROVAL=current_time=ask", "AGENTIK_AUTH_TOKENS=alice:tok-alice"}
	p := startProc(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken("tok-alice"))
	cliEnv := []string{"AGENTIK_TOKEN=tok-alice"}

	c := startCLI(t, cliEnv, "chat", "--url", p.url)
	io.WriteString(c.stdin, "time?\n")
	c.waitOut("(call_api)")
	list, err := client.ListConversations(ctx, agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 1 {
		t.Fatalf("%v %+v", err, list)
	}
	id := list.Conversations[0].ID
	conv, _ := client.Conversation(ctx, id)
	if err := conv.Resolve(ctx, "call_api", agentik.Resolution{Reason: "from the api"}); err != nil {
		t.Fatal(err)
	}
	c.waitOut("current_time call_api denied (from the api) by alice")
	c.waitOut("Answered by the API.")
	c.stdin.Close()
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, c.stdout(), c.stderr())
	}

	// Input ends while a call waits: exit 1, the call stays pending.
	_, stderr, code := runCLIWithInput(t, cliEnv, "again?\n", "chat", "--url", p.url, "--conversation", id, "--history", "0")
	if code != 1 || !strings.Contains(stderr, "input ended while call_left waits for approval") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	pending, err := conv.Approvals(ctx)
	if err != nil || len(pending) != 1 || pending[0].CallID != "call_left" {
		t.Fatalf("pending %+v %v", pending, err)
	}
	// Resuming the conversation asks about what waits; "y" answers it.
	llm.Enqueue(llmtest.Text("Now it ran."))
	stdout, stderr, code := runCLIWithInput(t, cliEnv, "y\n", "chat", "--url", p.url, "--conversation", id, "--history", "0")
	if code != 0 || !strings.Contains(stdout, "(call_left)") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if pending, err := conv.Approvals(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("still pending %+v %v", pending, err)
	}
}

// In process (no --url) the engine's conversation is answered directly.
func TestChatApprovalInProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`).WithID("call_local")),
		llmtest.Text("Done locally."),
	)
	env := []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "local.db"), "OPENAI_BASE_URL=" + llm.URL(),
		"AGENTIK_TOOL_APPROVAL=current_time=ask"}
	stdout, stderr, code := runCLIWithInput(t, env, "time?\nyes\n", "chat")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	i, j, k := strings.Index(stdout, `? current_time {"timezone":"UTC"}  (call_local)`), strings.Index(stdout, "← current_time: "), strings.Index(stdout, "Done locally.")
	if i < 0 || j < i || k < j {
		t.Fatalf("stdout:\n%s", stdout)
	}
}
