package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestInterruptAnswersWhetherItCut (issue 53): Interrupt through A answers
// whether a turn was cut, not whether some process holds the lease. While
// B holds the lease and runs nothing — a scan's moment, or the look at the
// queue after a turn's end — it answers false and nothing is cut; while B
// runs a turn, true, and that turn ends interrupted. Before, both idle
// cases answered true.
func TestInterruptAnswersWhetherItCut(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Handle(gated(gate))
	dsn := freshSchema(t)
	a := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	b := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	ctx := context.Background()
	id, cs := sharedConversation(t, ctx, a, b)
	convA, convB := cs[0], cs[1]
	s := liveEvents(t, ctx, convA)

	// B holds the lease as a scan does for a moment: nothing runs.
	holdIdle := func(what string) {
		t.Helper()
		l, err := b.coord.Acquire(ctx, id)
		if err != nil || !l.Held {
			t.Fatalf("%s: B takes the lease: %+v %v", what, l, err)
		}
		if ok, err := convA.Interrupt(ctx); err != nil || ok {
			t.Fatalf("%s: interrupt through A while B only holds the lease: %v, %v", what, ok, err)
		}
		b.coord.Release(ctx, id)
	}
	holdIdle("before any turn")

	// B runs a turn: A hears its working, and the interrupt cuts it.
	m := sendText(t, convB, "cut me")
	<-gate.Reached()
	waitFor(t, s, "B's turn working on A", func(ev agentik.Event) bool { return ev.Type == agentik.EvWorking && ev.ReplyTo == m.MessageID })
	if ok, err := convA.Interrupt(ctx); err != nil || !ok {
		t.Fatalf("interrupt through A of B's running turn: %v, %v", ok, err)
	}
	evs := waitFor(t, s, "the end of B's turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == m.MessageID })
	if end := evs[len(evs)-1]; end.Reason != agentik.EndInterrupted {
		t.Fatalf("B's turn ended %q", end.Reason)
	}

	// Right after a turn's end, the lease still held: nothing to cut.
	next := sendText(t, convB, "answer me")
	waitFor(t, s, "the end of the next turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == next.MessageID })
	holdIdle("after the end")
	if ev := closing(t, a.store, id, next.MessageID); ev.Type != agentik.EvAssistantMessage {
		t.Fatalf("the next turn was closed by %+v", ev)
	}
}

// TestTemporalConversationElsewhere (issue 53): a temporal conversation
// lives in the process that created it; a request for it through another
// process is answered not found, saying where temporal conversations live.
func TestTemporalConversationElsewhere(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	dsn := freshSchema(t)
	a := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	b := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	ctx := context.Background()
	info, err := a.eng.CreateConversation(ctx, agentik.CreateRequest{Temporal: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.eng.Conversation(ctx, info.ID); err != nil {
		t.Fatalf("on its own process: %v", err)
	}
	_, err = b.eng.Conversation(ctx, info.ID)
	if !agentik.IsNotFound(err) || !strings.Contains(err.Error(), "temporal conversation is reachable only through the process that created it") {
		t.Fatalf("through another process: %v", err)
	}
}
