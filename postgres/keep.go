package postgres

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// Leases kept between turns (agentik.LeaseKeeper; docs/postgres.md,
// "Leases kept between turns").
//
// A loop that answered its conversation's last open turn keeps the lease
// instead of giving it back and reading the queue once more: the next turn
// then needs no new lease (a round trip on a lock session, with a write
// of the epoch), and the turn before it no release (another round trip).
// While a lease is kept, messages stored by other processes are this
// process's to answer, and it hears of them:
//
//   - the notification of the other process's commit (a d or e entry)
//     wakes the loop (heardFrom, wakeLoops: the engine's Wake), also one
//     running a turn now, which then reads the queue again;
//   - should that notification be lost, the scan kicks the loops of kept
//     leases whose conversation has open turns, as it kicks those of free
//     leases.
//
// A kept lease is given back after KeepIdle, when more than KeepLeases
// are kept (the one kept longest), at shutdown, and when its lock session
// fails. A turn waiting for approvals or client tool results never keeps
// one: the engine keeps a lease only with no turn left waiting, so the
// cluster-wide running counts (qRunning: an open turn under a held lease)
// still count the conversations answered now.

// Keep keeps the lease of a conversation whose loop has nothing left to
// run, unless leases are not kept (KeepLeases < 0) or it is not held (lost
// meanwhile). Keeping more than KeepLeases gives back the one kept
// longest.
func (c *Coordinator) Keep(ctx context.Context, conversationID string) bool {
	if c.keepMax < 0 {
		return false
	}
	c.mu.Lock()
	if _, ok := c.held[conversationID]; !ok || c.keepNone {
		c.mu.Unlock()
		return false
	}
	c.idle[conversationID] = time.Now()
	evict := ""
	if len(c.idle) > c.keepMax {
		var since time.Time
		for id, t := range c.idle {
			if id != conversationID && (evict == "" || t.Before(since)) {
				evict, since = id, t
			}
		}
	}
	c.mu.Unlock()
	if evict != "" {
		c.giveBack(ctx, evict)
	}
	return true
}

// GiveBackKept gives back every lease kept and keeps none from then on
// (the engine drains: other processes take these conversations' next
// turns at once, not after KeepIdle).
func (c *Coordinator) GiveBackKept(ctx context.Context) {
	c.mu.Lock()
	c.keepNone = true
	ids := slices.Collect(maps.Keys(c.idle))
	c.mu.Unlock()
	for _, id := range ids {
		c.giveBack(ctx, id)
	}
}

// qUnlockOpen frees a conversation's lease and says whether it has open
// turns, which nobody else may have taken up while it was held.
const qUnlockOpen = `SELECT pg_advisory_unlock(hashtextextended($1, 0)), EXISTS (SELECT 1 FROM open_turns WHERE conversation_id = $2)`

// giveBack gives back a kept lease, if it is still kept (not taken up
// again by its loop meanwhile). A message another process stored while
// it was kept could not be taken up there: when one is open, this
// process's loop is woken to take the lease again.
func (c *Coordinator) giveBack(ctx context.Context, conversationID string) {
	ls := c.sessionOf(conversationID)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c.mu.Lock()
	_, kept := c.idle[conversationID]
	if kept {
		delete(c.idle, conversationID)
		delete(c.held, conversationID)
	}
	c.mu.Unlock()
	if !kept {
		return
	}
	c.s.states.doubt(conversationID) // others may write to it now
	if ls.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var unlocked, open bool
	if err := ls.conn.QueryRow(ctx, qUnlockOpen, c.key(conversationID), conversationID).Scan(&unlocked, &open); err != nil {
		c.log.Warn("cluster: give back a kept lease", "conversation", conversationID, "err", err)
		c.dropLocked(ls) // ending the session frees the lock
		return
	}
	if open {
		c.heardFrom(conversationID, true, false)
	}
}

// expireKept gives back the leases kept longer than KeepIdle.
func (c *Coordinator) expireKept(ctx context.Context) {
	c.mu.Lock()
	var old []string
	for id, t := range c.idle {
		if time.Since(t) >= c.keepIdle {
			old = append(old, id)
		}
	}
	c.mu.Unlock()
	for _, id := range old {
		if ctx.Err() != nil {
			return
		}
		c.giveBack(ctx, id)
	}
}

// heardFrom is told of another process's commit in a conversation (the
// Bus, for every d and e entry it hears, and for a poll's news): if this
// process holds its lease, kept or running, the loop is woken to read the
// queue. With any, it wakes the loop whether or not the lease is held
// (giveBack). A notification (notified) of a conversation whose lease is
// not held here is noted for the scan (elsewhere); a poll's is not, as
// the same old cursor may come back at every poll.
func (c *Coordinator) heardFrom(conversationID string, any, notified bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	_, held := c.held[conversationID]
	wake := held || any
	if wake {
		c.woken[conversationID] = struct{}{}
	}
	if notified && !held {
		c.elsewhere[conversationID] = time.Now() // the scan leaves it to that process a while
	}
	c.mu.Unlock()
	if wake {
		select {
		case c.wakeC <- struct{}{}:
		default: // on its way
		}
	}
}

// wakeLoops calls the engine's Wake for the conversations heardFrom
// noted, off the listener's goroutine (Wake may read the store), until
// Close.
func (c *Coordinator) wakeLoops() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wakeC:
		}
		c.mu.Lock()
		ids := slices.Collect(maps.Keys(c.woken))
		clear(c.woken)
		wake := c.cb.Wake
		if wake == nil {
			wake = c.cb.Kick
		}
		c.mu.Unlock()
		for _, id := range ids {
			if c.ctx.Err() != nil {
				return
			}
			wake(id)
		}
	}
}

// pendingHeld reads the queue of a conversation whose lease this process
// holds already (kept), with the conversation's counters in the same
// round trip, so that the turn's first commit is made in one
// (commitStates), as after a lease taken anew.
func (c *Coordinator) pendingHeld(ctx context.Context, conversationID string) (qr *queueRows, err error) {
	qr = &queueRows{conv: conversationID}
	var st commitState
	found := false
	err = c.s.read(ctx, "open turns of "+conversationID, func(q querier) error {
		*qr = queueRows{conv: conversationID}
		b := &pgx.Batch{}
		b.Queue(qQueue, conversationID).Query(func(rows pgx.Rows) error { return storeutil.Each(rows, qr.scan) })
		b.Queue(qCounters, conversationID).Query(func(rows pgx.Rows) error {
			return storeutil.Each(rows, func(rows pgx.Rows) error {
				found = true
				return rows.Scan(&st.owner, &st.agent, &st.nextSeq, &st.nextOrd, &st.lastCursor, &st.head)
			})
		})
		if err := c.s.pool.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return qr.restore(ctx, q)
	})
	if err == nil && found {
		c.s.states.read(conversationID, st)
	}
	return qr, err
}

// qCounters reads what a commit needs of its conversation's row
// (commitState), without a lock.
const qCounters = `SELECT owner, agent_id, next_seq, next_ord, last_cursor, head FROM conversations WHERE id = $1`
