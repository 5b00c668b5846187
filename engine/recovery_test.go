package engine_test

import (
	"slices"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/sqlite"
)

// TestClientToolTurnSurvivesRestart: a turn waiting for client tool results
// on SQLite survives a restart as it is — the model is not asked again, the
// round waits — and the results posted after the restart continue it, with
// the client tools offered again (they are stored with the user message).
func TestClientToolTurnSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	pick := agentik.ToolSpec{Name: "pick_color", Description: "Ask the user to pick a color", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_ui"), llmtest.Call("current_time", `{}`).WithID("call_srv")))
	c, s := h.conversation()
	res, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("pick")}, ClientTools: []agentik.ToolSpec{pick}})
	if err != nil {
		t.Fatal(err)
	}
	if evs := until(t, s, endOf(res.MessageID)); evs[len(evs)-1].Reason != agentik.EndClientTools {
		t.Fatalf("first round: %s", types(evs))
	}
	h.stop()

	// After the restart the only scripted answer is the continuation's: a
	// turn answered again from its user message would take it.
	h.llm.Enqueue(llmtest.Text("You picked blue."))
	h.start()
	c2, err := h.eng.Conversation(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c2.Events(h.ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	res2, err := c2.Send(h.ctx, agentik.SendRequest{ToolResults: []agentik.ClientToolResult{{CallID: "call_ui", Content: []agentik.Content{agentik.Text("blue")}}}})
	if err != nil || res2.MessageID != res.MessageID {
		t.Fatalf("results after the restart: %+v, %v", res2, err)
	}
	evs := until(t, s2, endOf(res.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
		t.Fatalf("continued turn: %s", types(evs))
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2: the first round and the continuation", len(reqs))
	}
	if !slices.Contains(reqs[1].ToolNames(), "pick_color") {
		t.Fatalf("the continuation offered %v, not the client's tool", reqs[1].ToolNames())
	}
	var results []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results = append(results, m.ToolCallID+"="+m.Text())
		}
	}
	if len(results) != 2 || results[0] != "call_ui=blue" {
		t.Fatalf("tool results fed back %v", results)
	}
	msgs := journal(t, c2)
	if last := msgs[len(msgs)-1]; last.Type != agentik.MsgAssistant || agentik.JoinText(last.Content) != "You picked blue." {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
}

// TestQueuedClientToolsSurviveRestart: a message stored with client tools
// by a process that died before answering it is answered at the next start
// offering those tools.
func TestQueuedClientToolsSurviveRestart(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	h.stop()
	st, err := sqlite.Open(h.ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	pick := agentik.ToolSpec{Name: "pick_color", Description: "Ask the user to pick a color", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	m := agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("pick")},
		ClientTools: []agentik.ToolSpec{pick}}
	if _, _, err := st.Commit(h.ctx, agentik.Write{ConversationID: c.ID(), Events: []agentik.Event{agentik.MessageEvent(&m)}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h.llm.Enqueue(llmtest.Text("Which color?"))
	h.start()
	c2, _ := h.eng.Conversation(h.ctx, c.ID())
	s2, err := c2.Events(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	until(t, s2, endOf(m.ID))
	reqs := h.llm.Requests()
	if len(reqs) != 1 || !slices.Contains(reqs[0].ToolNames(), "pick_color") {
		t.Fatalf("the recovered message was answered offering %v", reqs[0].ToolNames())
	}
}
