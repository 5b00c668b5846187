package postgres

import (
	"testing"

	"github.com/agentik/agentik"
)

// TestCommitFromRememberedCounters: a process's next commit to a
// conversation it wrote last is one round trip; one whose counters another
// process moved in between (a message, a memory entry, an event alone) is
// refused by qCommitGuard and made the usual way, with the right numbers,
// and this process's Bus learns the other process's event came between.
// After a refusal the process reads the row again before it guesses.
func TestCommitFromRememberedCounters(t *testing.T) {
	dsn := freshSchema(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	ctx := t.Context()
	id := createConv(t, a)
	entry := func(text string) agentik.MemoryEntry {
		return agentik.MemoryEntry{Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text(text)}}}
	}
	commit := func(s *Store, w agentik.Write) []agentik.Event {
		t.Helper()
		w.ConversationID = id
		evs, _, err := s.Commit(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	// message commits one user message through a and checks how: in one
	// round trip, refused then made the usual way, or the usual way.
	const oneTrip, refused, usual = "in one round trip", "refused, then the usual way", "the usual way"
	message := func(text, how string) []agentik.Event {
		t.Helper()
		trips, moves := a.states.oneTrip.Load(), a.states.moved.Load()
		evs := commit(a, agentik.Write{Events: []agentik.Event{userEvent(id, text)}, Memory: []agentik.MemoryEntry{entry(text)}, Touch: agentik.Now()})
		got := usual
		switch {
		case a.states.oneTrip.Load() == trips+1 && a.states.moved.Load() == moves:
			got = oneTrip
		case a.states.oneTrip.Load() == trips && a.states.moved.Load() == moves+1:
			got = refused
		case a.states.oneTrip.Load() != trips || a.states.moved.Load() != moves:
			got = "counted twice"
		}
		if got != how {
			t.Fatalf("%q committed %s, want %s", text, got, how)
		}
		return evs
	}

	message("first", oneTrip) // from the counters CreateConversation left
	moves := []struct {
		name string
		w    agentik.Write
	}{
		{"a message", agentik.Write{Events: []agentik.Event{userEvent(id, "other")}}},
		{"a memory entry", agentik.Write{Memory: []agentik.MemoryEntry{entry("other")}}},
		{"an event alone", agentik.Write{Events: []agentik.Event{{Type: agentik.EvCompactionTriggered, Date: agentik.Now()}}}},
	}
	for i, m := range moves {
		if i > 0 {
			// After a refusal two commits find the row as they left it
			// before the next guess.
			message("confirm "+m.name, usual)
			message("confirm again "+m.name, usual)
		}
		message("before "+m.name, oneTrip)
		other := commit(b, m.w)
		mine := message("after "+m.name, refused)
		if len(other) > 0 {
			if prev, ok := a.chain.take(mine[0].Cursor); !ok || prev != other[len(other)-1].Cursor {
				t.Fatalf("after %s: the Bus would take %d (%v) as the event before %d, want %d", m.name, prev, ok, mine[0].Cursor, other[len(other)-1].Cursor)
			}
		}
	}
	message("confirm", usual)
	message("confirm again", usual)
	message("last", oneTrip)

	msgs, _, err := a.Messages(ctx, id, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("journal seqs: message %d has seq %d", i, m.Seq)
		}
	}
	mem, err := a.Memory(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range mem {
		if e.Order != int64(i+1) {
			t.Fatalf("memory orders: entry %d has order %d", i, e.Order)
		}
	}
	if len(msgs) != 15 || len(mem) != 15 {
		t.Fatalf("%d messages and %d memory entries stored, want 15 and 15", len(msgs), len(mem))
	}
	last, _ := a.LastCursor(ctx, id)
	evs, err := a.Events(ctx, id, 0, 100)
	if err != nil || len(evs) != 16 || evs[len(evs)-1].Cursor != last {
		t.Fatalf("%d events (%v), the conversation's last cursor %d", len(evs), err, last)
	}

	// Deleted by the other process: a guess stores nothing.
	if _, err := b.DeleteConversation(ctx, id, agentik.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{userEvent(id, "late")}}); !agentik.IsNotFound(err) {
		t.Fatalf("commit to a conversation deleted elsewhere: %v, want not found", err)
	}
	var rows int
	if err := a.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM messages WHERE conversation_id = $1)
		+ (SELECT count(*) FROM events WHERE conversation_id = $1)`, id).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows (%v) stored for the deleted conversation", rows, err)
	}
}

// TestRefusedGuessesBackOff: each guess refused in a row doubles the
// commits that must find the row unchanged before the next guess, up to 16;
// a commit that finds it changed counts for none.
func TestRefusedGuessesBackOff(t *testing.T) {
	st := commitState{nextSeq: 5, nextOrd: 3, lastCursor: 9, sure: true}
	for i, want := range []int{2, 4, 8, 16, 16} {
		st = st.refused()
		if st.reads != want || st.sure {
			t.Fatalf("after %d refusals: %d reads due (sure %v), want %d", i+1, st.reads, st.sure, want)
		}
	}
	st = commitState{nextSeq: 5, nextOrd: 3, lastCursor: 9, sure: true}.refused()
	moved := st
	moved.lastCursor++
	if got := st.found(moved); got.reads != 2 || got.sure {
		t.Fatalf("a changed row counted: %d reads due, sure %v", got.reads, got.sure)
	}
	st = st.found(st)
	if st.reads != 1 || st.sure {
		t.Fatalf("after one unchanged read: %d due, sure %v", st.reads, st.sure)
	}
	if st = st.found(st); st.reads != 0 || !st.sure {
		t.Fatalf("after two unchanged reads: %d due, sure %v", st.reads, st.sure)
	}
}

// TestCommitGuardChecksWhatItUses: a guess passes the guard with a lease
// epoch past 32 bits that is the row's, and is refused when the row's
// owner or agent — which the commit's agent event names — is not the
// remembered one.
func TestCommitGuardChecksWhatItUses(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	ctx := t.Context()
	id := createConv(t, s)
	const epoch = 1<<32 + 5
	if _, err := s.pool.Exec(ctx, "UPDATE conversations SET lease_epoch = $1 WHERE id = $2", epoch, id); err != nil {
		t.Fatal(err)
	}
	write := func() *agentik.AgentEvent {
		t.Helper()
		_, touched, err := s.Commit(ctx, agentik.Write{ConversationID: id, Fence: epoch, Touch: agentik.Now(), Events: []agentik.Event{userEvent(id, "x")}})
		if err != nil {
			t.Fatal(err)
		}
		return touched
	}
	write()
	if n := s.states.oneTrip.Load(); n != 1 {
		t.Fatalf("%d commits in one round trip under a 33-bit epoch, want 1", n)
	}
	for _, change := range []string{"UPDATE conversations SET owner = 'mallory' WHERE id = $1", "UPDATE conversations SET agent_id = 'other' WHERE id = $1"} {
		if _, err := s.pool.Exec(ctx, change, id); err != nil {
			t.Fatal(err)
		}
		refused := s.states.moved.Load()
		touched := write()
		if s.states.moved.Load() != refused+1 {
			t.Fatalf("after %q: the guess was not refused", change)
		}
		var owner, agent string
		if err := s.pool.QueryRow(ctx, "SELECT owner, agent_id FROM conversations WHERE id = $1", id).Scan(&owner, &agent); err != nil {
			t.Fatal(err)
		}
		if touched.Owner != owner {
			t.Fatalf("after %q: the agent event names owner %q, the row %q", change, touched.Owner, owner)
		}
		// Twice more the usual way, then a guess from the row as it is now.
		write()
		write()
		trips := s.states.oneTrip.Load()
		write()
		if s.states.oneTrip.Load() != trips+1 {
			t.Fatalf("after %q: no guess once the row was read again", change)
		}
	}
}

// TestLeaseAndBusTellWhenToGuess: taking a conversation's lease lets the
// next commit guess from the counters Acquire read; giving it back, or
// hearing through the Bus of another process's event there, has the next
// commit read the row instead of making a guess that would be refused.
func TestLeaseAndBusTellWhenToGuess(t *testing.T) {
	dsn := freshSchema(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	ctx := t.Context()
	ba, err := NewBus(ctx, a, BusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	bb, err := NewBus(ctx, b, BusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	co := NewCoordinator(a, ba, CoordinatorOptions{})
	defer co.Close()
	id := createConv(t, b) // a remembers nothing of it
	write := func(fence int64, how string) {
		t.Helper()
		trips, refused := a.states.oneTrip.Load(), a.states.moved.Load()
		if _, _, err := a.Commit(ctx, agentik.Write{ConversationID: id, Fence: fence, Events: []agentik.Event{userEvent(id, how)}}); err != nil {
			t.Fatal(err)
		}
		got := map[[2]int64]string{{1, 0}: "guessed", {0, 0}: "read", {0, 1}: "refused"}[[2]int64{a.states.oneTrip.Load() - trips, a.states.moved.Load() - refused}]
		if got != how {
			t.Fatalf("commit %s, want %s", got, how)
		}
	}
	lease, err := co.Acquire(ctx, id)
	if err != nil || !lease.Held {
		t.Fatalf("Acquire: %+v, %v", lease, err)
	}
	write(lease.Epoch, "guessed")
	co.Release(ctx, id)
	write(0, "read")
	write(0, "guessed")

	sub := ba.Subscribe(id)
	defer sub.Close()
	commitPublish(t, b, bb, id, "elsewhere")
	next(t, sub)     // heard of: a's entry is doubted before the event reaches sub
	write(0, "read") // finds the other process's write
	write(0, "read") // finds the row as it left it
	write(0, "guessed")
}
