package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/ws"
)

func wsURL(p *proc) string { return "ws" + strings.TrimPrefix(p.url, "http") + "/agentik/ws" }

func TestWSServedByTheBinary(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("Hello from the binary"))
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1", "AGENTIK_WS_IDLE_TIMEOUT=30s", "AGENTIK_WS_MAX_MESSAGE_BYTES=300")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if _, err := ws.Dial(ctx, wsURL(p), nil); wsCode(err) != agentik.EUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	c, err := ws.Dial(ctx, wsURL(p), &ws.DialOptions{Token: "tok-alice-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The configured message limit applies.
	c.Send(ctx, strings.Repeat("x", 400))
	if e, ok := (<-c.Messages()).(*ws.Error); !ok || e.Code != ws.CodeTooLarge {
		t.Fatalf("oversized: %#v", e)
	}
	c.Send(ctx, "hi")
	var text strings.Builder
	for m := range c.Messages() {
		if tc, ok := m.(*ws.TextChunk); ok {
			text.WriteString(tc.Text)
		}
		if _, ok := m.(*ws.End); ok {
			break
		}
	}
	if text.String() != "Hello from the binary" {
		t.Fatalf("%q", text.String())
	}

	// SIGTERM: the idle connection is told goodbye, then closed normally.
	p.cmd.Process.Signal(syscall.SIGTERM)
	var last ws.ServerMessage
	for m := range c.Messages() {
		last = m
	}
	if g, ok := last.(*ws.GracefulDisconnect); !ok || g.Reason != "shutdown" {
		t.Fatalf("last message %#v (%v)", last, c.Err())
	}
	if !errors.Is(c.Err(), ws.ErrGracefulDisconnect) {
		t.Fatalf("err %v", c.Err())
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.log())
	}
}

func TestWSIdleTimeoutFromConfig(t *testing.T) {
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "AGENTIK_LLM_BACKEND=demo", "AGENTIK_WS_IDLE_TIMEOUT=300ms")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ws.Dial(ctx, wsURL(p), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := <-c.Messages()
	if g, ok := m.(*ws.GracefulDisconnect); !ok || g.Reason != "idle" {
		t.Fatalf("%#v", m)
	}
	<-c.Done()
}

func TestWSBadConfigIsNamed(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_WS_MAX_MESSAGE_BYTES=1", "AGENTIK_WS_IDLE_TIMEOUT=never", "AGENTIK_WS_IF_BUSY=panic")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("want exit 2, got %v\n%s", err, out)
	}
	for _, v := range []string{"AGENTIK_WS_MAX_MESSAGE_BYTES", "AGENTIK_WS_IDLE_TIMEOUT", "AGENTIK_WS_IF_BUSY"} {
		if !strings.Contains(string(out), v) {
			t.Fatalf("%s not named:\n%s", v, out)
		}
	}
}

func wsCode(err error) string {
	var e *ws.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestTypeScriptSDK builds the TypeScript SDK with tsc and runs its tests
// (node --test) against the real binary. npm ci runs when node_modules is
// missing or older than the lock file.
func TestTypeScriptSDK(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to test the TypeScript SDK: %v", tool, err)
		}
	}
	npm := func(args ...string) {
		t.Helper()
		cmd := exec.Command("npm", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if stale(filepath.Join(dir, "node_modules"), filepath.Join(dir, "package-lock.json")) {
		npm("ci", "--no-audit", "--no-fund")
	}
	npm("run", "build")

	llm := llmtest.NewServer()
	defer llm.Close()
	var numbers atomic.Int64 // "pick a number": another answer each time (branching.test.ts)
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
			return llmtest.Text("It is tea time.")
		}
		switch text := r.LastUserText(); text {
		case "pick a number":
			return llmtest.Text(fmt.Sprintf("Number %d.", numbers.Add(1)))
		case "time?":
			return llmtest.ToolCalls(llmtest.Call("current_time", `{}`))
		case "hang":
			return llmtest.Stream().Role().Content("partial").Hang()
		default:
			return llmtest.Text("echo: " + text)
		}
	})
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=ts:tok-typescript")
	// The approval tests' server: its agent asks before current_time runs.
	pa := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "approval.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=ts:tok-typescript", "AGENTIK_TOOL_APPROVAL=current_time=ask")

	cmd := exec.Command("node", "--test", "--test-concurrency=1", "dist/test/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTIK_WS_URL="+wsURL(p), "AGENTIK_APPROVAL_WS_URL="+wsURL(pa), "AGENTIK_TOKEN=tok-typescript")
	if nodeMajor(t) < 22 {
		cmd.Env = append(cmd.Env, "NODE_OPTIONS=--experimental-websocket")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s\nserver log:\n%s", err, out, p.log())
	}
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindSubmatch(out)
	if pass == nil || string(pass[1]) == "0" || !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("unexpected node --test output:\n%s", out)
	}
	t.Logf("TypeScript SDK: %s tests passed\n%s", pass[1], out)
}

// stale reports whether dir is missing or older than file.
func stale(dir, file string) bool {
	d, err := os.Stat(dir)
	if err != nil {
		return true
	}
	f, err := os.Stat(file)
	return err == nil && d.ModTime().Before(f.ModTime())
}

func nodeMajor(t *testing.T) int {
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0])
	return n
}
