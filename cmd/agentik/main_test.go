package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentik-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agentik")
	// Pure Go, as the binary people run is built (SPEC: no cgo): every
	// test of the binary, the local model's included, runs this build.
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running agentik binary.
type proc struct {
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:port
	done chan struct{}
	mu   sync.Mutex
	logs strings.Builder
}

// listening finds the address in the start-up line, in text or JSON logs.
var listening = regexp.MustCompile(`msg="agentik listening" addr=(\S+)|"msg":"agentik listening","addr":"([^"]+)"`)

func startProc(t testing.TB, env ...string) *proc {
	t.Helper()
	return startCmd(t, exec.Command(binary, "serve"), env...)
}

// startCmd is startProc for a command of the caller's (a shell line, say)
// that ends up running agentik serve.
func startCmd(t testing.TB, cmd *exec.Cmd, env ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{}), cmd: cmd}
	p.cmd.Env = append(os.Environ(), append([]string{"AGENTIK_PORT=0", "AGENTIK_HOST=127.0.0.1"}, env...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1] + m[2]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		t.Fatalf("agentik exited before listening:\n%s", p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("agentik did not start:\n%s", p.log())
	}
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func TestVersionAndBadConfig(t *testing.T) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "agentik ") {
		t.Fatalf("version: %q %v", out, err)
	}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_PORT=http", "AGENTIK_LLM_TIMEOUT=soon")
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errorsAs(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("want exit code 2, got %v", err)
	}
	for _, v := range []string{"AGENTIK_PORT", "AGENTIK_LLM_TIMEOUT"} {
		if !strings.Contains(string(out), v) {
			t.Fatalf("message does not name %s:\n%s", v, out)
		}
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// TestSIGKILLMidTurnLosesNothing kills the real binary while a turn streams,
// restarts it on the same database and checks that every acknowledged message
// is there, cursors keep increasing and the cut turn is answered.
func TestSIGKILLMidTurnLosesNothing(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	llm.Enqueue(llmtest.Stream().Role().Content("partial ").Pause(gate).Content("never").Finish("stop").Done())

	db := filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "OPENAI_MODEL=test"}
	p := startProc(t, env...)
	ctx := context.Background()
	client := httpapi.NewClient(p.url + "/agentik")

	info, err := client.CreateConversation(ctx, agentik.CreateRequest{Title: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	first, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("first")}})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.Reached() // the turn is streaming
	var acked []agentik.SendResult
	acked = append(acked, first)
	for i := 0; i < 3; i++ { // queued behind the running turn
		r, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(fmt.Sprintf("queued %d", i))}})
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, r)
	}
	before, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	gate.Release()

	p2 := startProc(t, env...)
	client2 := httpapi.NewClient(p2.url + "/agentik")
	conv2, err := client2.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conv2.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	closed := map[string]bool{}
	var prev int64
	deadline := time.After(30 * time.Second)
	for len(closed) < len(acked) {
		select {
		case ev, ok := <-s.C():
			if !ok {
				t.Fatalf("stream ended: %v\n%s", s.Err(), p2.log())
			}
			if ev.Cursor != 0 {
				if ev.Cursor <= prev {
					t.Fatalf("cursor %d after %d", ev.Cursor, prev)
				}
				prev = ev.Cursor
			}
			if ev.Type == agentik.EvAssistantMessage && !ev.Message.Interrupted {
				closed[ev.Message.ReplyTo] = true
			}
		case <-deadline:
			t.Fatalf("only %d of %d turns answered after restart\n%s", len(closed), len(acked), p2.log())
		}
	}
	if prev <= before.Cursor {
		t.Fatalf("cursors did not continue: %d <= %d", prev, before.Cursor)
	}
	page, err := conv2.Messages(ctx, agentik.MessagesRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for i, m := range page.Messages {
		if m.Seq != int64(i+1) {
			t.Fatalf("journal gap at %d: seq %d", i, m.Seq)
		}
		if m.Type == agentik.MsgUser {
			if m.ID != acked[users].MessageID {
				t.Fatalf("user message %d is %s, want %s", users, m.ID, acked[users].MessageID)
			}
			users++
		}
	}
	if users != len(acked) {
		t.Fatalf("%d of %d acknowledged messages survived", users, len(acked))
	}
}

func TestSIGTERMClosesRunningTurn(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Finish("stop").Done())
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "AGENTIK_DRAIN_TIMEOUT=200ms")
	ctx := context.Background()
	// One reconnect attempt: the stream must end with the server.
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithReconnect(time.Millisecond, time.Millisecond, 1))
	info, _ := client.CreateConversation(ctx, agentik.CreateRequest{})
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.Reached()
	// The model call may have gone out early, a moment before its turn
	// started (a turn that has not started stays open at shutdown, to be
	// resumed): this test stops a running one.
	for ev := range s.C() {
		if ev.Type == agentik.EvWorking && ev.ReplyTo == res.MessageID {
			break
		}
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", p.log())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.log())
	}
	var sawInterrupted bool
	var seen []string
	for ev := range s.C() {
		seen = append(seen, ev.Type)
		if ev.Message != nil {
			seen = append(seen, fmt.Sprintf("%+v", *ev.Message))
		}
		if ev.Type == agentik.EvInterrupted && ev.ReplyTo == res.MessageID && ev.Reason == agentik.ReasonShutdown {
			sawInterrupted = true
		}
	}
	if !sawInterrupted {
		t.Fatalf("no interrupted{shutdown} before the stream ended (%v, %v)\n%s", seen, s.Err(), p.log())
	}
}
