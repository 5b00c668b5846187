package ws

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestHeadFollow: an edit of the second user message made through the Go
// API (a send whose Parent is not the head) streams its answer to the
// attached connection; after a reconnect the conversation goes on from the
// head path (the model sees q1 a1 q2b a2b, not the abandoned q2 a2), and a
// regenerate streams its new answer to the live connection too.
func TestHeadFollow(t *testing.T) {
	s := newStack(t, Options{}, nil)
	var mu sync.Mutex
	var seen [][]string // the user and assistant texts of each model request
	regen := false
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		var texts []string
		for _, m := range r.Messages {
			if m.Role == "user" || m.Role == "assistant" {
				texts = append(texts, m.Text())
			}
		}
		mu.Lock()
		seen = append(seen, texts)
		again := regen
		mu.Unlock()
		if !again {
			return llmtest.Text("a" + strings.TrimPrefix(r.LastUserText(), "q"))
		}
		return llmtest.Text("again")
	})
	c := s.dial(nil)
	id := c.ConversationID()
	for _, q := range []string{"q1", "q2"} {
		if err := c.Send(testCtx(t), q); err != nil {
			t.Fatal(err)
		}
		if text, _, _ := answer(t, c); text != "a"+q[1:] {
			t.Fatalf("%s answered %q", q, text)
		}
	}
	s.waitIdle(id, "")
	j := s.journal(id, "")
	ctx := testCtx(t)
	conv, err := s.eng.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	parent := j[1].Seq // a1: the edit of q2 follows it
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("q2b")}, Parent: &parent}); err != nil {
		t.Fatal(err)
	}
	if text, _, _ := answer(t, c); text != "a2b" {
		t.Fatalf("live connection got %q after the edit, want a2b", text)
	}
	s.waitIdle(id, "")
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c2, err := c.Reconnect(rctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.Send(ctx, "q3"); err != nil {
		t.Fatal(err)
	}
	if text, _, _ := answer(t, c2); text != "a3" {
		t.Fatalf("q3 answered %q", text)
	}
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if want := []string{"q1", "a1", "q2b", "a2b", "q3"}; !slices.Equal(last, want) {
		t.Fatalf("after reconnect the model saw %q, want the head path %q", last, want)
	}
	s.waitIdle(id, "")
	mu.Lock()
	regen = true
	mu.Unlock()
	if _, err := conv.Regenerate(ctx, agentik.RegenerateRequest{}); err != nil {
		t.Fatal(err)
	}
	if text, _, _ := answer(t, c2); text != "again" {
		t.Fatalf("live connection got %q after regenerate, want again", text)
	}
}
