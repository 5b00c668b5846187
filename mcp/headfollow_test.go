package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestServeHeadFollow: after an edit of the second user message (a send
// whose Parent is a1) and then a regenerate, both through the Go API,
// read_conversation returns the head path and not the abandoned branch, and
// ask continuing the conversation is answered from the head path (the
// model sees it, not the abandoned messages); a head switch back to a2
// reads the first branch again.
func TestServeHeadFollow(t *testing.T) {
	e := newServeEnv(t)
	var mu sync.Mutex
	var seen [][]string // the user and assistant texts of each model request
	regen := false
	e.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		var texts []string
		for _, m := range r.Messages {
			if m.Role == "user" || m.Role == "assistant" {
				texts = append(texts, m.Text())
			}
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, texts)
		if regen {
			return llmtest.Text("again")
		}
		return llmtest.Text("a" + strings.TrimPrefix(r.LastUserText(), "q"))
	})
	ctx := serveCtx(t)
	cs := e.connect("tok-alice", ProtocolCurrent)
	_, out := ask(t, ctx, cs, map[string]any{"message": "q1"}, nil)
	id := out.ConversationID
	ask(t, ctx, cs, map[string]any{"message": "q2", "conversation_id": id}, nil)
	read := func() []string {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolReadConversation, Arguments: map[string]any{"conversation_id": id}})
		if err != nil || res.IsError {
			t.Fatalf("read_conversation: %v %q", err, resultText(res))
		}
		var r ReadOutput
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, m := range r.Messages {
			texts = append(texts, m.Text)
		}
		return texts
	}
	if got := read(); !slices.Equal(got, []string{"q1", "a1", "q2", "a2"}) {
		t.Fatalf("before: %q", got)
	}
	actx := agentik.WithPrincipal(ctx, "alice")
	conv, err := e.eng.Conversation(actx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	st := e.events(t, "alice", id)
	defer st.Close()
	parent := e.journal("alice", id)[1].Seq // a1
	if _, err := conv.Send(actx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("q2b")}, Parent: &parent}); err != nil {
		t.Fatal(err)
	}
	e.waitEnd(t, st, agentik.EndCompleted)
	if got, want := read(), []string{"q1", "a1", "q2b", "a2b"}; !slices.Equal(got, want) {
		t.Fatalf("after the edit read_conversation is %q, want %q", got, want)
	}
	mu.Lock()
	regen = true
	mu.Unlock()
	if _, err := conv.Regenerate(actx, agentik.RegenerateRequest{}); err != nil {
		t.Fatal(err)
	}
	e.waitEnd(t, st, agentik.EndCompleted)
	if got, want := read(), []string{"q1", "a1", "q2b", "again"}; !slices.Equal(got, want) {
		t.Fatalf("after regenerate read_conversation is %q, want %q", got, want)
	}
	mu.Lock()
	regen = false
	mu.Unlock()
	if _, out := ask(t, ctx, cs, map[string]any{"message": "q3", "conversation_id": id}, nil); out.Answer != "a3" {
		t.Fatalf("ask after the head moved: %+v", out)
	}
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if want := []string{"q1", "a1", "q2b", "again", "q3"}; !slices.Equal(last, want) {
		t.Fatalf("ask after the head moved: the model saw %q, want %q", last, want)
	}
	// Switching the head back to the first branch's leaf (a2).
	if _, err := conv.SetHead(actx, parent+2); err != nil { // a2: seq 4
		t.Fatal(err)
	}
	if got, want := read(), []string{"q1", "a1", "q2", "a2"}; !slices.Equal(got, want) {
		t.Fatalf("after switching the head read_conversation is %q, want %q", got, want)
	}
}
