package engine

import (
	"context"
	"slices"

	"github.com/agentik/agentik"
)

// Interrupting one turn, wherever it is (agentik.TurnInterrupter).
//
// A running turn is cancelled by the process running it. A turn that is
// open but has not started (queued, or waiting for client tool results) is
// withdrawn: closed with interrupted{reason:user} without running. Only the
// process that starts the conversation's turns may withdraw one — the lease
// holder, or this process alone on its store — or the close could race with
// the turn's start elsewhere. The holder marks the turn in c.withdrawn and
// closes it under c.mu, where its loop also checks c.withdrawn just before
// starting a turn: a withdrawn turn never starts.
//
// Another process marks the turn and kicks its own loop: if it takes the
// lease, it withdraws the turn; if another process holds the lease, it asks
// that holder through the Coordinator (InterruptRequest.ReplyTo) — every
// process that hears it marks the turn too, and the holder closes it at
// once — and tries again a few times should the lease be free by then.

// withdrawal is what this process knows of a turn to withdraw.
type withdrawal uint8

const (
	askedHere  withdrawal = iota + 1 // InterruptTurn here: this process sees it done
	askedThere                       // heard from another process
	closedHere                       // closed by this process
)

// interruptTurn interrupts the turn answering replyTo, for reason (user,
// or busy_policy). It reports false when that turn is not open (over, or
// unknown).
func (c *conv) interruptTurn(ctx context.Context, replyTo, reason string) (bool, error) {
	c.mu.Lock()
	if c.running != nil && c.running.user.ID == replyTo {
		ok := c.interruptLocked(reason)
		c.mu.Unlock()
		return ok, nil
	}
	c.mu.Unlock()
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil {
		return false, c.readErr(err)
	}
	return c.interruptOpen(ctx, q, replyTo, reason)
}

// interruptOpen is interruptTurn once the store's open turns q are read.
func (c *conv) interruptOpen(ctx context.Context, q agentik.TurnQueue, replyTo, reason string) (bool, error) {
	if !slices.ContainsFunc(q.Open, func(m agentik.Message) bool { return m.ID == replyTo }) {
		return false, nil
	}
	if q.Open[0].ID == replyTo {
		round, err := c.openRound(ctx, q.Open[0], q.Turn)
		if err != nil {
			return false, err
		}
		if round != nil && len(round.asking) > 0 {
			// Waiting for approvals: its pending calls are denied and it
			// is closed, by whichever process is asked (approval.go).
			return c.interruptParked(ctx, reason, agentik.PrincipalFrom(ctx))
		}
	}
	c.mu.Lock()
	if c.running != nil && c.running.user.ID == replyTo {
		ok := c.interruptLocked(reason)
		c.mu.Unlock()
		return ok, nil
	}
	if !c.shared || c.leased {
		defer c.mu.Unlock()
		if err := c.withdrawLocked(ctx, replyTo, reason); err != nil {
			return false, err
		}
		return true, nil
	}
	// Another process holds the lease, or none does: this process's loop
	// takes it, or asks its holder (loop, askHolders).
	if c.withdrawn[replyTo] != closedHere {
		c.withdrawn[replyTo] = askedHere
	}
	c.sent++ // work for a loop of this process
	c.kickLocked()
	c.mu.Unlock()
	return true, nil
}

