package postgres

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestLeaseAndQueueInOneRoundTrip (issue 53): AcquirePending takes the
// lease and reads the queue in one round trip, the read made after the
// lock (it sees what the previous holder committed); an attempt that finds
// the lease held reads nothing. ReleasePending gives the lease back and
// reads the queue in one round trip, seeing a message another process
// stored while it held the lease.
func TestLeaseAndQueueInOneRoundTrip(t *testing.T) {
	dsn := freshSchema(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	ctx := t.Context()
	// The Buses poll on stores of their own, so that a's and b's round
	// trips are the Coordinators' alone.
	ca := NewCoordinator(a, newBus(t, openDSN(t, dsn), 0), CoordinatorOptions{})
	defer ca.Close()
	cb := NewCoordinator(b, newBus(t, openDSN(t, dsn), 0), CoordinatorOptions{})
	defer cb.Close()
	id := createConv(t, a)
	commit := func(s *Store, text string) agentik.Event {
		t.Helper()
		evs, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{userEvent(id, text)}})
		if err != nil {
			t.Fatal(err)
		}
		return evs[0]
	}
	first := commit(b, "first")
	trips := func(s *Store) int64 {
		rt, _ := s.RoundTrips()
		return rt
	}

	before := trips(a)
	lease, q, err := ca.AcquirePending(ctx, id)
	if err != nil || !lease.Held {
		t.Fatalf("AcquirePending: %+v %v", lease, err)
	}
	if n := trips(a) - before; n != 1 {
		t.Fatalf("AcquirePending took %d round trips", n)
	}
	if len(q.Open) != 1 || q.Open[0].ID != first.Message.ID {
		t.Fatalf("queue read with the lease: %+v", q.Open)
	}

	// B cannot take it: no queue comes back with the refusal.
	held, q, err := cb.AcquirePending(ctx, id)
	if err != nil || held.Held || len(q.Open) != 0 {
		t.Fatalf("AcquirePending of a held lease: %+v %+v %v", held, q.Open, err)
	}
	second := commit(b, "second") // stored while A holds the lease

	before = trips(a)
	q, err = ca.ReleasePending(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n := trips(a) - before; n != 1 {
		t.Fatalf("ReleasePending took %d round trips", n)
	}
	if len(q.Open) != 2 || q.Open[1].ID != second.Message.ID {
		t.Fatalf("queue read after the release: %+v", q.Open)
	}
	// Given back: B takes it now, with the queue.
	lease, q, err = cb.AcquirePending(ctx, id)
	if err != nil || !lease.Held || len(q.Open) != 2 {
		t.Fatalf("B after A's release: %+v %+v %v", lease, q.Open, err)
	}
	cb.Release(ctx, id)
}

// queueReads counts how the engine reads a conversation's queue through a
// QueueCoordinator, and tells each ReleasePending and Keep.
type queueReads struct {
	*Coordinator
	acquire, pending, release, keep atomic.Int32
	ended                           chan struct{}
}

func (q *queueReads) AcquirePending(ctx context.Context, id string) (agentik.Lease, agentik.TurnQueue, error) {
	q.acquire.Add(1)
	return q.Coordinator.AcquirePending(ctx, id)
}

func (q *queueReads) Pending(ctx context.Context, id string) (agentik.TurnQueue, error) {
	q.pending.Add(1)
	return q.Coordinator.Pending(ctx, id)
}

func (q *queueReads) ReleasePending(ctx context.Context, id string) (agentik.TurnQueue, error) {
	defer func() { q.ended <- struct{}{} }()
	q.release.Add(1)
	return q.Coordinator.ReleasePending(ctx, id)
}

// Keep tells only a lease kept: one not kept is given back next.
func (q *queueReads) Keep(ctx context.Context, id string) bool {
	q.keep.Add(1)
	if !q.Coordinator.Keep(ctx, id) {
		return false
	}
	q.ended <- struct{}{}
	return true
}

// TestPlainTurnReadsTheQueueWithTheLeaseOnly (issue 53): a plain turn reads
// its conversation's queue only in the round trip that takes the lease —
// none after its answer closed the turn: the lease is kept (Keep), or,
// where leases are not kept, given back with the queue read in the same
// round trip (ReleasePending) — and a message stored while a turn runs is
// still answered after it, in order.
func TestPlainTurnReadsTheQueueWithTheLeaseOnly(t *testing.T) {
	for _, tc := range []struct {
		name                string
		keepLeases          int
		acquire, keep, rels int32
	}{
		{"kept", 0, 1, 1, 0},
		{"given back", -1, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := llmtest.NewServer()
			defer llm.Close()
			gate := make(chan struct{})
			llm.Handle(func(r llmtest.Request) llmtest.Reply {
				if r.LastUserText() == "slow" {
					<-gate
				}
				return llmtest.Text("answer to " + r.LastUserText())
			})
			qr := &queueReads{ended: make(chan struct{}, 10)}
			n := newNode(t, freshSchema(t), llm, nodeOptions{scan: time.Hour, keep: tc.keepLeases, wrap: func(c agentik.Coordinator) agentik.Coordinator {
				qr.Coordinator = c.(*Coordinator)
				return qr
			}})
			ctx := agentik.WithPrincipal(t.Context(), "alice")
			id, cs := sharedConversation(t, ctx, n)
			s := liveEvents(t, ctx, cs[0])
			qr.pending.Store(0) // a subscription looks for pending approvals
			send := func(text string) {
				if _, err := cs[0].Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}}); err != nil {
					t.Fatal(err)
				}
			}
			send("plain")
			is := func(typ string) func(agentik.Event) bool {
				return func(ev agentik.Event) bool { return ev.Type == typ }
			}
			waitFor(t, s, "end", is(agentik.EvEnd))
			select {
			case <-qr.ended:
			case <-waitBound(t):
				t.Fatal("the loop neither kept nor gave back the lease")
			}
			if a, p, k, r := qr.acquire.Load(), qr.pending.Load(), qr.keep.Load(), qr.release.Load(); a != tc.acquire || p != 0 || k != tc.keep || r != tc.rels {
				t.Fatalf("a plain turn: %d AcquirePending, %d Pending, %d Keep, %d ReleasePending; want %d, 0, %d, %d", a, p, k, r, tc.acquire, tc.keep, tc.rels)
			}
			var held bool
			if err := n.store.pool.QueryRow(ctx, qLeaseHeld, n.coord.key(id)).Scan(&held); err != nil || held != (tc.rels == 0) {
				t.Fatalf("lease held after the turn: %v (%v); kept: %v", held, err, tc.rels == 0)
			}

			// A message stored while a turn runs: answered after it, in order.
			send("slow")
			waitFor(t, s, "working", is(agentik.EvWorking))
			send("queued")
			close(gate)
			var answers []string
			for len(answers) < 2 {
				seen := waitFor(t, s, "answer", is(agentik.EvAssistantMessage))
				answers = append(answers, agentik.JoinText(seen[len(seen)-1].Message.Content))
			}
			if answers[0] != "answer to slow" || answers[1] != "answer to queued" {
				t.Fatalf("answers %q", answers)
			}
		})
	}
}
