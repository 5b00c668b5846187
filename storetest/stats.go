package storetest

import (
	"testing"

	"github.com/agentik/agentik"
)

// testStats: each agent's view counts its own conversations, messages,
// durable and agent events; a deleted conversation no longer counts (its
// agent events stay); the database size is positive and grows.
func testStats(t *testing.T, s Agents) {
	a, b := s.For("support"), s.For("coder")
	sa, sb := a, b
	stats := func(r agentik.StatsReader) agentik.StoreStats {
		t.Helper()
		st, err := r.Stats(t.Context())
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		return st
	}
	empty := stats(sa)
	if empty.Conversations != 0 || empty.Messages != 0 || empty.Events != 0 || empty.AgentEvents != 0 || empty.DatabaseBytes <= 0 {
		t.Fatalf("empty: %+v", empty)
	}
	owner := newOwner()
	var agentEvents int64
	counted := func(aev *agentik.AgentEvent) {
		if aev != nil {
			agentEvents++
		}
	}
	var convs []agentik.ConversationRecord
	for i := 0; i < 3; i++ {
		c := record(owner, "a", at(i), at(i))
		create(t, a, c)
		agentEvents++
		convs = append(convs, c)
		for j := 0; j <= i; j++ { // 1, 2 and 3 commits of two messages
			u := userMsg(c.ID, "question")
			_, aev := commit(t, a, agentik.Write{ConversationID: c.ID, Events: events(u, reply(c.ID, agentik.MsgAssistant, u.ID)), Touch: at(10 + j)})
			counted(aev)
		}
	}
	other := record(owner, "b", at(1), at(1))
	create(t, b, other)
	commit(t, b, agentik.Write{ConversationID: other.ID, Events: events(userMsg(other.ID, "elsewhere"))})

	got := stats(sa)
	want := agentik.StoreStats{Conversations: 3, Messages: 12, Events: 12, AgentEvents: agentEvents}
	if got.Conversations != want.Conversations || got.Messages != want.Messages || got.Events != want.Events || got.AgentEvents != want.AgentEvents {
		t.Fatalf("support: %+v, want %+v", got, want)
	}
	if got.DatabaseBytes < empty.DatabaseBytes {
		t.Errorf("the database shrank: %d then %d bytes", empty.DatabaseBytes, got.DatabaseBytes)
	}
	if o := stats(sb); o.Conversations != 1 || o.Messages != 1 || o.Events != 1 || o.AgentEvents != 1 || o.DatabaseBytes != got.DatabaseBytes {
		t.Fatalf("coder: %+v (support %+v)", o, got)
	}

	// A deleted conversation takes its messages and events along; its
	// agent events (created, deleted) stay in the stream.
	if _, err := a.DeleteConversation(t.Context(), convs[2].ID, at(30)); err != nil {
		t.Fatal(err)
	}
	got = stats(sa)
	if got.Conversations != 2 || got.Messages != 6 || got.Events != 6 || got.AgentEvents != agentEvents+1 {
		t.Fatalf("after a delete: %+v", got)
	}
}

// testStatsCounts: a store counts its conversations, their messages and
// durable events, and its agent events; a deleted conversation no longer
// counts, its agent events stay. (testStats checks the views of agents and
// the database size, which a store without a database reports as 0.)
func testStatsCounts(t *testing.T, s agentik.Store) {
	stats := func() agentik.StoreStats {
		t.Helper()
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		if st.DatabaseBytes < 0 {
			t.Fatalf("negative database size: %+v", st)
		}
		st.DatabaseBytes = 0
		return st
	}
	before := stats()
	c, other := newConversation(t, s), newConversation(t, s)
	u := userMsg(c.ID, "question")
	commit(t, s, agentik.Write{ConversationID: c.ID, Events: events(u, reply(c.ID, agentik.MsgAssistant, u.ID))})
	commit(t, s, agentik.Write{ConversationID: other.ID, Events: events(userMsg(other.ID, "elsewhere"))})
	want := agentik.StoreStats{Conversations: before.Conversations + 2, Messages: before.Messages + 3,
		Events: before.Events + 3, AgentEvents: before.AgentEvents + 2}
	if got := stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
	if _, err := s.DeleteConversation(t.Context(), c.ID, at(30)); err != nil {
		t.Fatal(err)
	}
	want = agentik.StoreStats{Conversations: before.Conversations + 1, Messages: before.Messages + 1,
		Events: before.Events + 1, AgentEvents: before.AgentEvents + 3}
	if got := stats(); got != want {
		t.Fatalf("after a delete: %+v, want %+v", got, want)
	}
}
