package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// cliProc is the agentik binary run as a client, driven through pipes.
type cliProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu      sync.Mutex
	out     bytes.Buffer
	errOut  bytes.Buffer
	changed chan struct{} // closed and replaced on every write to out
}

type notifyWriter struct {
	p   *cliProc
	buf *bytes.Buffer
}

func (w notifyWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.buf.Write(b)
	close(w.p.changed)
	w.p.changed = make(chan struct{})
	return len(b), nil
}

func startCLI(t *testing.T, env []string, args ...string) *cliProc {
	t.Helper()
	p := &cliProc{t: t, done: make(chan struct{}), changed: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout = notifyWriter{p, &p.out}
	p.cmd.Stderr = notifyWriter{p, &p.errOut}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *cliProc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *cliProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errOut.String()
}

// waitOut waits until stdout contains s.
func (p *cliProc) waitOut(s string) {
	p.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		p.mu.Lock()
		has, ch := strings.Contains(p.out.String(), s), p.changed
		p.mu.Unlock()
		if has {
			return
		}
		select {
		case <-ch:
		case <-p.done:
			if strings.Contains(p.stdout(), s) {
				return
			}
			p.t.Fatalf("exited without printing %q\nstdout:\n%s\nstderr:\n%s", s, p.stdout(), p.stderr())
		case <-deadline:
			p.t.Fatalf("no %q within 20s\nstdout:\n%s\nstderr:\n%s", s, p.stdout(), p.stderr())
		}
	}
}

// wait waits for the exit and returns the exit code.
func (p *cliProc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Fatalf("did not exit\nstdout:\n%s\nstderr:\n%s", p.stdout(), p.stderr())
	}
	return p.cmd.ProcessState.ExitCode()
}

// runCLI runs a client command to its end with stdin closed.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := startCLI(t, env, args...)
	p.stdin.Close()
	code = p.wait()
	return p.stdout(), p.stderr(), code
}

