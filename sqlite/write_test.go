package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// batchProbe holds the writer busy with one write, so that the writes
// started next queue up and go into one batch together; it records the
// size of every batch.
type batchProbe struct {
	s       *Store
	want    int
	queued  chan struct{} // closed once want writes wait
	release chan struct{}
	blocked chan error

	mu    sync.Mutex
	sizes []int
}

// holdWriter starts a write that keeps the writer until p.open, and returns
// once it runs. want is the number of writes to wait for in queued.
func holdWriter(t *testing.T, s *Store, want int) *batchProbe {
	t.Helper()
	p := &batchProbe{s: s, want: want, queued: make(chan struct{}), release: make(chan struct{}), blocked: make(chan error, 1)}
	s.onQueue = func(n int) {
		if n == p.want {
			close(p.queued)
		}
	}
	s.onBatch = func(n int) {
		p.mu.Lock()
		p.sizes = append(p.sizes, n)
		p.mu.Unlock()
	}
	t.Cleanup(func() { s.onQueue, s.onBatch = nil, nil })
	running := make(chan struct{})
	go func() {
		p.blocked <- s.write(context.Background(), "hold", func(tx *wtx) error {
			close(running)
			<-p.release
			return nil
		})
	}()
	<-running
	return p
}

// open waits until the writes are queued, then frees the writer.
func (p *batchProbe) open(t *testing.T) {
	t.Helper()
	select {
	case <-p.queued:
	case <-time.After(time.Minute):
		t.Fatalf("%d writes never queued", p.want)
	}
	close(p.release)
	if err := <-p.blocked; err != nil {
		t.Fatalf("holding write: %v", err)
	}
}

func (p *batchProbe) batches() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sizes)
}

func commitOne(ctx context.Context, s *Store, conv string, msgs ...*agentik.Message) error {
	evs := make([]agentik.Event, len(msgs))
	for i, m := range msgs {
		evs[i] = agentik.MessageEvent(m)
	}
	_, _, err := s.Commit(ctx, agentik.Write{ConversationID: conv, Events: evs, Touch: agentik.Now(),
		Memory: []agentik.MemoryEntry{{Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: msgs[0].Content}}}})
	return err
}

