package agui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// withState offers update_state and shows the shared state to the model.
func withState(o *engine.Options, _ *Options) {
	o.Tools = tools.NewRegistry(tools.UpdateState{})
	o.Context = []agentik.ContextSource{tools.StateContext{}}
}

// TestOfficialClientState: @ag-ui/client 1.0.0 sends state; the model sees
// it and changes it; the client gets STATE_SNAPSHOT and STATE_DELTA and
// ends with the agent's state; the empty default state of a reloaded
// client wipes nothing (e2e.mjs, scenario state).
func TestOfficialClientState(t *testing.T) {
	installClient(t)
	e := newEnv(t, withState)
	e.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("update_state", `{"patch":[{"op":"replace","path":"/count","value":2}]}`).WithID("call_state")),
		llmtest.Text("Counted."), llmtest.Text("Hello"))
	res := e.node("state")
	if res["state"] != `{"state":{"count":2,"items":["a"]}}` {
		t.Fatalf("result %s", res["state"])
	}
	reqs := e.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	for i, want := range []string{`<state>{"count":1,"items":["a"]}</state>`, `<state>{"count":2,"items":["a"]}</state>`, `<state>{"count":2,"items":["a"]}</state>`} {
		var sys string
		for _, m := range reqs[i].Messages {
			if m.Role == "system" {
				json.Unmarshal(m.Content, &sys)
			}
		}
		if !strings.Contains(sys, want) {
			t.Fatalf("request %d's system context %q, want %s", i, sys, want)
		}
	}
}

// TestStateInputRefused: a state that is no object, or too large, refuses
// the run before it starts, and sets nothing.
func TestStateInputRefused(t *testing.T) {
	for _, c := range []struct {
		state any
		code  string
	}{
		{[]any{1}, agentik.EInvalid},
		{"x", agentik.EInvalid},
		{map[string]any{"x": strings.Repeat("y", agentik.MaxSharedState)}, agentik.ETooLarge},
	} {
		in := input("thread-bad-state", "run-1", user("u1", "Hi"))
		in["state"] = c.state
		b, _ := json.Marshal(in)
		if _, err := DecodeInput(b); agentik.ErrorCode(err) != c.code {
			t.Errorf("state %.40v: %v, want %s", c.state, err, c.code)
		}
	}
	for _, s := range []string{`null`, `{}`, ` { } `} {
		in := input("thread-bad-state", "run-1", user("u1", "Hi"))
		in["state"] = json.RawMessage(s)
		b, _ := json.Marshal(in)
		if got, err := DecodeInput(b); err != nil || got.State != nil {
			t.Errorf("state %s: %+v, %v; want no state to set", s, got.State, err)
		}
	}
}

// TestTranslatorState: the run's snapshot, then each change as the patch
// from what the client has — nothing for a change it already has — and
// STATE_DELTA written with its patch as delta.
func TestTranslatorState(t *testing.T) {
	tr := newTranslator("th", "run", []string{"u1"}, nil, func() string { return "id" })
	if out := tr.snapshot([]byte(`{}`)); len(out) != 0 {
		t.Fatalf("an empty state made %+v", out)
	}
	out := tr.snapshot([]byte(`{"a":1}`))
	if len(out) != 1 || out[0].Type != StateSnapshot || string(out[0].Snapshot) != `{"a":1}` {
		t.Fatalf("snapshot %+v", out)
	}
	if out := tr.event(agentik.Event{Type: agentik.EvStateUpdated, State: agentik.RawJSON(`{"a":1}`)}); len(out) != 0 {
		t.Fatalf("a change the snapshot holds made %+v", out)
	}
	out = tr.event(agentik.Event{Type: agentik.EvStateUpdated, State: agentik.RawJSON(`{"a":2,"b":[1]}`),
		Patch: agentik.RawJSON(`[{"op":"test","path":"/zzz","value":0}]`)}) // not the client's: ignored
	if len(out) != 1 || out[0].Type != StateDelta {
		t.Fatalf("delta %+v", out)
	}
	frame, err := appendFrame(nil, out[0])
	if err != nil || string(frame) != `data: {"type":"STATE_DELTA","delta":[{"op":"replace","path":"/a","value":2},{"op":"add","path":"/b","value":[1]}]}`+"\n\n" {
		t.Fatalf("frame %q, %v", frame, err)
	}
	frame, _ = appendFrame(nil, Event{Type: StateSnapshot, Snapshot: json.RawMessage(`{"a":1}`)})
	if string(frame) != `data: {"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`+"\n\n" {
		t.Fatalf("frame %q", frame)
	}
}

// TestStateCannotBeTakenByAnotherPrincipal: bob sends runs with a state
// under alice's thread name and under the conversation id her thread
// resolves to; each lands in a conversation of his own, and alice's next
// run's STATE_SNAPSHOT is still her state.
func TestStateCannotBeTakenByAnotherPrincipal(t *testing.T) {
	e := newEnvAuth(t, tokenIsPrincipal{}, withState)
	run := func(who, thread, runID, state string, msgs ...map[string]any) response {
		t.Helper()
		in := input(thread, runID, msgs...)
		if state != "" {
			in["state"] = json.RawMessage(state)
		}
		b, _ := json.Marshal(in)
		r := e.post(string(b), "Authorization", "Bearer "+who)
		if r.status != http.StatusOK || r.events[len(r.events)-1]["type"] != RunFinished {
			t.Fatalf("%s's run on %s: %d %s", who, thread, r.status, r.body)
		}
		return r
	}
	snapshot := func(r response) string {
		t.Helper()
		for i, ev := range r.events {
			if ev["type"] == StateSnapshot {
				var v struct{ Snapshot json.RawMessage }
				if err := json.Unmarshal([]byte(r.frames[i]), &v); err != nil {
					t.Fatal(err)
				}
				return string(v.Snapshot)
			}
		}
		t.Fatalf("no STATE_SNAPSHOT in %s", r.body)
		return ""
	}
	e.llm.Enqueue(llmtest.Text("noted"))
	run("alice", "board", "r1", `{"owner":"alice","cards":[1]}`, user("a1", "hi"))
	for i, thread := range []string{"board", ConversationID("alice", "board")} {
		e.llm.Enqueue(llmtest.Text("bob's"))
		r := run("bob", thread, "b", `{"owner":"bob"}`, user(fmt.Sprintf("b%d", i), "mine now"))
		if got := snapshot(r); got != `{"owner":"bob"}` {
			t.Fatalf("bob's run on %s shows state %s", thread, got)
		}
	}
	if got := snapshot(run("alice", "board", "r2", "")); got != `{"cards":[1],"owner":"alice"}` { // stored compact, keys sorted
		t.Fatalf("alice's state after bob's runs: %s", got)
	}
}
