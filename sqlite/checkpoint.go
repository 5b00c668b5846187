package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
)

// Checkpoints. A checkpoint copies the pages of the WAL back into the
// database file and ends with an fsync of it. By default SQLite runs one
// inside the commit that takes the WAL past 1,000 pages, so about one turn
// in fifty waited for that fsync before its 202 or its answer (the p99 of
// a plain turn's added latency on the bench's latency phase: 10–17 ms with
// it, 3–6 ms without).
//
// Here the writer has automatic checkpoints off. Every checkpointEvery
// commits wake a goroutine that runs a PASSIVE checkpoint on a connection
// of its own: it copies what no reader still needs, never blocks the writer
// nor waits for readers. The WAL starts over only at a write that finds it
// wholly copied back, which traffic with pauses gives (a checkpoint
// completes between two writes) but a steady stream of writes does not. So
// when a checkpoint finds the WAL past walCap pages, the writer runs one
// itself right after a batch, once the batch's writers
// are released: it copies the few pages written since and lets the next
// write start the WAL over. The WAL stays bounded, and a commit waits for a
// checkpoint only under sustained writes, once every walCap pages.
//
// Durability is unchanged: a commit is in the WAL before it returns, as
// before; a checkpoint moves it, and the last connection to close
// checkpoints what is left.
const (
	checkpointEvery = 64
	walCap          = 4000
)

// qCheckpoint is the checkpoint: its row is (busy, pages in the WAL, pages
// copied back).
const qCheckpoint = `PRAGMA wal_checkpoint(PASSIVE)`

type checkpointer struct {
	c       *sql.DB       // one connection, used only for checkpoints
	kick    chan struct{} // capacity 1: kicks while one runs coalesce
	stop    chan struct{}
	stopped chan struct{}
	commits int // since the last kick; guarded by the writer's wmu

	due    atomic.Bool  // the writer should checkpoint after its next batch
	runs   atomic.Int64 // checkpoints run (both kinds), for tests
	failed atomic.Int64
}

func newCheckpointer(c *sql.DB) *checkpointer {
	cp := &checkpointer{c: c, kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go cp.loop()
	return cp
}

func (cp *checkpointer) loop() {
	defer close(cp.stopped)
	for {
		select {
		case <-cp.stop:
			return
		case <-cp.kick:
		}
		// A failed or busy checkpoint (another process's runs) is tried
		// again at the next kick.
		wal, _, err := checkpoint(cp.c)
		cp.count(err)
		if err == nil && wal >= walCap {
			// The WAL has not started over since walCap pages ago: writes
			// keep coming while it is copied back.
			cp.due.Store(true)
		}
	}
}

// querier is a connection or a pool to run a query on.
type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// checkpoint runs one PASSIVE checkpoint on db.
func checkpoint(db querier) (wal, copied int64, err error) {
	var busy int
	err = db.QueryRowContext(context.Background(), qCheckpoint).Scan(&busy, &wal, &copied)
	return wal, copied, err
}

func (cp *checkpointer) count(err error) {
	cp.runs.Add(1)
	if err != nil {
		cp.failed.Add(1)
	}
}

// committed counts n committed transactions (wmu held) and wakes the
// goroutine every checkpointEvery of them.
func (cp *checkpointer) committed(n int) {
	cp.commits += n
	if cp.commits < checkpointEvery {
		return
	}
	cp.commits = 0
	select {
	case cp.kick <- struct{}{}:
	default:
	}
}

// inline runs the writer's own checkpoint when one is due; the caller holds
// the lead, so no transaction runs on w meanwhile.
func (cp *checkpointer) inline(w querier) {
	if !cp.due.Swap(false) {
		return
	}
	_, _, err := checkpoint(w)
	cp.count(err)
}

// close stops the goroutine, waiting for a running checkpoint, and closes
// its connection.
func (cp *checkpointer) close() error {
	close(cp.stop)
	<-cp.stopped
	return cp.c.Close()
}
