package agui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

// ckDir holds the CopilotKit end-to-end project: pinned lock file, the page
// (built with Vite at test time), the runtime server and the browser driver.
const ckDir = "testdata/copilotkit"

// chromium is Debian's package (.ci/run installs it); playwright-core drives
// it, no browser is downloaded.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(t, "no chromium at %s (apt-get install chromium; .ci/run installs it): %v", path, err)
	}
	return path
}

// ckModel answers by question, so that the order of the page's requests does
// not matter and no reply is left over for another scenario. The chat's
// answer stops half way at hello until the driver has seen the half on
// the page (it prints "RELEASE hello").
// The chat's question answered again (Regenerate) gets another answer.
func ckModel(hello *llmtest.Gate) func(r llmtest.Request) llmtest.Reply {
	var hellos atomic.Int64
	return func(r llmtest.Request) llmtest.Reply { return ckReply(r, hello, &hellos) }
}

func ckReply(r llmtest.Request, hello *llmtest.Gate, hellos *atomic.Int64) llmtest.Reply {
	last := r.Messages[len(r.Messages)-1]
	q := r.LastUserText()
	switch {
	case strings.Contains(q, "Hello") && hellos.Add(1) > 1:
		return llmtest.Stream().Role().Words("Hello from Agentik, regenerated.").Finish("stop").Done()
	case strings.Contains(q, "Hello"):
		return llmtest.Stream().Role().Words("Hello from Agentik, ").Pause(hello).Words("streamed word by word.").Finish("stop").Done()
	case strings.Contains(q, "Pick a color") && last.Role == "tool":
		return llmtest.Text("You picked " + last.Text() + ".")
	case strings.Contains(q, "Pick a color"):
		return llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`))
	case strings.Contains(q, "Order a pizza") && last.Role == "tool":
		return llmtest.Text("Order placed: " + last.Text() + ".")
	case strings.Contains(q, "Order a pizza"):
		return llmtest.ToolCalls(llmtest.Call("confirm_order", `{"item":"pizza"}`))
	case strings.Contains(q, "Count slowly"):
		return llmtest.Stream().Role().Content("One, ", "two, ").Hang()
	case strings.Contains(q, "Tell a long story"):
		return llmtest.Stream().Role().Content("Once upon ", "a time ").Hang()
	case strings.Contains(q, "Count up") && last.Role == "tool":
		return llmtest.Text("Counted.")
	case strings.Contains(q, "Count up"):
		return llmtest.ToolCalls(llmtest.Call("update_state", `{"patch":[{"op":"add","path":"/count","value":2}]}`))
	case strings.Contains(q, "Fail please"):
		return llmtest.ServerError()
	case strings.Contains(q, "Are you there?"):
		return llmtest.Text("Still here.")
	}
	return llmtest.Text("unscripted question: " + q)
}

// TestCopilotKit: CopilotKit as its users run it — @copilotkit/runtime 1.75
// (its agent an @ag-ui/client 0.0.59 HttpAgent on the real agentik binary's
// /agui, its runner sdk/copilotkit's AgentikRunner) serving a React page
// with @copilotkit/react-core and react-ui 1.74, built by Vite from the
// pinned lock file, driven in headless Chromium: streamed chat, a frontend
// tool, human in the loop, a turn interrupted through the native API while
// the page streams it, Stop, Regenerate (a new, different answer on a new
// branch, then the head switched between the two), a reload after the runtime
// restarted, and a model failure. The page must show no error where the
// user did nothing wrong.
func TestCopilotKit(t *testing.T) {
	browser := chromium(t)
	npmInstall(t, ckDir)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required: %v", err)
	}
	out := t.TempDir()
	vite := exec.Command(node, "node_modules/vite/bin/vite.js", "build")
	vite.Dir = ckDir
	vite.Env = append(os.Environ(), "AGENTIK_E2E_OUT="+out)
	if b, err := vite.CombinedOutput(); err != nil {
		t.Fatalf("vite build: %v\n%s", err, b)
	}

	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	hello := llmtest.NewGate()
	t.Cleanup(hello.Release)
	llm.Handle(ckModel(hello))
	base, logsNow := startAgentik(t, llm, "AGENTIK_STATE=tool")

	// Thread names as an application picks them; Agentik derives each
	// conversation's id (ConversationID), which the native API uses.
	threads := map[string]string{}
	for _, name := range []string{"chat", "tool", "hitl", "interrupt", "stop", "failure", "coagent"} {
		threads[name] = "ck-" + name + "-" + agentik.NewID()
	}
	tj, _ := json.Marshal(map[string]any{"threads": threads, "interruptConversation": ConversationID("", threads["interrupt"]),
		"chatConversation": ConversationID("", threads["chat"])})
	abs, _ := filepath.Abs(out)
	drive := exec.CommandContext(testCtxFor(t, 4*time.Minute), node, "drive.mjs", base+"/agui", base+"/agentik", abs, string(tj))
	drive.Dir = ckDir
	drive.Env = append(os.Environ(), "CHROMIUM="+browser)
	var stdout, stderr bytes.Buffer
	drive.Stderr = &stderr
	pipe, err := drive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := drive.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		stdout.WriteString(sc.Text() + "\n")
		if sc.Text() == "RELEASE hello" {
			hello.Release()
		}
	}
	if err := drive.Wait(); err != nil {
		t.Fatalf("driver: %v\nstdout:\n%s\nstderr:\n%s\nagentik:\n%s", err, stdout.String(), stderr.String(), logsNow())
	}
	t.Logf("driver:\n%s", stdout.String())
	for _, name := range []string{"chat", "tool", "hitl", "interrupt", "stop", "regenerate", "reload", "failure", "coagent"} {
		if !strings.Contains(stdout.String(), "RESULT "+name+" ") {
			t.Fatalf("scenario %s printed no result:\n%s", name, stdout.String())
		}
	}

	// What the browser did is in Agentik's journal, as the native API shows it.
	native := httpapi.NewClient(base + "/agentik")
	journal := func(name string) []agentik.Message {
		t.Helper()
		ctx := testCtx(t)
		conv, err := native.Conversation(ctx, ConversationID("", threads[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return page.Messages
	}
	for name, want := range map[string]string{
		// The head path: the question and its regenerated answer.
		"chat":      "user_message,assistant_message",
		"tool":      "user_message,tool_call,tool_result,assistant_message",
		"hitl":      "user_message,tool_call,tool_result,assistant_message",
		"interrupt": "user_message,assistant_message",
		"stop":      "user_message,assistant_message",
		"failure":   "user_message,error,user_message,assistant_message",
		"coagent":   "user_message,tool_call,tool_result,assistant_message",
	} {
		msgs := journal(name)
		if got := journalTypes(msgs); got != want {
			t.Errorf("%s: journal %s, want %s", name, got, want)
			continue
		}
		switch name {
		case "tool":
			if agentik.JoinText(msgs[2].Content) != "red" || msgs[3].ReplyTo != msgs[0].ID {
				t.Errorf("tool: the page's result did not continue the turn: %+v", msgs)
			}
		case "chat":
			if agentik.JoinText(msgs[1].Content) != "Hello from Agentik, regenerated." {
				t.Errorf("chat: the head is not the regenerated answer: %+v", msgs[1])
			}
		case "hitl":
			if agentik.JoinText(msgs[2].Content) != "approved" {
				t.Errorf("hitl: result %q", agentik.JoinText(msgs[2].Content))
			}
		case "interrupt", "stop":
			if !msgs[1].Interrupted {
				t.Errorf("%s: the answer was not interrupted: %+v", name, msgs[1])
			}
		}
	}
	// useCoAgent's state reached the model with the run, and the agent's
	// change is the conversation's state.
	reqs := requestsAbout(llm, "Count up")
	if len(reqs) != 2 || !strings.Contains(systemOf(reqs[0]), `<state>{"count":1}</state>`) {
		t.Errorf("the model's requests for Count up: %+v", reqs)
	}
	ctx := testCtx(t)
	if conv, err := native.Conversation(ctx, ConversationID("", threads["coagent"])); err != nil {
		t.Error(err)
	} else if st, err := conv.SharedState(ctx); err != nil || string(st) != `{"count":2}` {
		t.Errorf("coagent: state %s, %v", st, err)
	}
	hellos := 0
	for _, r := range llm.Requests() {
		if strings.Contains(r.LastUserText(), "Hello") {
			hellos++
		}
	}
	if hellos != 2 { // asked, then regenerated; the reloads call no model
		t.Errorf("the chat's question reached the model %d times, want 2", hellos)
	}
}

func testCtxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// requestsAbout returns the model requests whose last user text holds q.
func requestsAbout(s *llmtest.Server, q string) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range s.Requests() {
		if strings.Contains(r.LastUserText(), q) {
			out = append(out, r)
		}
	}
	return out
}

// systemOf is a request's system message ("" when none).
func systemOf(r llmtest.Request) string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			var s string
			json.Unmarshal(m.Content, &s)
			return s
		}
	}
	return ""
}
