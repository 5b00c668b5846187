package agui

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// npmDir holds the pinned official client (package.json + package-lock.json).
const npmDir = "testdata/npm"

var (
	npmOnce sync.Once
	npmErr  error
)

// installClient runs npm ci once per test binary when node_modules is
// missing or older than the lock file. A machine without npm fails the
// test: the e2e proof must not silently vanish.
func installClient(t *testing.T) {
	t.Helper()
	npmOnce.Do(func() {
		lock, err := os.Stat(filepath.Join(npmDir, "package-lock.json"))
		if err != nil {
			npmErr = err
			return
		}
		if mods, err := os.Stat(filepath.Join(npmDir, "node_modules", ".package-lock.json")); err == nil && !mods.ModTime().Before(lock.ModTime()) {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			npmErr = err
			return
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = npmDir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = &exec.Error{Name: "npm ci: " + string(out), Err: err}
		}
	})
	if npmErr != nil {
		t.Fatalf("installing @ag-ui/client with npm (Node 20 and npm are required): %v", npmErr)
	}
}

// node runs one scenario of e2e.mjs against the facade.
func (e *env) node(scenario string) string {
	e.t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		e.t.Fatalf("node is required: %v", err)
	}
	cmd := exec.CommandContext(testCtx(e.t), node, "e2e.mjs", e.url, scenario)
	cmd.Dir = npmDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("scenario %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, stdout.String(), stderr.String())
	}
	// The client warns on anything its schema strips or drops: the facade
	// must send nothing it has to correct.
	if s := stderr.String() + stdout.String(); strings.Contains(s, "[ag-ui]") {
		e.t.Errorf("scenario %s: client warnings:\n%s", scenario, s)
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			return r
		}
	}
	e.t.Fatalf("scenario %s printed no result:\n%s", scenario, stdout.String())
	return ""
}

// TestOfficialClient drives the facade with @ag-ui/client@1.0.0: its schema
// enforcement and verifier reject any event the facade gets wrong.
func TestOfficialClient(t *testing.T) {
	installClient(t)
	e := newEnv(t, withEcho)

	t.Run("conversation", func(t *testing.T) {
		e.llm.Enqueue(llmtest.Text("Hello from Agentik"), llmtest.Text("Hello again"))
		e.node("conversation")
		msgs := e.journal(ConversationID("", "e2e-conversation"))
		if got := journalTypes(msgs); got != "user_message,assistant_message,user_message,assistant_message" {
			t.Fatalf("history duplicated or lost: %s", got)
		}
	})
	t.Run("reload", func(t *testing.T) {
		e.node("reload")
		if n := len(e.journal(ConversationID("", "e2e-conversation"))); n != 4 {
			t.Fatalf("a reload changed the journal: %d messages", n)
		}
	})
	t.Run("servertool", func(t *testing.T) {
		e.llm.Enqueue(
			llmtest.ToolCalls(llmtest.Call("echo", `{"x":1}`).WithID("call_echo")),
			llmtest.Text("Echoed."))
		e.node("servertool")
	})
	t.Run("reasoning", func(t *testing.T) {
		e.llm.Enqueue(llmtest.Stream().Role().Reasoning("Thinking ", "hard.").Content("The ", "answer.").Finish("stop").Done())
		e.node("reasoning")
	})
	t.Run("frontendtool", func(t *testing.T) {
		e.llm.Enqueue(
			llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_ui")),
			llmtest.Text("You picked blue."))
		e.node("frontendtool")
		msgs := e.journal(ConversationID("", "e2e-frontend"))
		if got := journalTypes(msgs); got != "user_message,tool_call,tool_result,assistant_message" {
			t.Fatalf("journal %s", got)
		}
		if msgs[3].ReplyTo != msgs[0].ID || agentik.JoinText(msgs[2].Content) != "blue" {
			t.Fatalf("the turn did not continue with the client's result: %+v", msgs)
		}
	})
	t.Run("failure", func(t *testing.T) {
		e.llm.Enqueue(llmtest.ServerError())
		e.node("failure")
	})
	t.Run("abort", func(t *testing.T) {
		gate := llmtest.NewGate()
		t.Cleanup(gate.Release)
		e.llm.Enqueue(llmtest.Stream().Role().Content("first ").Pause(gate).Content("never").Finish("stop").Done())
		e.node("abort")
		// abortRun closed the request; the facade interrupts the turn. The
		// replay of the conversation's durable events shows it.
		ctx := testCtx(t)
		conv, err := e.eng.Conversation(ctx, ConversationID("", "e2e-abort"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := conv.Events(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for ev := range s.C() {
			if ev.Type == agentik.EvInterrupted {
				if ev.Reason != agentik.ReasonUser {
					t.Fatalf("interrupted with reason %q", ev.Reason)
				}
				break
			}
		}
		msgs := e.journal(conv.ID())
		if got := journalTypes(msgs); got != "user_message,assistant_message" || !msgs[1].Interrupted || agentik.JoinText(msgs[1].Content) != "first " {
			t.Fatalf("journal after abort: %s %+v", got, msgs)
		}
	})
}
