package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestClientToolsOfferedByAnotherProcess: a message sent to A with client
// tools (AG-UI's tools), queued while B holds the lease, is answered by B
// offering those tools: they are stored with the message, not kept in A.
func TestClientToolsOfferedByAnotherProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	first := llmtest.NewGate()
	defer first.Release()
	llm.Handle(gatedBy(map[string]*llmtest.Gate{"first": first}))
	dsn := freshSchema(t)
	a := newNode(t, dsn, llm, nodeOptions{scan: time.Hour}) // A runs only what it is kicked for
	b := newNode(t, dsn, llm, nodeOptions{})
	ctx := context.Background()
	info, err := b.eng.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	convA, _ := a.eng.Conversation(ctx, info.ID)
	convB, _ := b.eng.Conversation(ctx, info.ID)
	s, err := convB.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sendText(t, convB, "first")
	<-first.Reached() // B holds the lease
	pick := agentik.ToolSpec{Name: "pick_color", Description: "Ask the user", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	res, err := convA.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("second")}, ClientTools: []agentik.ToolSpec{pick}})
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	waitFor(t, s, "the answer to the second message", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == res.MessageID
	})
	i := slices.IndexFunc(llm.Requests(), func(r llmtest.Request) bool { return r.LastUserText() == "second" })
	if i < 0 || !slices.Contains(llm.Requests()[i].ToolNames(), "pick_color") {
		t.Fatalf("the second message was answered without the client's tool (request %d)", i)
	}
}