// journal returns the ids of a conversation's messages in seq order, and
// checks that seqs are 1, 2, 3… and that each message has its event.
func journal(t *testing.T, s *Store, conv string) []string {
	t.Helper()
	msgs, _, err := s.Messages(t.Context(), conv, agentik.MessagesRequest{Limit: 100})
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	evs, err := s.Events(t.Context(), conv, 0, 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(evs) != len(msgs) {
		t.Fatalf("%d messages, %d events", len(msgs), len(evs))
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		if m.Seq != int64(i+1) || evs[i].Message == nil || evs[i].Message.ID != m.ID {
			t.Fatalf("message %d: seq %d, event %+v", i, m.Seq, evs[i])
		}
		ids[i] = m.ID
	}
	return ids
}

// TestGroupCommitIsolatesFailures: writes queued behind a running one are
// committed in one transaction; a write that fails there, after some of its
// statements ran, leaves nothing behind, and the others of its batch commit.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	a, b, c := newConv(t, s), newConv(t, s), newConv(t, s)
	first := userMessage(c.ID, "first")
	if err := commitOne(ctx, s, c.ID, first); err != nil {
		t.Fatal(err)
	}
	memBefore, err := s.Memory(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}

	okA, okB := userMessage(a.ID, "to a"), userMessage(b.ID, "to b")
	// A new message, then one reusing an id of the journal: the first is
	// inserted before the second fails on the unique id.
	lost := userMessage(c.ID, "lost")
	dup := userMessage(c.ID, "duplicate")
	dup.ID = first.ID

	p := holdWriter(t, s, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, f := range []func() error{
		func() error { return commitOne(ctx, s, a.ID, okA) },
		func() error { return commitOne(ctx, s, c.ID, lost, dup) },
		func() error {
			return commitOne(ctx, s, "no-such-conversation", userMessage("no-such-conversation", "x"))
		},
		func() error { return commitOne(ctx, s, b.ID, okB) },
	} {
		wg.Go(func() { errs[i] = f() })
	}
	p.open(t)
	wg.Wait()

	if got := p.batches(); !slices.Equal(got, []int{1, 4}) {
		t.Fatalf("batches %v, want the holding write alone, then the four together", got)
	}
	if errs[0] != nil || errs[3] != nil {
		t.Fatalf("the good writes failed: %v, %v", errs[0], errs[3])
	}
	if agentik.ErrorCode(errs[1]) != agentik.EConflict {
		t.Fatalf("duplicate id: %v, want conflict", errs[1])
	}
	if !agentik.IsNotFound(errs[2]) {
		t.Fatalf("unknown conversation: %v, want not found", errs[2])
	}
	if got := journal(t, s, a.ID); !slices.Equal(got, []string{okA.ID}) {
		t.Fatalf("journal of a: %v", got)
	}
	if got := journal(t, s, b.ID); !slices.Equal(got, []string{okB.ID}) {
		t.Fatalf("journal of b: %v", got)
	}
	if got := journal(t, s, c.ID); !slices.Equal(got, []string{first.ID}) {
		t.Fatalf("journal of c after the failed write: %v", got)
	}
	if _, err := s.Message(ctx, c.ID, lost.ID); !agentik.IsNotFound(err) {
		t.Fatalf("message of the failed write: %v, want not found", err)
	}
	if mem, err := s.Memory(ctx, c.ID); err != nil || len(mem) != len(memBefore) {
		t.Fatalf("memory of c: %d entries (%v), want %d", len(mem), err, len(memBefore))
	}
	// The failed write took no seq: the next one continues the journal.
	next := userMessage(c.ID, "next")
	if err := commitOne(ctx, s, c.ID, next); err != nil {
		t.Fatal(err)
	}
	if got := journal(t, s, c.ID); !slices.Equal(got, []string{first.ID, next.ID}) {
		t.Fatalf("journal of c: %v", got)
	}
}

// TestGroupCommitRetriesAlone: when the shared transaction is lost (here a
// write ends it behind the store's back, as SQLite does on some errors), the
// writes of the batch that had succeeded run again, each in its own
// transaction, and are stored exactly once.
func TestGroupCommitRetriesAlone(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	convs := []agentik.ConversationRecord{newConv(t, s), newConv(t, s), newConv(t, s), newConv(t, s)}
	msgs := make([]*agentik.Message, len(convs))
	for i, c := range convs {
		msgs[i] = userMessage(c.ID, "hello")
	}
	broken := errors.New("the transaction was rolled back")

	p := holdWriter(t, s, len(convs)+1)
	errs := make([]error, len(convs)+1)
	var wg sync.WaitGroup
	for i, c := range convs {
		wg.Go(func() { errs[i] = commitOne(ctx, s, c.ID, msgs[i]) })
	}
	wg.Go(func() {
		errs[len(convs)] = s.write(ctx, "break", func(tx *wtx) error {
			if _, err := tx.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				return err
			}
			return broken
		})
	})
	p.open(t)
	wg.Wait()

	if got := p.batches(); len(got) != 2 || got[1] != len(convs)+1 {
		t.Fatalf("batches %v, want the holding write, then all %d together", got, len(convs)+1)
	}
	if !errors.Is(errs[len(convs)], broken) {
		t.Fatalf("breaking write: %v", errs[len(convs)])
	}
	for i, c := range convs {
		if errs[i] != nil {
			t.Fatalf("write %d: %v", i, errs[i])
		}
		if got := journal(t, s, c.ID); !slices.Equal(got, []string{msgs[i].ID}) {
			t.Fatalf("journal %d: %v, want its one message once", i, got)
		}
	}
}

// TestGroupCommitCancelledWhileQueued: a write whose context ends while it
// waits is not run; the others of its batch are.
func TestGroupCommitCancelledWhileQueued(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	a, b := newConv(t, s), newConv(t, s)
	gone, cancel := context.WithCancel(t.Context())
	p := holdWriter(t, s, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = commitOne(gone, s, a.ID, userMessage(a.ID, "never")) })
	kept := userMessage(b.ID, "kept")
	wg.Go(func() { errs[1] = commitOne(t.Context(), s, b.ID, kept) })
	<-p.queued
	cancel()
	p.open(t)
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) || errs[1] != nil {
		t.Fatalf("errors %v, %v; want canceled, nil", errs[0], errs[1])
	}
	if got := journal(t, s, a.ID); len(got) != 0 {
		t.Fatalf("cancelled write stored: %v", got)
	}
	if got := journal(t, s, b.ID); !slices.Equal(got, []string{kept.ID}) {
		t.Fatalf("journal of b: %v", got)
	}
}

