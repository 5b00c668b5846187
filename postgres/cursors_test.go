package postgres

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentik/agentik"
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

// TestSequencerRunsAgainAfterABusyRun: the Bus's sequencer, woken by an
// agent event committed while another run holds the counter, finds it busy
// and numbers the event once the counter is free — by running again, not
// by waiting for the poll (an hour here).
func TestSequencerRunsAgainAfterABusyRun(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	busy := make(chan struct{}, 1)
	b, err := NewBus(t.Context(), s, BusOptions{PollInterval: time.Hour, Logger: slog.New(onMessage{logSequencerBusy, busy})})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sub := b.SubscribeAgent()
	defer sub.Close()

	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	if _, err := tx.Exec(t.Context(), "SELECT last FROM cursors WHERE name = 'agent_events' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	now := agentik.Now()
	id := agentik.NewID()
	ev, err := s.CreateConversation(t.Context(), agentik.ConversationRecord{ID: id, Owner: "alice", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		t.Fatal(err)
	}
	b.PublishAgent(ev) // as the engine does: wakes the sequencer
	select {
	case <-busy:
	case <-time.After(30 * time.Second):
		t.Fatal("the sequencer never found the counter busy")
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case got, ok := <-sub.C():
		if !ok || got.ConversationID != id || got.Cursor <= 0 {
			t.Fatalf("agent event %+v (open %v), want the creation of %s, numbered", got, ok, id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the event committed while the counter was held was never delivered")
	}
}

// onMessage is a slog.Handler that signals on ch when a record with
// message msg is logged.
type onMessage struct {
	msg string
	ch  chan struct{}
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h onMessage) WithGroup(string) slog.Handler            { return h }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
