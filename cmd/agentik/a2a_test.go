package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// npmDir holds the pinned official A2A client (package-lock.json).
var npmDir = filepath.Join("..", "..", "a2a", "testdata", "npm")

var npmOnce sync.Once
var npmErr error

// needNPM installs the pinned client when node_modules is missing or older
// than the lock file. A machine without node or npm fails the test: the
// end-to-end check is part of the suite, not optional.
func needNPM(t *testing.T) {
	t.Helper()
	npmOnce.Do(func() {
		lock, err := os.Stat(filepath.Join(npmDir, "package-lock.json"))
		if err != nil {
			npmErr = err
			return
		}
		mods, err := os.Stat(filepath.Join(npmDir, "node_modules", "@a2a-js", "sdk", "package.json"))
		if err == nil && !mods.ModTime().Before(lock.ModTime()) {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = npmDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			npmErr = &npmError{err: err, out: string(out)}
		}
	})
	if npmErr != nil {
		t.Fatalf("installing @a2a-js/sdk with npm ci in %s: %v", npmDir, npmErr)
	}
}

type npmError struct {
	err error
	out string
}

func (e *npmError) Error() string { return e.err.Error() + "\n" + e.out }

// TestA2AOfficialClient drives the real binary with the official
// @a2a-js/sdk client, natively (A2A 1.0) and through its 0.3 compatibility
// layer: card, send, follow-up, stream, get, unknown task, cancel of a
// running task, cancel of a canceled one, resubscribe.
func TestA2AOfficialClient(t *testing.T) {
	needNPM(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test")
	for _, mode := range []string{"v1", "v03"} {
		t.Run(mode, func(t *testing.T) {
			never := llmtest.NewGate()
			defer never.Release()
			resub := llmtest.NewGate()
			defer resub.Release()
			// Replies by question, not in order: a task canceled while still
			// queued never calls the model, so a script in order would shift.
			llm.Handle(func(req llmtest.Request) llmtest.Reply {
				switch req.LastUserText() {
				case "hello":
					return llmtest.Text("Hello from agentik")
				case "and again":
					return llmtest.Text("Second answer")
				case "stream please":
					return llmtest.Text("streamed answer here")
				case "take your time":
					return llmtest.Stream().Role().Content("partial").Pause(never).Content(" never").Finish("stop").Done()
				case "resubscribe to me":
					return llmtest.Stream().Role().Content("resub ").Pause(resub).Content("done").Finish("stop").Usage(3, 2).Done()
				}
				return llmtest.Text("unexpected question " + req.LastUserText())
			})
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "e2e.mjs", p.url, mode)
			cmd.Dir = npmDir
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatalf("node: %v", err)
			}
			var out strings.Builder
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				out.WriteString(line + "\n")
				if line == "RESUBSCRIBED" {
					resub.Release()
					stdin.Write([]byte("go\n"))
				}
			}
			err := cmd.Wait()
			t.Logf("e2e %s:\n%s", mode, out.String())
			if err != nil || !strings.Contains(out.String(), "\nOK\n") {
				t.Fatalf("e2e %s: %v\n%s\nserver log:\n%s", mode, err, out.String(), p.log())
			}
			for _, want := range []string{"protocol=" + map[string]string{"v1": "1.0", "v03": "0.3"}[mode],
				"STREAM task,statusUpdate,artifactUpdate", "CANCEL TASK_STATE_CANCELED",
				"MODES out=text/plain,image/png,image/jpeg,image/webp,image/gif skill=text/plain,image/png,image/jpeg,image/webp,image/gif", "RESUBSCRIBE task,"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestA2AAgentToAgent runs two agentik processes, the second listing the
// first in AGENTIK_A2A_AGENTS: a turn on the second calls the first as a
// tool (twice, the second call continuing the same remote context) and
// completes; a follow-up turn calls it again in the same remote context.
func TestA2AAgentToAgent(t *testing.T) {
	llmA := llmtest.NewServer()
	defer llmA.Close()
	llmB := llmtest.NewServer()
	defer llmB.Close()
	dir := t.TempDir()
	a := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "OPENAI_BASE_URL="+llmA.URL(), "OPENAI_MODEL=test",
		"AGENTIK_A2A_NAME=math helper", "AGENTIK_A2A_DESCRIPTION=Does arithmetic")
	b := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(dir, "b.db"), "OPENAI_BASE_URL="+llmB.URL(), "OPENAI_MODEL=test",
		"AGENTIK_A2A_AGENTS="+a.url)

	llmA.Enqueue(llmtest.Text("four"), llmtest.Text("twelve"), llmtest.Text("five"))
	llmB.Enqueue(
		llmtest.ToolCalls(llmtest.Call("math_helper", `{"message":"what is 2+2?"}`)),
		llmtest.ToolCalls(llmtest.Call("math_helper", `{"message":"and that times 3?"}`)),
		llmtest.Text("It is twelve."),
		llmtest.ToolCalls(llmtest.Call("math_helper", `{"message":"what is 2+3?"}`)),
		llmtest.Text("It is five."),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	client := httpapi.NewClient(b.url + "/agentik")
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	st, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	turn := func(text string) []agentik.Message {
		t.Helper()
		res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
		if err != nil {
			t.Fatal(err)
		}
		var got []agentik.Message
		for {
			select {
			case ev, ok := <-st.C():
				if !ok {
					t.Fatalf("stream ended: %v\nA:\n%s\nB:\n%s", st.Err(), a.log(), b.log())
				}
				if ev.Message != nil && ev.Message.ReplyTo == res.MessageID {
					got = append(got, *ev.Message)
				}
				if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
					if ev.Reason != agentik.EndCompleted {
						t.Fatalf("turn ended %s: %+v\nB:\n%s", ev.Reason, got, b.log())
					}
					return got
				}
			case <-ctx.Done():
				t.Fatalf("turn did not end\nA:\n%s\nB:\n%s", a.log(), b.log())
			}
		}
	}
	results := func(ms []agentik.Message) (out []string) {
		for _, m := range ms {
			if m.Type == agentik.MsgToolResult {
				if m.IsError {
					t.Fatalf("tool failed: %s", agentik.JoinText(m.Content))
				}
				out = append(out, agentik.JoinText(m.Content))
			}
		}
		return out
	}

	first := turn("ask the helper")
	if r := results(first); len(r) != 2 || r[0] != "four" || r[1] != "twelve" {
		t.Fatalf("tool results %q, want [four twelve]", r)
	}
	if last := first[len(first)-1]; last.Type != agentik.MsgAssistant || agentik.JoinText(last.Content) != "It is twelve." {
		t.Fatalf("answer %+v", last)
	}
	// The second call continued the first call's remote conversation: the
	// remote model saw the earlier question.
	reqs := llmA.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "what is 2+2?") {
		t.Fatalf("remote agent did not get the second call in the same context: %d requests", len(reqs))
	}
	var tools []string
	for _, tl := range llmB.Requests()[0].Tools {
		b, _ := json.Marshal(tl)
		tools = append(tools, string(b))
	}
	if !strings.Contains(strings.Join(tools, " "), "Does arithmetic") {
		t.Fatalf("the remote card did not describe the tool: %s", tools)
	}

	second := turn("once more")
	if r := results(second); len(r) != 1 || r[0] != "five" {
		t.Fatalf("follow-up tool results %q", r)
	}
	// The follow-up turn continued the same remote conversation too.
	reqs = llmA.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Raw), "what is 2+2?") || !strings.Contains(string(reqs[2].Raw), "and that times 3?") {
		t.Fatalf("follow-up turn did not reuse the remote context: %d requests", len(reqs))
	}
}
