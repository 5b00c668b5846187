package storetest

import (
	"testing"

	"github.com/agentik/agentik"
)

// Agents is a store shared by several agents: the view of each agent, and
// the adoption of the conversations of before agents (those of agent "",
// the view the store's Open returns).
type Agents struct {
	Base  agentik.Store
	For   func(agent string) agentik.Store
	Adopt func(t *testing.T, agent string) int64
}

// RunAgents checks that each agent's view of one database holds its own
// conversations and agent events only, and that the contract holds for a
// view. open must return a fresh database, arranging for it to be closed.
func RunAgents(t *testing.T, open func(t *testing.T) Agents) {
	t.Run("Contract", func(t *testing.T) {
		Run(t, func(t *testing.T) agentik.Store {
			s := open(t)
			return viewOf{s.For("contract"), s.Base}
		})
	})
	t.Run("Isolation", func(t *testing.T) { testAgentIsolation(t, open(t)) })
	t.Run("Adopt", func(t *testing.T) { testAdopt(t, open(t)) })
	t.Run("Stats", func(t *testing.T) { testStats(t, open(t)) })
}

func testAgentIsolation(t *testing.T, s Agents) {
	ctx := t.Context()
	a, b := s.For("support"), s.For("coder")
	owner := newOwner()
	before := lastAgentCursor(t, a)
	ca := record(owner, "a", at(1), at(1))
	cb := record(owner, "b", at(2), at(2))
	create(t, a, ca)
	create(t, b, cb)
	equal(t, "own conversation", getConv(t, a, ca.ID), ca)
	for _, tc := range []struct {
		view agentik.Store
		id   string
	}{{a, cb.ID}, {b, ca.ID}, {s.Base, ca.ID}} {
		_, err := tc.view.GetConversation(ctx, tc.id)
		wantCode(t, err, agentik.ENotFound)
		_, _, err = tc.view.RenameConversation(ctx, tc.id, "taken", at(3))
		wantCode(t, err, agentik.ENotFound)
		_, err = tc.view.DeleteConversation(ctx, tc.id, at(3))
		wantCode(t, err, agentik.ENotFound)
	}
	list, _, err := a.ListConversations(ctx, owner, 50, "")
	if err != nil || len(list) != 1 || list[0].ID != ca.ID {
		t.Fatalf("agent a lists %v %v", list, err)
	}
	// Another agent's turns are not its open turns, and its agent events
	// are not in its stream.
	u := userMsg(cb.ID, "for b")
	commit(t, b, agentik.Write{ConversationID: cb.ID, Events: events(u), Touch: at(4)})
	open, err := a.OpenTurns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range open {
		if m.ConversationID == cb.ID {
			t.Fatalf("agent a sees agent b's open turn %s", m.ID)
		}
	}
	open, err = b.OpenTurns(ctx)
	if err != nil || len(open) != 1 || open[0].ID != u.ID {
		t.Fatalf("agent b's open turns %v %v", open, err)
	}
	if evs := agentEventsOf(t, a, before, cb.ID); len(evs) != 0 {
		t.Fatalf("agent a sees agent b's agent events %s", dump(evs))
	}
	if evs := agentEventsOf(t, b, before, cb.ID); len(evs) != 2 { // created, touched
		t.Fatalf("agent b's agent events %s", dump(evs))
	}
	if evs := agentEventsOf(t, a, before, ca.ID); len(evs) != 1 {
		t.Fatalf("agent a's agent events %s", dump(evs))
	}
	// Rename and delete through the owning view still emit to its stream.
	if _, _, err := b.RenameConversation(ctx, cb.ID, "renamed", at(5)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteConversation(ctx, cb.ID, at(6)); err != nil {
		t.Fatal(err)
	}
	if evs := agentEventsOf(t, b, before, cb.ID); len(evs) != 4 {
		t.Fatalf("agent b's agent events after rename and delete %s", dump(evs))
	}
	if evs := agentEventsOf(t, a, before, cb.ID); len(evs) != 0 {
		t.Fatalf("agent a sees agent b's agent events %s", dump(evs))
	}
}

func testAdopt(t *testing.T, s Agents) {
	ctx := t.Context()
	owner := newOwner()
	before := lastAgentCursor(t, s.Base)
	legacy := record(owner, "from before agents", at(1), at(1))
	create(t, s.Base, legacy)
	other := record(owner, "coder's", at(2), at(2))
	create(t, s.For("coder"), other)
	if n := s.Adopt(t, "support"); n != 1 {
		t.Fatalf("adopted %d conversations, want 1", n)
	}
	if n := s.Adopt(t, "support"); n != 0 {
		t.Fatalf("adopted %d again, want 0", n)
	}
	support := s.For("support")
	equal(t, "adopted conversation", getConv(t, support, legacy.ID), legacy)
	if evs := agentEventsOf(t, support, before, legacy.ID); len(evs) != 1 {
		t.Fatalf("the adopted conversation's agent events %s", dump(evs))
	}
	if _, err := s.Base.GetConversation(ctx, legacy.ID); agentik.ErrorCode(err) != agentik.ENotFound {
		t.Fatalf("still agent-less: %v", err)
	}
	if _, err := support.GetConversation(ctx, other.ID); agentik.ErrorCode(err) != agentik.ENotFound {
		t.Fatalf("another agent's conversation was adopted: %v", err)
	}
}

// viewOf is an agent's view whose Close closes the database (the contract
// checks what Close does).
type viewOf struct {
	agentik.Store
	base agentik.Store
}

func (v viewOf) Close() error { return v.base.Close() }