// TestGroupCommitReturnsAfterCommit: however writes are batched, a Commit
// returns only once another connection can read what it wrote (what makes a
// 202 mean committed).
func TestGroupCommitReturnsAfterCommit(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	convs := make([]agentik.ConversationRecord, 8)
	for i := range convs {
		convs[i] = newConv(t, s)
	}
	var mu sync.Mutex
	var batched int
	s.onBatch = func(n int) {
		mu.Lock()
		batched = max(batched, n)
		mu.Unlock()
	}
	t.Cleanup(func() { s.onBatch = nil })
	var wg sync.WaitGroup
	errs := make(chan error, len(convs))
	for _, c := range convs {
		wg.Go(func() {
			for range 40 {
				m := userMessage(c.ID, "hello")
				if err := commitOne(ctx, s, c.ID, m); err != nil {
					errs <- err
					return
				}
				// The reader pool is other connections: it sees only
				// committed transactions.
				if _, err := s.Message(ctx, c.ID, m.ID); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, c := range convs {
		if got := journal(t, s, c.ID); len(got) != 40 {
			t.Fatalf("journal of %s: %d messages", c.ID, len(got))
		}
	}
	t.Logf("largest batch: %d writes", batched)
}

// TestGroupCommitFailureCostsOneRun: a batch first runs its writes without
// savepoints; a write that fails there rolls the whole batch back, and the
// batch runs once more with savepoints. Every other write commits once, and
// runs at most twice: a failing write cannot make its batch run again and
// again.
func TestGroupCommitFailureCostsOneRun(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	c := newConv(t, s)
	const good = 4
	refused := errors.New("refused")
	runs := make([]int, good+1)

	p := holdWriter(t, s, good+1)
	errs := make([]error, good+1)
	var wg sync.WaitGroup
	for i := range good + 1 {
		wg.Go(func() {
			errs[i] = s.write(ctx, "set", func(tx *wtx) error {
				runs[i]++ // the writes of a batch run one after another
				key := string(rune('a' + i))
				if _, err := tx.ExecContext(ctx, qSetState, c.ID, key, `"set"`); err != nil {
					return err
				}
				if i == good {
					return refused // after its statement ran
				}
				return nil
			})
		})
	}
	p.open(t)
	wg.Wait()

	if got := p.batches(); !slices.Equal(got, []int{1, good + 1}) {
		t.Fatalf("batches %v, want the holding write alone, then the %d together", got, good+1)
	}
	if !errors.Is(errs[good], refused) {
		t.Fatalf("the failing write: %v", errs[good])
	}
	for i := range good + 1 {
		key := string(rune('a' + i))
		v, err := s.State(ctx, c.ID, key)
		switch {
		case i == good:
			if err != nil || v != nil {
				t.Fatalf("the failing write's state: %s, %v; want none", v, err)
			}
			if runs[i] != 2 {
				t.Fatalf("the failing write ran %d times, want 2 (without savepoints, then with)", runs[i])
			}
		case errs[i] != nil || err != nil || string(v) != `"set"`:
			t.Fatalf("write %d: %v; its state %s, %v", i, errs[i], v, err)
		case runs[i] < 1 || runs[i] > 2:
			t.Fatalf("write %d ran %d times, want once or twice", i, runs[i])
		}
	}
}

// TestFailedCommitRollsBack: a transaction whose COMMIT fails (here over
// a write statement still in progress, which SQLite refuses to commit) is
// rolled back: its write reports the error and stores nothing, and the
// writer's connection takes the next write in a transaction of its own.
func TestFailedCommitRollsBack(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	c := newConv(t, s)
	var rows *sql.Rows
	t.Cleanup(func() { // before the store closes
		if rows != nil {
			rows.Close()
		}
	})
	err := s.write(ctx, "left open", func(tx *wtx) error {
		var err error
		rows, err = tx.QueryContext(ctx, `INSERT INTO conversation_state (conversation_id, key, value)
			VALUES (?, 'a', '1'), (?, 'b', '2') RETURNING key`, c.ID, c.ID)
		if err != nil {
			return err
		}
		if !rows.Next() {
			return errors.New("no first row")
		}
		return nil // the insert is still in progress
	})
	if err == nil {
		t.Fatal("the write over a statement in progress committed")
	}
	rows.Close()
	for _, key := range []string{"a", "b"} {
		if v, err := s.State(ctx, c.ID, key); err != nil || v != nil {
			t.Fatalf("state %s of the failed write: %s, %v; want none", key, v, err)
		}
	}
	m := userMessage(c.ID, "after")
	if err := commitOne(ctx, s, c.ID, m); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	if got := journal(t, s, c.ID); !slices.Equal(got, []string{m.ID}) {
		t.Fatalf("journal %v, want the next write's message", got)
	}
}