// askHolders asks the process holding the lease to withdraw the turns this
// process was asked to, once its loop could not take the lease. It reports
// whether some request found no holder (the lease was free again: the loop
// tries to take it once more).
func (c *conv) askHolders(ctx context.Context) (retry bool) {
	c.mu.Lock()
	var ids []string
	for id, w := range c.withdrawn {
		if w == askedHere {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	for _, id := range ids {
		held, err := c.coord.Interrupt(ctx, agentik.InterruptRequest{ConversationID: c.id, Reason: agentik.ReasonUser, ReplyTo: id})
		if err != nil {
			c.e.log.Warn("ask the lease holder to withdraw a turn", "conversation", c.id, "reply_to", id, "err", err)
			continue
		}
		if !held {
			retry = true
			continue
		}
		c.mu.Lock()
		if c.withdrawn[id] == askedHere {
			c.withdrawn[id] = askedThere // delivered: not asked again
		}
		c.mu.Unlock()
	}
	return retry
}

// withdrawLocked closes the open turn answering id without running it,
// for reason. The caller holds c.mu and starts the conversation's turns (holds its lease,
// or is alone on the store); ctx carries no fence, the lease's is used.
func (c *conv) withdrawLocked(ctx context.Context, id, reason string) error {
	before, known := c.withdrawn[id]
	if before == closedHere {
		return nil
	}
	c.withdrawn[id] = closedHere // from here on the loop cannot start it
	if c.shared {
		ctx = withFence(ctx, c.epoch)
	}
	if err := c.closeInterrupted(ctx, id, reason); err != nil {
		if known {
			c.withdrawn[id] = before
		} else {
			delete(c.withdrawn, id)
		}
		return err
	}
	for i, q := range c.queue {
		if q.user.ID == id {
			c.queue = append(c.queue[:i:i], c.queue[i+1:]...)
			break
		}
	}
	if c.pending != nil && c.pending.user.ID == id {
		c.pending = nil
	}
	c.early.dropFor(id) // its model call, sent early, is not paid for to the end
	c.publishLocked(agentik.Event{Type: agentik.EvEnd, ReplyTo: id, Reason: agentik.EndInterrupted})
	return nil
}

// withdrawMarked closes, while the loop holds the lease, the open turns of
// q that another process asked to withdraw before this one held it. It
// reports whether it closed any (the queue is then read again).
func (c *conv) withdrawMarked(ctx context.Context, q agentik.TurnQueue) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	closed := false
	for _, m := range q.Open {
		if w := c.withdrawn[m.ID]; w != askedHere && w != askedThere {
			continue
		}
		if err := c.withdrawLocked(ctx, m.ID, agentik.ReasonUser); err != nil {
			c.e.log.Warn("withdraw a turn", "conversation", c.id, "reply_to", m.ID, "err", err)
			continue
		}
		closed = true
	}
	return closed
}

func (c *conv) withdrawnTurn(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isWithdrawnLocked(id)
}

// isWithdrawnLocked reports whether this process closed or is to close the turn
// answering id. The caller holds c.mu.
func (s *sharedState) isWithdrawnLocked(id string) bool {
	_, ok := s.withdrawn[id]
	return ok
}

// forgetWithdrawnLocked drops what the loop no longer needs once it ends:
// the turns it closed (no stale read of the queue can show them again).
// The caller holds c.mu.
func (s *sharedState) forgetWithdrawnLocked() {
	for id, w := range s.withdrawn {
		if w == closedHere {
			delete(s.withdrawn, id)
		}
	}
}

// remoteWithdraw is this process's side of another's InterruptTurn of a
// turn that does not run here: it is marked and, when this process holds
// the lease, closed at once (the Coordinator's callback must not block, so
// the close runs on its own goroutine); otherwise this process's loop tries
// to take the lease, so that the turn is withdrawn even when the holder
// asked had just let the lease go. The caller holds c.mu.
func (c *conv) remoteWithdraw(id string) {
	if _, known := c.withdrawn[id]; !known {
		c.withdrawn[id] = askedThere
		c.sent++
	}
	if !c.leased {
		// This process may take the lease next (its loop, running or
		// kicked now, reads the queue again and withdraws the turn): the
		// holder that was asked may have been past its last read.
		c.kickLocked()
		return
	}
	e := c.e
	e.mu.Lock()
	draining := e.draining
	if !draining {
		e.turns.Add(1)
	}
	e.mu.Unlock()
	if draining {
		return
	}
	go func() {
		defer e.turns.Done()
		ctx, cancel := context.WithTimeout(e.baseCtx, finalWriteTimeout)
		defer cancel()
		q, err := c.coord.Pending(ctx, c.id)
		if err != nil {
			e.log.Warn("withdraw a turn: read open turns", "conversation", c.id, "reply_to", id, "err", err)
			return
		}
		if !slices.ContainsFunc(q.Open, func(m agentik.Message) bool { return m.ID == id }) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.leased || (c.running != nil && c.running.user.ID == id) {
			return // the lease moved on (its next holder withdraws it), or it started: cancelled by remoteInterrupt
		}
		if err := c.withdrawLocked(ctx, id, agentik.ReasonUser); err != nil {
			e.log.Warn("withdraw a turn", "conversation", c.id, "reply_to", id, "err", err)
		}
	}()
}
