package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Group commit. Every write of a Store goes through one queue to the single
// writer connection. A write that finds the writer idle runs at once in its
// own transaction; writes that arrive while a transaction runs wait, and the
// next transaction applies all of them in arrival order. A commit costs
// about the same for one write as for many (most of it is writing the WAL
// frames of the touched pages), so under concurrency the writer commits far
// less often than it writes.
//
// Each write keeps the guarantees of its own transaction:
//   - it is atomic: a batch first runs its writes one after the other with
//     nothing between them (a write rarely fails: its input was checked
//     before); when one fails, the whole transaction is rolled back and the
//     batch runs again with each write between a SAVEPOINT and its RELEASE,
//     where an error rolls back to the savepoint, undoing its statements
//     and nothing of the other writes. A failing write thus costs its batch
//     one more run (and, when SQLite ends the transaction itself, the run
//     each write then makes alone, below);
//   - its caller returns only after the transaction holding it committed
//     (a 202 of the HTTP API is sent after that, never before);
//   - when the shared transaction itself fails (its COMMIT, or an error that
//     SQLite answers by rolling back the whole transaction), every write of
//     it that had succeeded runs again alone, in its own transaction, and
//     gets that one's outcome. Write functions may therefore run more than
//     once and must assign, not accumulate, what they report.
//
// There is no writer goroutine: the caller that finds the writer idle leads
// the batch, and hands the lead to the first waiting caller when it is done,
// so nothing runs once the queue is empty.

// maxBatch bounds the writes of one transaction, and so how long a write
// that arrives first waits for those queued behind it.
const maxBatch = 64

// Transaction and savepoint statements, prepared with the writer's
// queries. The writer runs its transactions with statements on its
// connection rather than through database/sql's Tx, which starts a
// goroutine for each transaction and for each query in it, to watch
// contexts that the writer's never end.
const (
	qBegin      = `BEGIN IMMEDIATE`
	qCommit     = `COMMIT`
	qRollback   = `ROLLBACK`
	qSavepoint  = `SAVEPOINT w`
	qRollbackTo = `ROLLBACK TO w`
	qRelease    = `RELEASE w`
)

// writer is the queue of one database's writes.
type writer struct {
	wmu     sync.Mutex
	queue   []*writeReq
	leading bool // a caller is running a batch; the others wait in queue

	// Test hooks, called with wmu held: the queue's length after a write
	// joined it, and the size of each batch as it starts.
	onQueue func(n int)
	onBatch func(n int)
}

// writeReq is one write waiting for, or in, a batch.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *wtx) error
	err  error
	done bool          // err is final
	wake chan struct{} // signalled once done, or to lead the next batch
}

// write runs fn atomically in a write transaction, possibly shared with
// concurrent writes (see above), and returns once it committed. Any error
// undoes everything fn did. op names the operation in the returned error.
//
// A write whose ctx ends while it waits for the writer is not run; once
// its turn has come it runs to the end whatever happens to ctx (fn's
// statements ignore the context they are given), because interrupting a
// statement would roll back the writes sharing its transaction.
func (s *Store) write(ctx context.Context, op string, fn func(tx *wtx) error) error {
	r := &writeReq{ctx: ctx, fn: fn, wake: make(chan struct{}, 1)}
	s.wmu.Lock()
	s.queue = append(s.queue, r)
	if s.onQueue != nil {
		s.onQueue(len(s.queue))
	}
	lead := !s.leading
	s.leading = true
	s.wmu.Unlock()
	if lead {
		s.lead() // r is the head of the queue, so in this batch
	}
	for {
		<-r.wake
		if r.done {
			break
		}
		s.lead() // woken without an outcome: lead the next batch, headed by r
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", op, classify(r.err))
	}
	return nil
}

// lead runs one batch from the head of the queue, hands the lead to the
// next waiting write, if any, and wakes the writes of the batch.
func (d *db) lead() {
	d.wmu.Lock()
	if len(d.queue) == 1 {
		// Alone: let goroutines about to write join the batch first (at
		// 100 conversations 1,068-1,110 -> 1,228-1,282 turns/s, server
		// CPU 0.99-1.04 -> 0.83-0.91 ms per turn: fewer, fuller commits).
		d.wmu.Unlock()
		runtime.Gosched()
		d.wmu.Lock()
	}
	n := min(len(d.queue), maxBatch)
	batch := d.queue[:n:n]
	d.queue = d.queue[n:]
	if len(d.queue) == 0 {
		d.queue = nil // let the backing array go
	}
	if d.onBatch != nil {
		d.onBatch(n)
	}
	d.wmu.Unlock()

	commits := d.runBatch(batch)
	d.wmu.Lock()
	d.cp.committed(commits)
	d.wmu.Unlock()
	if d.cp.due.Load() {
		// The batch's writers go first: their commits are done.
		d.release(batch)
		batch = nil
		d.cp.inline(d.wc)
	}

	d.wmu.Lock()
	var next *writeReq
	if len(d.queue) > 0 {
		next = d.queue[0]
	} else {
		d.leading = false
	}
	d.wmu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
	d.release(batch)
}

