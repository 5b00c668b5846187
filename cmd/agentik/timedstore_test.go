package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/sqlite"
)

// TestTimedStore: timing an engine's commits observes each Commit once and
// leaves every other read to the store, the stored-JSON replay included (a
// wrapper once hid it, when it was an optional interface the engine found
// by assertion; it is now part of agentik.Store).
func TestTimedStore(t *testing.T) {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var commits int
	ts := timedStore{Store: s, observe: func(time.Duration) { commits++ }}
	ctx := t.Context()
	now := agentik.Now()
	c := agentik.ConversationRecord{ID: agentik.NewID(), CreatedAt: now, UpdatedAt: now}
	if _, err := ts.CreateConversation(ctx, c); err != nil {
		t.Fatal(err)
	}
	m := &agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: now, Content: []agentik.Content{agentik.Text("hi")}}
	evs, _, err := ts.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{agentik.MessageEvent(m)}})
	if err != nil || commits != 1 {
		t.Fatalf("commit: %v, observed %d times", err, commits)
	}
	got, err := ts.EventsJSON(ctx, c.ID, 0, 0)
	if err != nil || len(got) != 1 || got[0].Cursor != evs[0].Cursor {
		t.Fatalf("EventsJSON through the timed store: %v, %v", got, err)
	}
	want, _ := s.EventsJSON(ctx, c.ID, 0, 0)
	gb, _ := got[0].JSON()
	wb, _ := want[0].JSON()
	if string(gb) != string(wb) {
		t.Fatalf("EventsJSON through the timed store:\n got  %s\n want %s", gb, wb)
	}
}
