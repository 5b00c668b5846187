package storetest

import (
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// testState: state keys are set, replaced and removed in a Write, read one
// by one, kept apart per conversation, refused when malformed (nothing
// changed) and deleted with their conversation.
func testState(t *testing.T, s agentik.Store) {
	a := newConversation(t, s)
	b := newConversation(t, s)
	get := func(conv, key string) string {
		t.Helper()
		v, err := s.State(t.Context(), conv, key)
		if err != nil {
			t.Fatalf("State(%s): %v", key, err)
		}
		return string(v)
	}
	commit(t, s, agentik.Write{ConversationID: a.ID, State: map[string]agentik.RawJSON{
		"a2a.context x": agentik.RawJSON(`"ctx-1"`), "other": agentik.RawJSON(`{"n":1}`)}})
	commit(t, s, agentik.Write{ConversationID: b.ID, State: map[string]agentik.RawJSON{"a2a.context x": agentik.RawJSON(`"ctx-b"`)}})
	if got := get(a.ID, "a2a.context x"); got != `"ctx-1"` {
		t.Fatalf("state of a: %s", got)
	}
	if got := get(b.ID, "a2a.context x"); got != `"ctx-b"` {
		t.Fatalf("state of b: %s", got)
	}
	if got := get(a.ID, "never set"); got != "" {
		t.Fatalf("an unset key reads %s", got)
	}
	if got := get(agentik.NewID(), "other"); got != "" {
		t.Fatalf("an unknown conversation's state reads %s", got)
	}
	// Replaced and removed in one write, with a journal message.
	commit(t, s, agentik.Write{ConversationID: a.ID, Events: []agentik.Event{agentik.MessageEvent(userMsg(a.ID, "x"))},
		State: map[string]agentik.RawJSON{"a2a.context x": agentik.RawJSON(`"ctx-2"`), "other": nil}})
	if got := get(a.ID, "a2a.context x"); got != `"ctx-2"` {
		t.Fatalf("replaced state: %s", got)
	}
	if got := get(a.ID, "other"); got != "" {
		t.Fatalf("removed state reads %s", got)
	}
	// Refused: nothing changes.
	for _, bad := range []map[string]agentik.RawJSON{
		{"": agentik.RawJSON(`1`)},
		{strings.Repeat("k", agentik.MaxStateKey+1): agentik.RawJSON(`1`)},
		{"a2a.context x": agentik.RawJSON(`not json`)},
		{"a2a.context x": agentik.RawJSON(`"` + strings.Repeat("v", agentik.MaxStateValue) + `"`)},
	} {
		if _, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: a.ID, State: bad}); err == nil {
			t.Fatalf("a malformed state write was accepted")
		}
	}
	if got := get(a.ID, "a2a.context x"); got != `"ctx-2"` {
		t.Fatalf("a refused write changed the state: %s", got)
	}
	if _, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: agentik.NewID(), State: map[string]agentik.RawJSON{"k": agentik.RawJSON(`1`)}}); !agentik.IsNotFound(err) {
		t.Fatalf("state of an unknown conversation: %v", err)
	}
	if _, err := s.DeleteConversation(t.Context(), a.ID, agentik.Now()); err != nil {
		t.Fatal(err)
	}
	if got := get(a.ID, "a2a.context x"); got != "" {
		t.Fatalf("state outlived its conversation: %s", got)
	}
	if got := get(b.ID, "a2a.context x"); got != `"ctx-b"` {
		t.Fatalf("deleting a took b's state: %s", got)
	}
}
