package main

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestAGUIClientToolsSurviveRestartSQLite: an AG-UI run on SQLite ends
// waiting for a frontend tool's result; the process is stopped and started
// again on the same database; the result posted then continues the turn.
// The model is asked twice in all — the first round and the continuation —
// never again from the user message.
func TestAGUIClientToolsSurviveRestartSQLite(t *testing.T) {
	for _, kill := range []bool{false, true} {
		name := "SIGTERM"
		if kill {
			name = "SIGKILL"
		}
		t.Run(name, func(t *testing.T) {
			llm := llmtest.NewServer()
			defer llm.Close()
			llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_ui")))
			env := []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL=" + llm.URL(), "OPENAI_MODEL=test"}
			p := startProc(t, env...)
			pc := pickColor{thread: agentik.NewID()}
			pc.ask(t, p.url, "run 1")
			if kill {
				p.cmd.Process.Kill()
			} else {
				p.cmd.Process.Signal(syscall.SIGTERM)
			}
			<-p.done

			// Only the continuation is scripted now: a turn asked again from
			// its user message would take it, and the result would find no
			// waiting round.
			llm.Enqueue(llmtest.Text("you picked blue"))
			p = startProc(t, env...)
			second := pc.answer(t, p.url)
			if aguiText(second) != "you picked blue" || second[len(second)-1]["type"] != "RUN_FINISHED" {
				t.Fatalf("run 2 after the restart: %v", second)
			}
			if reqs := llm.Requests(); !carriesPick(reqs) {
				t.Fatalf("%d model calls; want the first round and the continuation with the result", len(reqs))
			}
		})
	}
}
