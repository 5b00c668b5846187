package storetest

import (
	"testing"

	"github.com/agentik/agentik"
)

// Memory checks a MemoryStore: a change is stored with its history row
// and its memory_updated agent event, a change made from a value that is
// no longer current is EConflict and stores nothing, sets are kept apart
// per owner and per agent (a and b are views of two agents on one
// database), a reset and a forget remove what was stored.
func Memory(t *testing.T, a, b agentik.MemoryStore, agentEvents func() []agentik.AgentEvent) {
	ctx := t.Context()
	change := func(s agentik.MemoryStore, c agentik.MemoryChange) (agentik.AgentEvent, error) {
		c.Date = at(len(c.New))
		return s.ChangeMemory(ctx, c)
	}
	memoryChanges(t, a, b, change)
	memoryResetAndForget(t, a, change)
	// Every change is a durable agent event of its agent.
	n := 0
	for _, ev := range agentEvents() {
		if ev.Type == agentik.AgentEvMemoryUpdated {
			n++
		}
	}
	if n != 6 {
		t.Fatalf("%d memory_updated agent events, want 6", n)
	}
}

// memoryChange stores a change of a memory set.
type memoryChange func(s agentik.MemoryStore, c agentik.MemoryChange) (agentik.AgentEvent, error)

// memoryChanges: changes, a stale change, the values and history of one
// set, and none of it in another set.
func memoryChanges(t *testing.T, a, b agentik.MemoryStore, change memoryChange) {
	ctx := t.Context()
	ev, err := change(a, agentik.MemoryChange{Owner: "alice", Label: "human", Seed: "seed", Old: "seed", New: "Alice.", By: "alice", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != agentik.AgentEvMemoryUpdated || ev.Label != "human" || ev.By != "alice" || ev.Owner != "alice" {
		t.Fatalf("event %+v", ev)
	}
	if _, err := change(a, agentik.MemoryChange{Owner: "alice", Label: "human", Seed: "seed", Old: "seed", New: "lost", By: "agent", Principal: "alice"}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("a change from a stale value: %v", err)
	}
	if _, err := change(a, agentik.MemoryChange{Owner: "alice", Label: "human", Seed: "seed", Old: "Alice.", New: "Alice, in Lyon.", By: "agent",
		ConversationID: "c1", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	vals, err := a.MemoryValues(ctx, "alice")
	if err != nil || len(vals) != 1 || vals[0].Value != "Alice, in Lyon." || vals[0].UpdatedBy != "agent" || vals[0].UpdatedAt.IsZero() {
		t.Fatalf("values %+v %v", vals, err)
	}
	for _, other := range []struct {
		s     agentik.MemoryStore
		owner string
	}{{a, "bob"}, {a, ""}, {b, "alice"}} {
		if v, err := other.s.MemoryValues(ctx, other.owner); err != nil || len(v) != 0 {
			t.Fatalf("another set holds alice's: %+v %v", v, err)
		}
		if h, err := other.s.MemoryHistory(ctx, other.owner, "human", 0, 10); err != nil || len(h) != 0 {
			t.Fatalf("another set has alice's history: %+v %v", h, err)
		}
	}
	h, err := a.MemoryHistory(ctx, "alice", "human", 0, 10)
	if err != nil || len(h) != 2 || h[0].By != "agent" || h[0].ConversationID != "c1" || h[0].OldValue != "Alice." || h[0].NewValue != "Alice, in Lyon." ||
		h[1].By != "alice" || h[1].OldValue != "seed" || h[1].NewValue != "Alice." {
		t.Fatalf("history %+v %v", h, err)
	}
	if page, err := a.MemoryHistory(ctx, "alice", "human", h[0].ID, 10); err != nil || len(page) != 1 || page[0].ID != h[1].ID {
		t.Fatalf("history before %d: %+v %v", h[0].ID, page, err)
	}
}

// memoryResetAndForget: a reset stores the seed, a forget removes one
// owner's values and history only.
func memoryResetAndForget(t *testing.T, a agentik.MemoryStore, change memoryChange) {
	ctx := t.Context()
	// A reset removes the stored value and records the seed as the new one.
	if _, err := change(a, agentik.MemoryChange{Owner: "alice", Label: "human", Seed: "seed", Old: "Alice, in Lyon.", Reset: true, By: "alice", Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.MemoryValues(ctx, "alice"); len(v) != 0 {
		t.Fatalf("after reset: %+v", v)
	}
	if h, _ := a.MemoryHistory(ctx, "alice", "human", 0, 1); len(h) != 1 || h[0].NewValue != "seed" {
		t.Fatalf("reset history %+v", h)
	}
	// Forget removes alice's values and history, not bob's.
	change(a, agentik.MemoryChange{Owner: "alice", Label: "notes", Old: "", New: "n", By: "alice", Principal: "alice"})
	change(a, agentik.MemoryChange{Owner: "bob", Label: "notes", Old: "", New: "b", By: "bob", Principal: "bob"})
	evs, err := a.ForgetMemory(ctx, "alice", "alice", at(100))
	if err != nil || len(evs) != 1 || evs[0].Label != "notes" || evs[0].Owner != "alice" {
		t.Fatalf("forget: %+v %v", evs, err)
	}
	if v, _ := a.MemoryValues(ctx, "alice"); len(v) != 0 {
		t.Fatalf("after forget: %+v", v)
	}
	if h, _ := a.MemoryHistory(ctx, "alice", "human", 0, 10); len(h) != 0 {
		t.Fatalf("history after forget: %+v", h)
	}
	if v, _ := a.MemoryValues(ctx, "bob"); len(v) != 1 || v[0].Value != "b" {
		t.Fatalf("bob's after alice's forget: %+v", v)
	}
}
