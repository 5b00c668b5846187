package agui

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

// npmDir holds the pinned official client (package.json + package-lock.json).
const npmDir = "testdata/npm"

// installClient installs the pinned @ag-ui/client 1.0.0 (npmDir).
func installClient(t *testing.T) { t.Helper(); npmInstall(t, npmDir) }

// npmInstall installs dir's pinned npm packages once per test binary
// (testenv.NPM: npm ci from the lock file).
func npmInstall(t *testing.T, dir string) { t.Helper(); testenv.NPM(t, dir) }

// node runs scenarios of e2e.mjs (comma-separated, in order) against the
// facade and returns the result line of each.
func (e *env) node(scenario string) map[string]string {
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
	results := map[string]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			name, res, _ := strings.Cut(r, " ")
			results[name] = res
		}
	}
	for _, name := range strings.Split(scenario, ",") {
		if _, ok := results[name]; !ok {
			e.t.Fatalf("scenario %s printed no result:\n%s", name, stdout.String())
		}
	}
	return results
}

// TestOfficialClient drives the facade with @ag-ui/client@1.0.0: its schema
// enforcement and verifier reject any event the facade gets wrong. The
// scenarios run in one Node process, in order, so the model's replies are
// scripted up front in the same order; what they left behind is checked
// afterwards through the core.
func TestOfficialClient(t *testing.T) {
	installClient(t)
	e := newEnv(t, withEcho)
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(
		// conversation (reload calls no model)
		llmtest.Text("Hello from Agentik"), llmtest.Text("Hello again"),
		// servertool
		llmtest.ToolCalls(llmtest.Call("echo", `{"x":1}`).WithID("call_echo")), llmtest.Text("Echoed."),
		// reasoning
		llmtest.Stream().Role().Reasoning("Thinking ", "hard.").Content("The ", "answer.").Finish("stop").Done(),
		// frontendtool
		llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_ui")), llmtest.Text("You picked blue."),
		// failure
		llmtest.ServerError(),
		// abort: the answer stops at the gate until the client aborts
		llmtest.Stream().Role().Content("first ").Pause(gate).Content("never").Finish("stop").Done(),
	)
	e.node("conversation,reload,servertool,reasoning,frontendtool,failure,abort")

	t.Run("conversation", func(t *testing.T) {
		msgs := e.journal(ConversationID("", "e2e-conversation"))
		if got := journalTypes(msgs); got != "user_message,assistant_message,user_message,assistant_message" {
			t.Fatalf("history duplicated or lost (a reload must change nothing): %s", got)
		}
	})
	t.Run("frontendtool", func(t *testing.T) {
		msgs := e.journal(ConversationID("", "e2e-frontend"))
		if got := journalTypes(msgs); got != "user_message,tool_call,tool_result,assistant_message" {
			t.Fatalf("journal %s", got)
		}
		if msgs[3].ReplyTo != msgs[0].ID || agentik.JoinText(msgs[2].Content) != "blue" {
			t.Fatalf("the turn did not continue with the client's result: %+v", msgs)
		}
	})
	t.Run("failure", func(t *testing.T) {
		if got := journalTypes(e.journal(ConversationID("", "e2e-failure"))); got != "user_message,error" {
			t.Fatalf("journal %s", got)
		}
	})
	t.Run("abort", func(t *testing.T) {
		// abortRun closed the request; the facade interrupts the turn. The
		// replay of the conversation's durable events shows it.
		conv := ConversationID("", "e2e-abort")
		ev := e.waitDurable(conv, func(ev agentik.Event) bool { return ev.Type == agentik.EvInterrupted })
		if ev.Reason != agentik.ReasonUser {
			t.Fatalf("interrupted with reason %q", ev.Reason)
		}
		msgs := e.journal(conv)
		if got := journalTypes(msgs); got != "user_message,assistant_message" || !msgs[1].Interrupted || agentik.JoinText(msgs[1].Content) != "first " {
			t.Fatalf("journal after abort: %s %+v", got, msgs)
		}
	})
}

// TestOfficialClientApproval: @ag-ui/client 1.0.0 through a whole tool
// approval — interrupt, resume with edited arguments, interrupt, cancel —
// on one thread, against a real listener; the tool ran once, as edited.
func TestOfficialClientApproval(t *testing.T) {
	installClient(t)
	e := newEnv(t, withApproval)
	approvalScript(e)
	e.node("approval")
	var results []string
	for _, m := range e.journal(ConversationID("", "e2e-approval")) {
		if m.Type == agentik.MsgToolResult {
			results = append(results, m.CallID+"="+agentik.JoinText(m.Content))
		}
	}
	want := `call_echo=echo {"x":1};call_mail=sent {"to":"bob@example.com","text":"late"};call_mail2=denied by the user: cancelled`
	if got := strings.Join(results, ";"); got != want {
		t.Fatalf("results %s\nwant    %s", got, want)
	}
}

// TestOfficialClientAgainstBinary runs the client against the real agentik
// binary (built from cmd/agentik, configured only by its environment) with
// the scripted model: the facade as shipped, mounted at AGENTIK_AGUI_PATH.
func TestOfficialClientAgainstBinary(t *testing.T) {
	installClient(t)
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	base, logsNow := startAgentik(t, llm, "AGENTIK_AGUI_PATH=/ui/agui")
	e := &env{t: t, llm: llm, url: base + "/ui/agui"}

	llm.Enqueue(llmtest.Text("Hello from Agentik"), llmtest.Text("Hello again"),
		llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_ui")), llmtest.Text("You picked blue."),
		llmtest.ServerError())
	e.node("conversation,reload,frontendtool,failure")

	// The same turns are in the transcript of the native API.
	native := httpapi.NewClient(base + "/agentik")
	ctx := testCtx(t)
	conv, err := native.Conversation(ctx, ConversationID("", "e2e-frontend"))
	if err != nil {
		t.Fatalf("native API: %v", err)
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := journalTypes(page.Messages); got != "user_message,tool_call,tool_result,assistant_message" {
		t.Fatalf("native transcript %s\n%s", got, logsNow())
	}
}

// startAgentik builds cmd/agentik and runs "agentik serve" on a free port
// with a SQLite file, the scripted model and the extra environment; it
// returns the base URL and the process's log so far. Stopped (SIGTERM) when
// the test ends.
func startAgentik(t *testing.T, llm *llmtest.Server, extraEnv ...string) (base string, logsNow func() string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentik")
	build := exec.Command("go", "build", "-o", bin, "github.com/agentik/agentik/cmd/agentik")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "AGENTIK_PORT=0", "AGENTIK_HOST=127.0.0.1", "AGENTIK_DB_PATH="+filepath.Join(dir, "agentik.db"),
		"OPENAI_BASE_URL="+llm.URL(), "AGENTIK_LLM_MAX_RETRIES=0", "AGENTIK_DRAIN_TIMEOUT=1s")
	cmd.Env = append(cmd.Env, extraEnv...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	addr := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			logs.WriteString(line + "\n")
			logMu.Unlock()
			if _, a, ok := strings.Cut(line, `msg="agentik listening" addr=`); ok {
				addr <- strings.Fields(a)[0]
			}
		}
	}()
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	logsNow = func() string { logMu.Lock(); defer logMu.Unlock(); return logs.String() }
	select {
	case a := <-addr:
		base = "http://" + a
	case <-exited:
		t.Fatalf("agentik exited:\n%s", logsNow())
	case <-testCtx(t).Done():
		t.Fatalf("agentik did not start:\n%s", logsNow())
	}
	return base, logsNow
}
