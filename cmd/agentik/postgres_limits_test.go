package main

import (
	"context"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// rateLimited checks that err is a 429 rate_limited.
func rateLimited(t *testing.T, what string, err error) {
	t.Helper()
	if agentik.ErrorCode(err) != agentik.ERateLimited {
		t.Fatalf("%s: %v, want rate_limited", what, err)
	}
}

// TestPostgresLimitsAcrossProcesses: per-principal limits hold for the
// cluster, not per process. With two processes on one database and a limit
// of one running conversation, a conversation answered on A makes B refuse
// another conversation's message until A's turn ends; with three messages a
// minute, the fourth is refused wherever the first three went; and two
// conversations a minute across both.
func TestPostgresLimitsAcrossProcesses(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("slow ").Pause(gate).Content("answer").Finish("stop").Done())
	llm.Handle(echo)
	ctx := context.Background()

	t.Run("concurrent turns", func(t *testing.T) {
		ps, cs := pgProcs(t, llm, 2, "AGENTIK_MAX_CONCURRENT_TURNS=1", "AGENTIK_MESSAGES_PER_MINUTE=0", "AGENTIK_CONVERSATIONS_PER_MINUTE=0")
		a, b := cs[0], cs[1]
		// Every wait below is bounded (until: 30 s); one that fails shows
		// both processes' logs.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("--- A:\n%s\n--- B:\n%s", ps[0].log(), ps[1].log())
			}
		})
		x, err := a.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		convX, _ := a.Conversation(ctx, x.ID)
		convXB, _ := b.Conversation(ctx, x.ID)
		s, err := convXB.Events(ctx, agentik.LiveOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := convX.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("slow")}})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-gate.Reached(): // A answers x
		case <-time.After(30 * time.Second):
			t.Fatal("no model call for x within 30 s")
		}
		until(t, s, "working event of x through B", func(ev agentik.Event) bool { return ev.Type == agentik.EvWorking }) // B knows A runs x
		convY, _ := b.Conversation(ctx, y.ID)
		_, err = convY.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("other")}})
		rateLimited(t, "a second running conversation through B", err)
		// A message to x itself, through B, adds no running conversation.
		if _, err := convXB.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("more")}}); err != nil {
			t.Fatalf("a message to the running conversation through B: %v", err)
		}
		gate.Release()
		until(t, s, "end of x's turn through B", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
	})

	t.Run("rates", func(t *testing.T) {
		_, cs := pgProcs(t, llm, 2, "AGENTIK_MAX_CONCURRENT_TURNS=0", "AGENTIK_MESSAGES_PER_MINUTE=3", "AGENTIK_CONVERSATIONS_PER_MINUTE=2")
		a, b := cs[0], cs[1]
		x, err := a.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.CreateConversation(ctx, agentik.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
		_, err = a.CreateConversation(ctx, agentik.CreateRequest{})
		rateLimited(t, "a third conversation in a minute, after one on each process", err)
		_, err = b.CreateConversation(ctx, agentik.CreateRequest{})
		rateLimited(t, "a third conversation in a minute, through the other process", err)
		for i, c := range []*httpapi.Client{a, b, a} {
			conv, _ := c.Conversation(ctx, x.ID)
			if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("m")}}); err != nil {
				t.Fatalf("message %d: %v", i+1, err)
			}
		}
		convB, _ := b.Conversation(ctx, x.ID)
		_, err = convB.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("m")}})
		rateLimited(t, "a fourth message in a minute", err)
	})
}
