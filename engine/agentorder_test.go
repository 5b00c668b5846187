package engine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// TestAgentEventsInOrderUnderConcurrentTurns: commits of many conversations
// run at once (the store group commits them), yet every agent stream — live
// from the start, or joining with a replay while they run — receives every
// agent event once, in strictly increasing cursor order, exactly as stored.
func TestAgentEventsInOrderUnderConcurrentTurns(t *testing.T) {
	h := newHarness(t)
	live, err := h.eng.Events(h.ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	const convs, turns = 16, 3
	var wg sync.WaitGroup
	errs := make(chan error, convs)
	halfway := make(chan struct{})
	var once sync.Once
	for i := range convs {
		wg.Go(func() {
			info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{})
			if err != nil {
				errs <- err
				return
			}
			c, err := h.eng.Conversation(h.ctx, info.ID)
			if err != nil {
				errs <- err
				return
			}
			s, err := c.Events(h.ctx, agentik.LiveOnly)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for j := range turns {
				res, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}})
				if err != nil {
					errs <- err
					return
				}
				if err := waitEnd(s, res.MessageID); err != nil {
					errs <- err
					return
				}
				if i == 0 && j == 0 {
					once.Do(func() { close(halfway) })
				}
			}
			if _, err := h.eng.RenameConversation(h.ctx, info.ID, "renamed"); err != nil {
				errs <- err
			}
		})
	}
	// A stream that joins while the turns run: replay, then live.
	<-halfway
	joined, err := h.eng.Events(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer joined.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	stored, err := h.store.AgentEvents(h.ctx, 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	// created, a touch per send and per answer, renamed twice: the title
	// from the first message (title.go), then the rename
	if want := convs * (3 + 2*turns); len(stored) != want {
		t.Fatalf("%d agent events stored, want %d", len(stored), want)
	}
	for name, s := range map[string]agentik.Stream[agentik.AgentEvent]{"live": live, "joined": joined} {
		var prev int64
		deadline := time.After(time.Minute) // a bound for a loaded machine
		for i, want := range stored {
			var ev agentik.AgentEvent
			select {
			case ev = <-s.C():
			case <-deadline:
				t.Fatalf("%s: %d of %d events", name, i, len(stored))
			}
			if ev.Cursor <= prev {
				t.Fatalf("%s: cursor %d after %d", name, ev.Cursor, prev)
			}
			if ev.Cursor != want.Cursor || ev.Type != want.Type {
				t.Fatalf("%s: event %d is %d %s, stored %d %s", name, i, ev.Cursor, ev.Type, want.Cursor, want.Type)
			}
			prev = ev.Cursor
		}
	}
}

// waitEnd waits for the end of the turn answering id (off the test's
// goroutine, so it returns an error instead of failing the test).
func waitEnd(s agentik.Stream[agentik.Event], id string) error {
	deadline := time.After(time.Minute) // a bound for a loaded machine
	for {
		select {
		case ev, ok := <-s.C():
			if !ok {
				return fmt.Errorf("stream ended before the end of %s: %v", id, s.Err())
			}
			if ev.Type == agentik.EvEnd && ev.ReplyTo == id {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("no end of %s", id)
		}
	}
}