func TestChatRemoteStreamsAnswersAndToolsPlain(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"Europe/Paris"}`)),
		llmtest.Text("It is noon in Paris."),
		llmtest.Text("Second answer."),
	)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL())
	c := startCLI(t, nil, "chat", "--url", p.url, "--title", "from the cli")
	io.WriteString(c.stdin, "What time is it in Paris?\nAnd again?\n")
	c.stdin.Close() // a script: chat waits for both answers, then exits
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, c.stdout(), c.stderr())
	}
	out := c.stdout()
	for _, want := range []string{`→ current_time {"timezone":"Europe/Paris"}`, "← current_time: ", "It is noon in Paris.\n", "Second answer.\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.Contains(out, "you> ") {
		t.Fatalf("not plain output:\n%q", out)
	}

	// The conversation commands see it, remotely.
	env := []string{}
	stdout, stderr, code := runCLI(t, env, "conversations", "list", "--url", p.url, "--json")
	if code != 0 {
		t.Fatalf("list: %d %s", code, stderr)
	}
	var list struct{ Conversations []agentik.ConversationInfo }
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list.Conversations) != 1 || list.Conversations[0].Title != "from the cli" {
		t.Fatalf("list: %v %s", err, stdout)
	}
	stdout, _, code = runCLI(t, env, "conversations", "show", list.Conversations[0].ID, "--url", p.url, "--json")
	var show struct {
		Conversation agentik.ConversationInfo
		Messages     []agentik.Message
	}
	if err := json.Unmarshal([]byte(stdout), &show); err != nil || code != 0 {
		t.Fatalf("show: %v %s", err, stdout)
	}
	var types, turn []string
	for _, m := range show.Messages {
		types = append(types, m.Type)
		if m.Type != agentik.MsgUser {
			turn = append(turn, m.Type)
		}
	}
	// The second message arrived while the first turn ran, at any point of
	// it (between a tool call and its result too): the journal is in
	// arrival order, and the turns' own records are in theirs.
	if got := strings.Join(types, ","); !strings.HasPrefix(got, "user_message,") || strings.Count(got, "user_message") != 2 ||
		strings.Join(turn, ",") != "tool_call,tool_result,assistant_message,assistant_message" {
		t.Fatalf("journal %s", got)
	}
	if show.Messages[0].Context == nil || show.Messages[0].Context.Origin == nil || show.Messages[0].Context.Origin.Channel != "cli" {
		t.Fatalf("origin %+v", show.Messages[0].Context)
	}
}

func TestChatInProcessResumeAndConversationCommands(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("First answer."), llmtest.Text("Second answer."))
	env := []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "local.db"), "OPENAI_BASE_URL=" + llm.URL()}

	stdout, stderr, code := runCLIWithInput(t, env, "first question\n", "chat")
	if code != 0 || !strings.Contains(stdout, "First answer.") {
		t.Fatalf("chat: %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, env, "conversations", "list", "--json")
	var list struct{ Conversations []agentik.ConversationInfo }
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != 0 || len(list.Conversations) != 1 {
		t.Fatalf("list: %v %d %s %s", err, code, stdout, stderr)
	}
	id := list.Conversations[0].ID

	// Resume: the last messages first, then the new answer with the old
	// context.
	stdout, stderr, code = runCLIWithInput(t, env, "second question\n", "chat", "--conversation", id)
	if code != 0 {
		t.Fatalf("resume: %d %s", code, stderr)
	}
	i1, i2, i3 := strings.Index(stdout, "you> first question"), strings.Index(stdout, "First answer."), strings.Index(stdout, "Second answer.")
	if i1 < 0 || i2 < i1 || i3 < i2 {
		t.Fatalf("resume output:\n%s", stdout)
	}
	reqs := llm.Requests()
	if last := reqs[len(reqs)-1]; len(last.Messages) < 4 {
		t.Fatalf("the model did not get the history: %+v", last.Messages)
	}

	stdout, _, code = runCLI(t, env, "conversations", "rename", id, "Renamed here", "--json")
	var info agentik.ConversationInfo
	if err := json.Unmarshal([]byte(stdout), &info); err != nil || code != 0 || info.Title != "Renamed here" {
		t.Fatalf("rename: %v %s", err, stdout)
	}
	stdout, _, code = runCLI(t, env, "conversations", "show", id)
	if code != 0 || !strings.Contains(stdout, "Renamed here") || !strings.Contains(stdout, "you> second question") || !strings.Contains(stdout, "Second answer.") {
		t.Fatalf("show:\n%s", stdout)
	}
	stdout, _, code = runCLI(t, env, "conversations", "list")
	if code != 0 || !strings.Contains(stdout, id) || !strings.Contains(stdout, "Renamed here") {
		t.Fatalf("list text:\n%s", stdout)
	}
	if stdout, _, code = runCLI(t, env, "conversations", "delete", "--json", id); code != 0 || strings.TrimSpace(stdout) != "{\n  \"deleted\": \""+id+"\"\n}" {
		t.Fatalf("delete: %d %q", code, stdout)
	}
	_, stderr, code = runCLI(t, env, "conversations", "show", id)
	if code != 1 || !strings.Contains(stderr, "not found") {
		t.Fatalf("show deleted: %d %s", code, stderr)
	}
	// Bad usage is refused with exit code 2 and changes nothing.
	for _, args := range [][]string{{"conversations"}, {"conversations", "frobnicate"}, {"conversations", "rename", "only-id"}, {"chat", "--nope"}} {
		if _, _, code := runCLI(t, env, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
	if _, stderr, code := runCLI(t, env, "chat", "--conversation", "no-such-id"); code != 1 || !strings.Contains(stderr, "not found") {
		t.Fatalf("resume unknown: %d %s", code, stderr)
	}
}

func runCLIWithInput(t *testing.T, env []string, input string, args ...string) (string, string, int) {
	t.Helper()
	p := startCLI(t, env, args...)
	io.WriteString(p.stdin, input)
	p.stdin.Close()
	code := p.wait()
	return p.stdout(), p.stderr(), code
}

func TestChatCtrlCInterruptsThenSecondExits(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("partial answer").Pause(gate).Content(" never shown").Finish("stop").Done())
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice")

	// Without the token the server refuses the client.
	if _, stderr, code := runCLI(t, nil, "chat", "--url", p.url); code != 1 || stderr == "" {
		t.Fatalf("no token: %d %s", code, stderr)
	}

	c := startCLI(t, []string{"AGENTIK_TOKEN=tok-alice"}, "chat", "--url", p.url)
	io.WriteString(c.stdin, "start\n")
	<-gate.Reached()
	c.waitOut("partial answer")
	c.cmd.Process.Signal(syscall.SIGINT)
	c.waitOut("[interrupted]")
	select {
	case <-c.done:
		t.Fatalf("the first Ctrl-C ended the client\n%s", c.stderr())
	default:
	}
	// The turn was cut on the server, its partial answer kept.
	ctx := context.Background()
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken("tok-alice"))
	list, err := client.ListConversations(ctx, agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 1 {
		t.Fatalf("%v %+v", err, list)
	}
	conv, _ := client.Conversation(ctx, list.Conversations[0].ID)
	page, _ := conv.Messages(ctx, agentik.MessagesRequest{})
	if n := len(page.Messages); n != 2 || !page.Messages[1].Interrupted || agentik.JoinText(page.Messages[1].Content) != "partial answer" {
		t.Fatalf("journal %+v", page.Messages)
	}
	// Idle now: Ctrl-C exits.
	c.cmd.Process.Signal(syscall.SIGINT)
	if code := c.wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(c.stdout(), "never shown") {
		t.Fatal("text after the interrupt was shown")
	}

	// Ctrl-D (end of input) with nothing pending exits at once.
	d := startCLI(t, []string{"AGENTIK_TOKEN=tok-alice"}, "chat", "--url", p.url)
	d.stdin.Close()
	if code := d.wait(); code != 0 {
		t.Fatalf("Ctrl-D exit %d %s", code, d.stderr())
	}
}

// On a terminal reasoning is shown dimmed and tool lines coloured; in plain
// mode reasoning is left out and no escape sequence is written.
func TestChatRendererStyles(t *testing.T) {
	events := []agentik.Event{
		{Type: agentik.EvWorking, ReplyTo: "u1"},
		{Type: agentik.EvStartReasoning},
		{Type: agentik.EvAppendText, Text: "thinking it over"},
		{Type: agentik.EvToolCall, Message: &agentik.Message{Type: agentik.MsgToolCall, Name: "current_time", Arguments: agentik.RawJSON(`{"timezone": "UTC"}`)}},
		{Type: agentik.EvToolFailed, Message: &agentik.Message{Type: agentik.MsgToolResult, Name: "current_time", IsError: true,
			Content: []agentik.Content{agentik.Text("unknown\ntime zone")}}},
		{Type: agentik.EvStartResponse},
		{Type: agentik.EvAppendText, Text: "Answer."},
		{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted},
	}
	render := func(color bool) string {
		var b bytes.Buffer
		s := &chatSession{r: &renderer{w: &b, color: color}, mine: map[string]bool{"u1": true}}
		for _, ev := range events {
			s.event(ev)
		}
		if len(s.mine) != 0 || s.running {
			t.Fatalf("turn not closed: %+v", s)
		}
		return b.String()
	}
	tty := render(true)
	for _, want := range []string{ansiDim + "thinking it over" + ansiReset, ansiCyan + `→ current_time {"timezone": "UTC"}`, ansiRed + "✗ current_time: unknown time zone", "Answer.\n"} {
		if !strings.Contains(tty, want) {
			t.Fatalf("terminal output lacks %q:\n%q", want, tty)
		}
	}
	plain := render(false)
	if plain != "→ current_time {\"timezone\": \"UTC\"}\n✗ current_time: unknown time zone\nAnswer.\n" {
		t.Fatalf("plain output:\n%q", plain)
	}
}
