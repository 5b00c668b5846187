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
	_, cs := sharedConversation(t, ctx, b, a)
	convB, convA := cs[0], cs[1]
	s := liveEvents(t, ctx, convB)
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

// TestNewMessageAbandonsClientRoundOfAnotherProcess: a turn run by A waits
// for a client tool's result; a new message posted to B (enqueue) abandons
// it — closed with interrupted{busy_policy} — and is answered. B's send
// reads nothing: the lease holder's loop finds the waiting round with the
// message behind it.
func TestNewMessageAbandonsClientRoundOfAnotherProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_pick")), llmtest.Text("moved on"))
	dsn := freshSchema(t)
	// No scans: a scan takes the lease of the waiting turn for a moment,
	// and an interrupt then finds it held.
	a := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	b := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	ctx := context.Background()
	id, cs := sharedConversation(t, ctx, a, b)
	convA, convB := cs[0], cs[1]
	s := liveEvents(t, ctx, convB)
	pick := agentik.ToolSpec{Name: "pick_color", Description: "Ask the user", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	first, err := convA.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("first")}, ClientTools: []agentik.ToolSpec{pick}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "the first turn waiting for the client", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == first.MessageID && ev.Reason == agentik.EndClientTools
	})
	// Once A has let the lease go, nothing runs: a plain interrupt through
	// B leaves the waiting turn alone (only a new message abandons it).
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, held, err := a.coord.Holder(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("A still holds the lease after 10 s")
		}
		time.Sleep(5 * time.Millisecond) // polling the lease table, not synchronising
	}
	if ok, err := convB.Interrupt(ctx); err != nil || ok {
		t.Fatalf("interrupt while the client's round waits: %v, %v", ok, err)
	}
	next := sendText(t, convB, "next")
	seen := waitFor(t, s, "the answer to the next message", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == next.MessageID
	})
	if !slices.ContainsFunc(seen, func(ev agentik.Event) bool {
		return ev.Type == agentik.EvInterrupted && ev.ReplyTo == first.MessageID && ev.Reason == agentik.ReasonBusyPolicy
	}) {
		t.Fatalf("the waiting turn was not closed with interrupted{busy_policy}: %v", seen)
	}
	open, err := a.store.OpenTurns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 0 {
		t.Fatalf("open turns left: %v", open)
	}
}
