package postgres

import (
	"context"
	"sync"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// Cursors without a database-wide lock (migrations/0004, docs/postgres.md).
//
// Conversation events draw their cursors from a sequence under the
// conversation's row lock, so they increase in commit order within a
// conversation, and a Bus follows each conversation on its own. Agent
// events are numbered after commit by the sequencer, one statement any
// process may run (qSequence).

// sequencePage bounds how many agent events one sequencer statement numbers.
const sequencePage = 10000

// sequence numbers the committed agent events that have no cursor yet and
// returns how many it numbered and the greatest cursor it gave (0 if none).
// q is the pool or a connection; in a transaction (a batch) the numbers
// commit with it.
func sequence(ctx context.Context, q querier) (numbered int, last int64, err error) {
	numbered, last, _, err = runSequence(ctx, q, qSequence)
	return numbered, last, err
}

// sequenceUnlessBusy is sequence with qSequenceUnlessBusy: it reports busy,
// having numbered what it numbered so far, when another run held the
// counter.
func sequenceUnlessBusy(ctx context.Context, q querier) (numbered int, last int64, busy bool, err error) {
	return runSequence(ctx, q, qSequenceUnlessBusy)
}

// runSequence runs a sequencer statement page by page.
func runSequence(ctx context.Context, q querier, stmt string) (numbered int, last int64, busy bool, err error) {
	for {
		var n int
		var top int64
		if err := q.QueryRow(ctx, stmt, sequencePage).Scan(&n, &top, &busy); err != nil {
			return numbered, last, false, err
		}
		numbered += n
		last = max(last, top)
		if busy || n < sequencePage {
			return numbered, last, busy, nil
		}
	}
}

// queueSequence queues the sequencer in a batch, ahead of reads of agent
// events that must see everything committed before them.
func queueSequence(b *pgx.Batch) {
	b.Queue(qSequence, sequencePage)
}

// chain remembers, for events this process committed, the cursor of the
// event before each one in its conversation, until the Bus takes it (see
// Bus.Publish): when that is the last cursor the Bus delivered for the
// conversation, nobody else committed to it in between and the event can be
// delivered without reading the store. Entries the Bus never takes (a store
// used without a Bus) are dropped when it grows past chainMax; a missing
// entry only costs the Bus a read.
type chain struct {
	mu   sync.Mutex
	prev map[int64]int64
}

const chainMax = 1 << 14

// add records that evs (of one conversation, in cursor order) came after
// the cursor prev.
func (c *chain) add(prev int64, evs []agentik.Event) {
	if len(evs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prev == nil || len(c.prev)+len(evs) > chainMax {
		c.prev = make(map[int64]int64)
	}
	for _, ev := range evs {
		c.prev[ev.Cursor] = prev
		prev = ev.Cursor
	}
}

// take returns and forgets the cursor before cursor, if known.
// peek is take without forgetting: what the Bus tells other processes of
// an event it publishes, before it delivers the event here.
func (c *chain) peek(cursor int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.prev[cursor]
	return p, ok
}

func (c *chain) take(cursor int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.prev[cursor]
	if ok {
		delete(c.prev, cursor)
	}
	return p, ok
}
