package langgraph

import (
	"encoding/json"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestLangGraphSDKState: @langchain/langgraph-sdk's threads.updateState
// sets keys of the conversation's shared state, which thread values,
// getState and a values stream carry beside messages; messages stay the
// runs' to write; another principal's thread is 404 and keeps its state.
func TestLangGraphSDKState(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("bob's answer"), llmtest.Text("stateful"))
	var bob struct{ Thread Thread }
	e.node("bob", "wait", nil, &struct{ Thread *Thread }{&bob.Thread})
	var out struct {
		Thread       Thread
		Updated      map[string]Checkpoint
		WithMessages int
		Other        int
		Events       []sseEvent
		State        map[string]json.RawMessage
		Got          map[string]json.RawMessage
	}
	e.node("alice", "state", map[string]any{"otherThread": bob.Thread.ThreadID}, &out)
	if out.Updated["checkpoint"].ThreadID != out.Thread.ThreadID || out.WithMessages != 422 || out.Other != 404 {
		t.Fatalf("updateState: %+v, with messages %d, another's thread %d", out.Updated, out.WithMessages, out.Other)
	}
	for what, raw := range map[string]json.RawMessage{"getState": out.State["values"], "thread": out.Got["values"]} {
		var v struct {
			Count    int
			Tags     []string
			Messages []LCMessage
		}
		if err := json.Unmarshal(raw, &v); err != nil || v.Count != 1 || len(v.Tags) != 1 || v.Tags[0] != "a" || len(v.Messages) != 2 {
			t.Fatalf("%s values %s: %v", what, raw, err)
		}
	}
	vals := events(out.Events, "values")
	if last := lastValues(t, vals); len(last.Messages) != 2 {
		t.Fatalf("streamed values %+v", last)
	}
	var streamed map[string]json.RawMessage
	json.Unmarshal(vals[len(vals)-1].Data, &streamed)
	if string(streamed["count"]) != "1" {
		t.Fatalf("the values stream does not carry the state: %v", streamed)
	}
	ctx := agentik.WithPrincipal(t.Context(), "bob")
	conv, err := e.st.Engine.Conversation(ctx, bob.Thread.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := conv.SharedState(ctx); err != nil || string(st) != "{}" {
		t.Fatalf("bob's state after alice's try: %s, %v", st, err)
	}
}
