package memstore

import (
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) agentik.Store {
		s := New()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestCursorsProcessWide: two stores in one process never hand out the same
// cursor, so a temporal conversation's events cannot be confused with
// another's.
func TestCursorsProcessWide(t *testing.T) {
	a, b := New(), New()
	defer a.Close()
	defer b.Close()
	seen := map[int64]bool{}
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		now := agentik.Now()
		ev, err := s.CreateConversation(t.Context(), agentik.ConversationRecord{ID: agentik.NewID(), CreatedAt: now, UpdatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		m := &agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: now, Content: []agentik.Content{agentik.Text("x")}}
		evs, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: ev.Conversation.ID,
			Events: []agentik.Event{agentik.MessageEvent(m)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []int64{ev.Cursor, evs[0].Cursor} {
			if seen[c] {
				t.Fatalf("cursor %d handed out twice", c)
			}
			seen[c] = true
		}
	}
}
