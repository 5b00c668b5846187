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

// testLookupKeys: keys recorded with a write's first message find its
// conversation and that message's seq, for their owner only; a key
// recorded again points to the newest; a malformed key is refused
// (nothing changed); the keys go with their conversation.
func testLookupKeys(t *testing.T, s agentik.Store) {
	a := newConversation(t, s)
	b := newConversation(t, s)
	find := func(owner string, keys ...string) map[string]agentik.KeyRef {
		t.Helper()
		got, err := s.FindKeys(t.Context(), owner, keys)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	commit(t, s, agentik.Write{ConversationID: a.ID, Events: []agentik.Event{agentik.MessageEvent(userMsg(a.ID, "one"))}})
	evs, _ := commit(t, s, agentik.Write{ConversationID: a.ID, Keys: []string{"k1", "k2"},
		Events: []agentik.Event{agentik.MessageEvent(userMsg(a.ID, "two")), agentik.MessageEvent(userMsg(a.ID, "three"))}})
	seq := evs[0].Message.Seq
	got := find(a.Owner, "k1", "k2", "never")
	if len(got) != 2 || got["k1"] != (agentik.KeyRef{ConversationID: a.ID, Seq: seq}) || got["k2"] != got["k1"] || seq != 2 {
		t.Fatalf("found %+v, want k1 and k2 at %s seq %d", got, a.ID, seq)
	}
	if got := find(b.Owner, "k1"); len(got) != 0 {
		t.Fatalf("another owner finds %+v", got)
	}
	if got := find(a.Owner); len(got) != 0 {
		t.Fatalf("no keys find %+v", got)
	}
	// The same owner records k1 again elsewhere: the newest wins.
	c := record(a.Owner, "c", at(0), at(0))
	create(t, s, c)
	commit(t, s, agentik.Write{ConversationID: c.ID, Keys: []string{"k1"}, Events: []agentik.Event{agentik.MessageEvent(userMsg(c.ID, "four"))}})
	if got := find(a.Owner, "k1", "k2"); got["k1"] != (agentik.KeyRef{ConversationID: c.ID, Seq: 1}) || got["k2"].ConversationID != a.ID {
		t.Fatalf("after recording k1 again: %+v", got)
	}
	for _, bad := range []string{"", strings.Repeat("k", agentik.MaxLookupKey+1), "bad\xff"} {
		_, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: a.ID, Keys: []string{"fine", bad}})
		if agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("key %q: %v", bad, err)
		}
	}
	if got := find(a.Owner, "fine"); len(got) != 0 {
		t.Fatalf("a refused write recorded %+v", got)
	}
	if _, err := s.DeleteConversation(t.Context(), a.ID, at(1)); err != nil {
		t.Fatal(err)
	}
	if got := find(a.Owner, "k1", "k2"); len(got) != 1 || got["k1"].ConversationID != c.ID {
		t.Fatalf("after the delete: %+v", got)
	}
}
