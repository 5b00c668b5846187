package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

// consoleE2E holds the browser test's script and its pinned npm side
// (playwright-core, package-lock.json).
var consoleE2E = filepath.Join("..", "..", "console", "testdata", "e2e")

// TestConsoleBrowser drives the web console of the real binary in Debian's
// headless Chromium with playwright-core: sign-in, streaming, tool calls,
// interrupt, reload mid-answer, rename, image upload, a model error,
// regenerate, branch arrows and edit (SPEC §18), the shared state in the
// inspector, set and changed live through the API (SPEC §19), a second
// principal kept apart, delete, and the demo backend. The model is
// llmtest, scripted per user text; gates hold answers mid-stream until the
// script asks this test (over a loopback control endpoint) to let them go.
// A failing step leaves a screenshot (the log names it).
//
// AGENTIK_CONSOLE_SCREENSHOTS=1 also writes the screenshots of
// docs/console.md into docs/img/.
func TestConsoleBrowser(t *testing.T) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		testenv.Missing(t, "Debian's chromium is needed for the console browser test (apt-get install chromium)")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s is needed for the console browser test: %v", tool, err)
		}
	}
	dir, err := filepath.Abs(consoleE2E)
	if err != nil {
		t.Fatal(err)
	}
	if stale(filepath.Join(dir, "node_modules"), filepath.Join(dir, "package-lock.json")) {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}

	gates := map[string]*llmtest.Gate{"stream": llmtest.NewGate(), "reload": llmtest.NewGate(), "drop": llmtest.NewGate()}
	var mu sync.Mutex
	var sawImage bool
	var numbers int     // "pick a number" answers so far
	var branchLeak bool // the model was shown a message of another branch
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "tool" {
			if bytes.Contains(r.Messages[n-1].Content, []byte("denied")) {
				return llmtest.Text("Understood, I will not look at the clock.")
			}
			return llmtest.Text("It is tea time.")
		}
		switch text := r.LastUserText(); text {
		case "hello":
			return llmtest.Stream().Role().Reasoning("Let me ", "think.").Content("Hello ", "**world** ", "from ").
				Pause(gates["stream"]).Content("the model.").Finish("stop").Usage(12, 7).Done()
		case "time?":
			return llmtest.ToolCalls(llmtest.Call("current_time", `{"zone":"UTC"}`))
		case "hang":
			return llmtest.Stream().Role().Content("partial ", "answer").Hang()
		case "reload":
			return llmtest.Stream().Role().Content("First half, ").Pause(gates["reload"]).Content("second half.").Finish("stop").Done()
		case "drop":
			return llmtest.Stream().Role().Content("Before the drop, ").Pause(gates["drop"]).Content("after the drop.").Finish("stop").Done()
		case "fail":
			return llmtest.APIError(400, "invalid_request_error", "bad_request", "the model refused this request")
		case "pick a number":
			// Another answer each time it is asked: a regenerated answer
			// differs from the first. The model sees the head path only:
			// no earlier answer to this question.
			mu.Lock()
			defer mu.Unlock()
			numbers++
			for _, m := range r.Messages {
				if strings.Contains(m.Text(), "Number ") {
					branchLeak = true
				}
			}
			return llmtest.Text(fmt.Sprintf("Number %d.", numbers))
		case "pick a letter":
			mu.Lock()
			defer mu.Unlock()
			for _, m := range r.Messages {
				if strings.Contains(m.Text(), "pick a number") || strings.Contains(m.Text(), "Number ") {
					branchLeak = true
				}
			}
			return llmtest.Text("echo: " + text)
		case "what is this?":
			mu.Lock()
			sawImage = bytes.Contains(r.Raw, []byte(`"image_url"`))
			mu.Unlock()
			return llmtest.Text("I see a small image.")
		default:
			return llmtest.Text("echo: " + text)
		}
	})
	const alice, bob = "tok-console-alice-1", "tok-console-bob-22"
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test-model",
		"AGENTIK_IMAGE_INPUT=on", "AGENTIK_AUTH_TOKENS=alice:"+alice+",bob:"+bob,
		"AGENTIK_WEBHOOK_ALLOW_PRIVATE=on", // the webhook receiver is this test, on loopback
		"AGENTIK_MEMORY=on")
	demo := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "demo.db"), "AGENTIK_LLM_BACKEND=demo")
	// An agent that asks before every current_time call (SPEC §10).
	approve := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "approve.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test-model",
		"AGENTIK_TOOL_APPROVAL=current_time=ask")
	// A demo agent with a tiny context compacts after a few messages.
	compact := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "compact.db"), "AGENTIK_LLM_BACKEND=demo", "AGENTIK_CONTEXT_TOKENS=400")

	// The browser reaches the server through a loopback TCP proxy, so the
	// test can drop every connection at once (a network cut mid-answer).
	px := newDelayProxy(t, strings.TrimPrefix(p.url, "http://"), 0)

	control := http.NewServeMux()
	control.HandleFunc("POST /drop", func(w http.ResponseWriter, r *http.Request) { px.dropAll() })
	control.HandleFunc("POST /release/{gate}", func(w http.ResponseWriter, r *http.Request) {
		g := gates[r.PathValue("gate")]
		if g == nil {
			http.NotFound(w, r)
			return
		}
		g.Release()
	})
	// The webhook receiver of the schedules step.
	control.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: control}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	shots := t.TempDir()
	if testenv.CI() { // kept after the run, for whoever reads the CI log
		shots = filepath.Join(dir, "failures")
		os.MkdirAll(shots, 0o755)
	}
	docs := ""
	if os.Getenv("AGENTIK_CONSOLE_SCREENSHOTS") != "" {
		docs, _ = filepath.Abs(filepath.Join("..", "..", "docs", "img"))
		os.MkdirAll(docs, 0o755)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console.e2e.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTIK_URL=http://"+px.ln.Addr().String(), "AGENTIK_DEMO_URL="+demo.url, "AGENTIK_COMPACT_URL="+compact.url, "AGENTIK_APPROVE_URL="+approve.url, "ALICE_TOKEN="+alice, "BOB_TOKEN="+bob,
		"CONTROL_URL=http://"+ln.Addr().String(), "SHOTS_DIR="+shots, "DOCS_DIR="+docs, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("console browser test: %v\n%s\nscreenshots of the failure in %s\nserver log:\n%s", err, out, shots, p.log())
	}
	m := regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`).FindSubmatch(out)
	if m == nil || string(m[2]) != "0" || string(m[1]) == "0" {
		t.Fatalf("unexpected output of the browser test:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if !sawImage {
		t.Fatalf("the uploaded image did not reach the model:\n%s", out)
	}
	if numbers != 2 || branchLeak {
		t.Fatalf("regenerate: the model answered \"pick a number\" %d times (want 2); saw another branch: %v", numbers, branchLeak)
	}
	for _, tok := range []string{alice, bob} {
		if strings.Contains(p.log(), tok) {
			t.Fatal("a token reached the server log")
		}
	}
	t.Logf("console browser test:\n%s", out)
}
