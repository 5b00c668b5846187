package main

import (
	"path/filepath"
	"strings"
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
			thread := agentik.NewID()
			tool := map[string]any{"name": "pick_color", "description": "Ask the user to pick a color",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}
			user := map[string]any{"id": "u1", "role": "user", "content": "pick a color"}
			run := func(id string, msgs ...map[string]any) map[string]any {
				return map[string]any{"threadId": thread, "runId": id, "messages": msgs, "tools": []any{tool},
					"context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}}
			}
			first := aguiRun(t, p.url, run("r1", user))
			called := false
			for _, ev := range first {
				called = called || (ev["type"] == "TOOL_CALL_START" && ev["toolCallName"] == "pick_color")
			}
			if !called || first[len(first)-1]["type"] != "RUN_FINISHED" {
				t.Fatalf("run 1: %v", first)
			}
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
			assistant := map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{
				"id": "call_ui", "type": "function", "function": map[string]any{"name": "pick_color", "arguments": "{}"}}}}
			result := map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_ui", "content": "blue"}
			second := aguiRun(t, p.url, run("r2", user, assistant, result))
			var text strings.Builder
			for _, ev := range second {
				if ev["type"] == "TEXT_MESSAGE_CONTENT" {
					text.WriteString(ev["delta"].(string))
				}
			}
			if text.String() != "you picked blue" || second[len(second)-1]["type"] != "RUN_FINISHED" {
				t.Fatalf("run 2 after the restart: %v", second)
			}
			reqs := llm.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), `"tool_call_id":"call_ui"`) || !strings.Contains(string(reqs[1].Raw), "blue") {
				t.Fatalf("%d model calls; want the first round and the continuation with the result", len(reqs))
			}
		})
	}
}