// release wakes the writes of a batch with their outcome.
func (d *db) release(batch []*writeReq) {
	for _, r := range batch {
		r.done = true
		r.wake <- struct{}{}
	}
}

// runBatch sets the outcome of every write of batch, and returns how many
// transactions it committed.
func (d *db) runBatch(batch []*writeReq) (commits int) {
	live := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err // gave up waiting: not run
			continue
		}
		live = append(live, r)
	}
	switch len(live) {
	case 0:
		return 0
	case 1:
		live[0].err = d.runAlone(live[0])
		return 1
	}
	err := d.runGroup(live, false)
	if errors.Is(err, errWriteFailed) {
		// Rolled back whole: again, each write in a savepoint.
		for _, r := range live {
			r.err = nil
		}
		err = d.runGroup(live, true)
	}
	if err != nil {
		// The shared transaction is gone, and with it what the writes that
		// had succeeded did: each runs again on its own.
		for _, r := range live {
			if r.err == nil {
				r.err = d.runAlone(r)
				commits++
			}
		}
		return commits
	}
	return 1
}

// runAlone runs one write in its own transaction.
func (d *db) runAlone(r *writeReq) error {
	t, err := d.begin(context.WithoutCancel(r.ctx))
	if err != nil {
		return err
	}
	defer t.rollback()
	if err := r.fn(t); err != nil {
		return err
	}
	return t.commit()
}

// errWriteFailed ends a batch's transaction run without savepoints when one
// of its writes failed.
var errWriteFailed = errors.New("a write of the batch failed")

// runGroup runs the writes in one transaction and sets the error of each
// write that failed. Without savepoints it stops at the first write that
// fails and returns errWriteFailed, rolling everything back; with them,
// each write runs in a savepoint of its own, rolled back when it fails. It
// returns an error when the transaction could not be completed; the writes
// without an error then did not commit.
func (d *db) runGroup(live []*writeReq, savepoints bool) error {
	ctx := context.Background()
	t, err := d.begin(ctx)
	if err != nil {
		return err
	}
	defer t.rollback()
	for _, r := range live {
		if !savepoints {
			if r.err = r.fn(t); r.err != nil {
				return errWriteFailed
			}
			continue
		}
		if _, err := t.ExecContext(ctx, qSavepoint); err != nil {
			return err
		}
		if r.err = r.fn(t); r.err != nil {
			// Fails when SQLite already rolled the whole transaction back.
			if _, err := t.ExecContext(ctx, qRollbackTo); err != nil {
				return err
			}
		}
		if _, err := t.ExecContext(ctx, qRelease); err != nil {
			return err
		}
	}
	return t.commit()
}

// wtx is a write transaction on the writer's connection, which runs the
// writer's prepared statements. It runs every statement on its own
// context, not the one it is given (see write).
type wtx struct {
	ctx  context.Context
	conn *sql.Conn
	st   stmts // prepared on conn
	done bool  // committed
}

// begin starts a write transaction on the writer's connection.
func (d *db) begin(ctx context.Context) (*wtx, error) {
	t := &wtx{ctx: ctx, conn: d.wc, st: d.ws}
	if _, err := t.ExecContext(ctx, qBegin); err != nil {
		return nil, err
	}
	return t, nil
}

// commit commits the transaction. When it fails the transaction may still
// be open: rollback ends it.
func (t *wtx) commit() error {
	if _, err := t.ExecContext(t.ctx, qCommit); err != nil {
		return err
	}
	t.done = true
	return nil
}

// rollback rolls the transaction back unless it committed. Its error is of
// no use: it fails only when SQLite already ended the transaction.
func (t *wtx) rollback() {
	if !t.done {
		t.ExecContext(t.ctx, qRollback) //nolint:errcheck // see above
	}
}

func (t *wtx) stmt(q string) *sql.Stmt { return t.st[q] }

func (t *wtx) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	if p := t.stmt(q); p != nil {
		return p.ExecContext(t.ctx, args...)
	}
	return t.conn.ExecContext(t.ctx, q, args...)
}

func (t *wtx) QueryRowContext(_ context.Context, q string, args ...any) *sql.Row {
	if p := t.stmt(q); p != nil {
		return p.QueryRowContext(t.ctx, args...)
	}
	return t.conn.QueryRowContext(t.ctx, q, args...)
}

func (t *wtx) QueryContext(_ context.Context, q string, args ...any) (*sql.Rows, error) {
	if p := t.stmt(q); p != nil {
		return p.QueryContext(t.ctx, args...)
	}
	return t.conn.QueryContext(t.ctx, q, args...)
}
