package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// The full-text indexer. FTS5 writes a new segment of its index, and its
// structure record, at every transaction that adds a row, whatever the
// row's size: several pages for a commit of one message (+30-50 % CPU per
// commit, docs/memory-recall.md). So a commit does not write the index: it
// queues each message's row in message_search_pending, in the message's
// own transaction (migrations/0012), which costs one small table's row.
// The journal's transaction stays the source of truth.
//
// The queue is moved into message_search, one transaction a batch, on the
// writer (the batch goes through the write queue like any write):
//   - in the background, by a goroutine that a commit which queued rows
//     wakes: at once when indexBatch rows are queued, else indexDelay
//     after the first, so that one FTS5 segment holds the rows of many
//     commits;
//   - before every search that finds the queue not empty, which moves all
//     of it: a search never misses a message committed before it began;
//   - at Open, which moves what a crash left queued.
//
// A message deleted while queued takes its queued row with it (the delete
// trigger of migrations/0012).
const (
	indexBatch = 256
	indexDelay = 100 * time.Millisecond
)

type indexer struct {
	s       *Store        // the writer's queue (a Store of the db)
	kick    chan struct{} // capacity 1: kicks while a batch runs coalesce
	stop    chan struct{}
	stopped chan struct{}
	pending atomic.Int64 // rows queued since the last batch (a hint)

	// For tests: paused stops the goroutine's batches (searches and Open
	// still move the queue); onIndex, when set, is called after each of
	// the goroutine's batches with the rows it moved.
	paused  atomic.Bool
	onIndex atomic.Pointer[func(n int)]
	failed  atomic.Int64 // the goroutine's batches that failed
}

func newIndexer(s *Store) *indexer {
	ix := &indexer{s: s, kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go ix.loop()
	return ix
}

// queued tells the indexer that a commit queued n rows.
func (ix *indexer) queued(n int) {
	if n == 0 {
		return
	}
	ix.pending.Add(int64(n))
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

func (ix *indexer) loop() {
	defer close(ix.stopped)
	var wait <-chan time.Time // set while rows wait for indexDelay
	for {
		select {
		case <-ix.stop:
			return
		case <-ix.kick:
			if ix.pending.Load() < indexBatch {
				if wait == nil {
					wait = time.After(indexDelay)
				}
				continue
			}
		case <-wait:
		}
		wait = nil
		if ix.paused.Load() {
			continue
		}
		ix.run()
	}
}

// run moves the queue into the index, indexBatch rows a transaction, until
// a batch finds fewer; a failed batch is tried again at the next kick.
func (ix *indexer) run() {
	for {
		ix.pending.Store(0)
		n, err := ix.s.indexQueued(context.Background(), indexBatch)
		if err != nil {
			ix.failed.Add(1)
			return
		}
		if f := ix.onIndex.Load(); f != nil {
			(*f)(n)
		}
		if n < indexBatch {
			return
		}
	}
}

// close stops the goroutine, waiting for a running batch. What is still
// queued stays queued: the next Open moves it.
func (ix *indexer) close() {
	close(ix.stop)
	<-ix.stopped
}

// indexQueued moves the first limit rows of the queue (-1: all of them)
// into message_search in one write, and returns how many it moved.
func (s *Store) indexQueued(ctx context.Context, limit int) (int, error) {
	var moved int64
	err := s.write(ctx, "index messages", func(tx *wtx) error {
		moved = 0
		var upTo sql.NullInt64
		if err := tx.QueryRowContext(ctx, qPendingUpTo, limit).Scan(&upTo); err != nil || !upTo.Valid {
			return err
		}
		if _, err := tx.ExecContext(ctx, qIndexPending, upTo.Int64); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, qDropPending, upTo.Int64)
		if err != nil {
			return err
		}
		moved, err = res.RowsAffected()
		return err
	})
	return int(moved), err
}

// indexCurrent makes the index current: it moves the whole queue into it,
// when a read finds rows queued (rows of commits that returned before it
// was called are). Searches call it first.
func (s *Store) indexCurrent(ctx context.Context) error {
	var queued bool
	err := s.read(ctx, "index messages", func(r *reader) error {
		return r.QueryRowContext(ctx, qAnyPending).Scan(&queued)
	})
	if err != nil || !queued {
		return err
	}
	_, err = s.indexQueued(ctx, -1)
	return err
}
