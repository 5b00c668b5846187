package postgres

import (
	"context"
	"testing"
	"time"
)

// TestSequencerDoesNotWaitForAnotherRun: the Bus's sequencer statement
// returns busy at once, numbering nothing, while another transaction holds
// the agent-event counter (it does not wait for that transaction's commit);
// with nothing to number it takes no lock at all, so it is not busy even
// then; and once the counter is free it numbers what waits.
func TestSequencerDoesNotWaitForAnotherRun(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	// A regression that waits for the lock fails here by this deadline,
	// not by hanging: the holder lets go only after the call returned.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	unnumbered := func() int {
		t.Helper()
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM agent_events WHERE cursor IS NULL").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	hold := func() func() {
		t.Helper()
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT last FROM cursors WHERE name = 'agent_events' FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Nothing waits for a number: no lock is taken, so a held counter does
	// not make the run busy.
	release := hold()
	n, _, busy, err := sequenceUnlessBusy(ctx, s.pool)
	release()
	if err != nil || n != 0 || busy {
		t.Fatalf("with nothing to number: %d numbered, busy %v, %v", n, busy, err)
	}

	createConv(t, s)
	if got := unnumbered(); got != 1 {
		t.Fatalf("%d unnumbered agent events after a create, want 1", got)
	}
	release = hold()
	n, _, busy, err = sequenceUnlessBusy(ctx, s.pool)
	release()
	if err != nil || n != 0 || !busy {
		t.Fatalf("with the counter held: %d numbered, busy %v, %v", n, busy, err)
	}
	if got := unnumbered(); got != 1 {
		t.Fatalf("a busy run numbered something: %d left", got)
	}

	n, top, busy, err := sequenceUnlessBusy(ctx, s.pool)
	if err != nil || n != 1 || busy || top <= 0 {
		t.Fatalf("with the counter free: %d numbered (up to %d), busy %v, %v", n, top, busy, err)
	}
	if got := unnumbered(); got != 0 {
		t.Fatalf("%d agent events left unnumbered", got)
	}
	if last, err := s.LastAgentCursor(ctx); err != nil || last != top {
		t.Fatalf("last agent cursor %d, %v; the run gave %d", last, err, top)
	}
}
