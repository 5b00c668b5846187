package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentik/agentik"
)

// This file is the one turn scheduler, for a store of this process alone and
// for one several processes share alike: the conversation's Coordinator
// (coordinator.go) says who may run its turns, the store says which turns
// are open, and the journal says how far each got. A message sent here
// waits in conv.queue for what the store does not hold (the client tools it
// came with, the continuation of a client tool round). Alone on the store,
// conv.queue also lists every open turn not started yet (recovered ones
// included), so the loop need not read the store to learn that none is
// left.

// reasonLeaseLost marks a turn cancelled because its lease was lost: it is
// left open for the new lease holder (turnRun.closeInterrupted).
const reasonLeaseLost = "lease_lost"

// recover offers every turn left open in the store to its conversation's
// loop: the one start-up recovery. Alone on the store, every open turn was
// left by a previous process, and with OnRestart interrupt all are closed
// here, before anything else can run. Sharing the store, other processes
// may be answering them: each conversation's loop runs them only once it
// holds the lease, and applies the restart policy to the turns it finds
// started by a process that is gone (recoverTurn).
func (e *Engine) recover(ctx context.Context) error {
	open, err := e.opts.Store.OpenTurns(ctx)
	if err != nil {
		return fmt.Errorf("start: open turns: %w", err)
	}
	closeAll := e.opts.OnRestart == RestartInterrupt && e.opts.Cluster == nil
	kicked := map[string]bool{}
	for _, m := range open {
		if kicked[m.ConversationID] {
			continue
		}
		c, err := e.load(ctx, m.ConversationID)
		if agentik.IsNotFound(err) {
			continue // deleted since
		}
		if err != nil {
			return fmt.Errorf("start: load %s: %w", m.ConversationID, err)
		}
		if closeAll && !c.parkedAt(ctx, m) {
			if err := c.closeInterrupted(ctx, m.ID, agentik.ReasonRestart); err != nil {
				return fmt.Errorf("start: close turn %s: %w", m.ID, err)
			}
			continue
		}
		c.mu.Lock()
		if !c.shared {
			c.queue = append(c.queue, queued{user: m, recovered: true})
			c.sent++
		} else {
			kicked[m.ConversationID] = true
		}
		c.kickLocked()
		c.mu.Unlock()
	}
	if len(open) > 0 {
		e.log.Info("unclosed turns found at start", "count", len(open), "policy", e.opts.OnRestart)
	}
	return nil
}

// kickLocked starts the conversation's loop if it is not running. Caller
// holds c.mu.
func (c *conv) kickLocked() {
	if c.looping {
		return
	}
	c.e.mu.Lock()
	draining := c.e.draining
	if !draining {
		c.e.turns.Add(1)
	}
	c.e.mu.Unlock()
	if draining {
		return
	}
	c.looping = true
	c.countLocked()
	c.e.loops.Go(c.loop)
}

// loop takes the conversation's lease, answers its open turns in order,
// gives the lease back, and goes again while messages keep coming: sent
// here (c.sent moved), or — sharing the store — stored by a process that
// could not take the lease meanwhile. It ends when nothing is left, on
// shutdown, when another process holds the lease (that process answers),
// and when a turn stays open after running (its closing write failed: the
// next kick retries it). The caller (kickLocked) has set looping and counts
// it in e.turns.
func (c *conv) loop() {
	defer c.e.turns.Done()
	ctx := c.e.baseCtx
	tries := 0 // to take a lease found free while asking its holder (askHolders)
	for {
		c.mu.Lock()
		sent := c.sent
		c.mu.Unlock()

		lease, first, err := c.acquire(ctx)
		if err != nil && ctx.Err() == nil && !agentik.IsNotFound(err) {
			c.e.log.Warn("acquire turn lease", "conversation", c.id, "err", err)
		}
		stuck, again := false, false
		if !lease.Held && err == nil && c.shared && c.askHolders(ctx) && tries < 3 {
			tries++
			again = true // the lease was free when asked: try to take it
		}
		if lease.Held {
			if !lease.Continued {
				c.memoryLoaded = false // another process answered turns since we last ran
			}
			c.mu.Lock()
			c.leased, c.epoch = true, lease.Epoch
			c.mu.Unlock()
			var idle bool
			stuck, idle = c.runPending(ctx, lease.Epoch, first)
			c.mu.Lock()
			c.leased, c.epoch = false, 0
			c.mu.Unlock()
			// A process that stored a message while we held the lease
			// could not take it: the message is ours to see now — read
			// with the lease given back, or, with the lease kept, told by
			// the Coordinator (Wake).
			if !idle || !c.keep(ctx) {
				if q, read, err := c.release(ctx, stuck); read && err == nil && len(q.Open) > 0 && !c.waiting(q) {
					again = true
				}
			}
		}
		c.mu.Lock()
		if ctx.Err() == nil && !c.e.isDraining() && !stuck && (again || c.sent != sent) {
			c.mu.Unlock()
			continue
		}
		// What is still queued here was in the store when the loop last
		// read it and was not run here: another process answers it, or it
		// waits for the next kick.
		if c.shared || c.parked == nil {
			c.queue = nil
		} // alone on the store, what waits behind a parked turn stays listed
		c.forgetWithdrawnLocked()
		c.early.drop() // its turn did not start here
		c.looping = false
		c.uncountLocked()
		c.mu.Unlock()
		return
	}
}

// runPending runs the store's open turns of the conversation, in order,
// while it holds the lease of the given epoch (0: no fence). It returns when
// none is left, on shutdown, when the store cannot be read, when the first
// open turn waits for client tool results and when the lease was lost; it
// reports stuck when a turn stayed open after it ran and waits for nothing
// (its closing write failed), unless a message came while it ran: that is
// the next message, which retries it first. It reports idle when it
// returned with no turn left waiting here: its last turn was answered, or
// the queue it read was empty (the lease may then be kept: keep).
func (c *conv) runPending(ctx context.Context, epoch int64, first *agentik.TurnQueue) (stuck, idle bool) {
	last := ""
	lastSent := 0 // c.sent when the turn last started
	for !c.e.isDraining() && ctx.Err() == nil {
		if last != "" && !c.shared && c.queueEmpty() {
			return false, false // alone on the store, nothing else is open
		}
		q, ok := c.queueNow(ctx, first)
		first = nil
		if !ok {
			return false, false
		}
		if len(q.Open) == 0 {
			return false, true
		}
		if c.withdrawMarked(ctx, q) {
			last = ""
			continue // turns withdrawn through another process: read again
		}
		user := q.Open[0]
		if user.ID == last && !c.awaited(user.ID) {
			c.mu.Lock()
			next := c.sent != lastSent // a message came while it ran: the next one
			lastSent = c.sent
			c.mu.Unlock()
			if next {
				last = ""
				continue // retried now, before that message
			}
			c.e.log.Warn("a turn stayed open after it ran; it is retried at the next message", "conversation", c.id, "reply_to", user.ID)
			return true, false
		}
		if c.withdrawnTurn(user.ID) {
			last = ""
			continue // closed here since the queue was read
		}
		last = user.ID
		c.e.testHook("next", user.ID)
		item, local := c.take(user.ID) // sets handling
		c.e.testHook("taken", user.ID)
		if !local {
			item = queued{user: user}
		}
		if item.client == nil {
			item.client = user.ClientTools // sent elsewhere, or before a restart: as stored
		}
		// Every write of the turn carries the lease epoch: if another
		// process took the lease meanwhile, the store refuses it.
		fctx := withFence(agentik.WithConversation(ctx, c.id), epoch)
		if item.resume == nil {
			run, err := c.prepareTurn(ctx, fctx, q, user, &item, local && !item.recovered)
			if err != nil {
				return false, false
			}
			if !run {
				continue // closed here; the next open turn is read again
			}
		}

		tctx, cancel := context.WithCancel(fctx)
		t := &turn{user: user, cancel: cancel}
		c.mu.Lock()
		c.handling = ""
		if c.isWithdrawnLocked(user.ID) {
			c.mu.Unlock()
			cancel()
			last = ""
			continue // withdrawn just now: it never starts
		}
		c.running = t
		c.countLocked() // a later turn of the loop: running again
		lastSent = c.sent
		if item.resume == nil {
			t.early = c.early.take(user.ID)
		} else {
			c.early.drop()
		}
		if c.parked != nil && c.parked.replyTo == user.ID {
			c.parked = nil // resumed: every call has its answer
		}
		c.phase = ""
		c.partial.Reset()
		c.publishLocked(agentik.Event{Type: agentik.EvWorking, ReplyTo: user.ID})
		c.mu.Unlock()

		outcome := c.runTurn(tctx, t, item)
		cancel()
		c.e.testHook("ended", user.ID)

		c.mu.Lock()
		c.running = nil
		c.partial.Reset()
		c.lastActive = timeNow()
		lost := t.reason == reasonLeaseLost
		c.mu.Unlock()
		if lost || (outcome == agentik.EndCompleted && c.releaseReads()) {
			// Answered, its answer committed: the turn is closed. Sharing
			// the store, the queue is read with the lease given back (one
			// round trip, not two per plain turn), or the lease is kept
			// (keep); should another turn be open, the loop goes again.
			// A kept lease reads nothing more: what other processes store
			// from here on wakes the loop, but turns already open when the
			// queue was read are read again now.
			if !lost && len(q.Open) > 1 && c.keeps() {
				continue
			}
			return false, !lost
		}
	}
	return false, false
}

// queueNow returns the conversation's open turns as the loop knows them
// now: sent here (alone on the store), read with the lease (first), or
// read from the Coordinator; false when the read failed (logged unless
// the context ended).
func (c *conv) queueNow(ctx context.Context, first *agentik.TurnQueue) (agentik.TurnQueue, bool) {
	if q, known := c.nextSent(); known {
		return q, true
	}
	if first != nil {
		return *first, true // read with the lease
	}
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil {
		if ctx.Err() == nil {
			c.e.log.Warn("read open turns", "conversation", c.id, "err", err)
		}
		return q, false
	}
	return q, true
}

// prepareTurn readies the open turn of item before it runs: it recovers
// what an earlier attempt left, then, on a branch, moves the head to where
// the turn answers. run false: the turn was closed here; an error: the loop
// stops (logged unless the context ended).
func (c *conv) prepareTurn(ctx, fctx context.Context, q agentik.TurnQueue, user agentik.Message, item *queued, fresh bool) (run bool, err error) {
	run, err = c.recoverTurn(fctx, q, item, fresh)
	if err != nil {
		c.handled()
		if ctx.Err() == nil && !errors.Is(err, errWaiting) {
			c.e.log.Warn("recover open turn", "conversation", c.id, "reply_to", user.ID, "err", err)
		}
		return false, err
	}
	if !run {
		c.handled()
		return false, nil
	}
	if err := c.placeTurn(fctx, user, q.Head); err != nil {
		c.handled()
		if ctx.Err() == nil {
			c.e.log.Warn("move the head for a turn", "conversation", c.id, "reply_to", user.ID, "err", err)
		}
		return false, err
	}
	return true, nil
}

// take removes the entry of user message id from the local queue, and
// marks the loop handling a turn until it starts it (running) or drops it
// (handled): a message sent meanwhile finds the conversation busy.
func (c *conv) take(id string) (queued, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handling = id
	for i, q := range c.queue {
		if q.user.ID == id {
			c.queue = append(c.queue[:i:i], c.queue[i+1:]...)
			return q, true
		}
	}
	return queued{}, false
}

func (c *conv) handled() {
	c.mu.Lock()
	c.handling = ""
	c.mu.Unlock()
}

// nextSent returns, alone on the store, the queue as this process knows
// it when that is the store's: the next turn is one sent here (a new
// message, or a continuation with its round in hand) and no turn ahead of
// it waits for client results or approvals. Otherwise (sharing the store,
// turns found at start) the loop reads the store. A turn whose closing write
// failed is then only retried at the next start.
func (c *conv) nextSent() (agentik.TurnQueue, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A stranded turn (every write of it failed) is open in the store ahead
	// of whatever was sent since: the store's queue tells what runs next.
	if c.shared || c.stranded || len(c.queue) == 0 || c.queue[0].recovered || c.pending != nil || c.parked != nil {
		return agentik.TurnQueue{}, false
	}
	return agentik.TurnQueue{Open: []agentik.Message{c.queue[0].user}}, true
}

func (c *conv) queueEmpty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) == 0
}

// awaited reports whether the turn answering id, open after it ran, is
// still to be gone on with: it waits for client tool results or approvals
// here, or the results came and its continuation is queued.
func (c *conv) awaited(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending != nil && c.pending.user.ID == id {
		return true
	}
	if c.parked != nil && c.parked.replyTo == id {
		return true // parked for approvals: read again, it may be answered
	}
	return slices.ContainsFunc(c.queue, func(q queued) bool { return q.user.ID == id && q.resume != nil })
}

// recoverTurn decides what to do with the first open turn, q.Open[0], when
// no continuation of it is in hand (local: it was sent here and has not
// run). The journal tells its state:
//
//   - its last tool round has client tool calls without results: it waits
//     for the client. It is left alone (errWaiting: runPending stops) —
//     unless later messages are queued behind it, which abandon it (closed
//     with interrupted{busy_policy}, as a message sent while the waiting
//     round was known would have);
//   - its last round has all results but is not in working memory yet: the
//     client's results were posted (to any process), or a process died just
//     after storing them: the turn continues from that round;
//   - it is not local and was started before (its user message is in
//     working memory) by a process that is gone or lost the lease: with
//     OnRestart interrupt it is closed with interrupted{restart}, else
//     answered again;
//   - otherwise it is a queued message: it runs.
//
// It reports whether the turn is to run now; when it closes the turn it
// returns false and the caller reads the queue again.
func (c *conv) recoverTurn(ctx context.Context, q agentik.TurnQueue, item *queued, local bool) (bool, error) {
	user := q.Open[0]
	if err := c.ensureMemory(ctx); err != nil {
		return false, err
	}
	round, err := c.openRound(ctx, user, q.Turn)
	if err != nil {
		return false, err
	}
	switch {
	case round != nil && len(round.asking) > 0:
		// Waiting for approvals: parked, whatever is queued behind it
		// (the busy policy applied when that was sent).
		how := parkRejoin
		if c.shared {
			how = parkSilent
		}
		c.park(round, how)
		return false, errWaiting
	case round != nil && len(round.waiting) > 0:
		if len(q.Open) > 1 {
			c.mu.Lock()
			if c.pending != nil && c.pending.user.ID == user.ID {
				c.pending = nil
			}
			c.mu.Unlock()
			return false, c.closeInterrupted(ctx, user.ID, agentik.ReasonBusyPolicy)
		}
		c.adoptPending(round)
		return false, errWaiting
	case round != nil && !c.inMemory(round):
		item.resume = round
		if item.client == nil {
			item.client = round.client
		}
		return true, nil
	case !local && c.e.opts.OnRestart == RestartInterrupt && c.hasUserEntry(user.ID):
		c.e.log.Info("closing a turn cut short", "conversation", c.id, "reply_to", user.ID, "policy", RestartInterrupt)
		return false, c.closeInterrupted(ctx, user.ID, agentik.ReasonRestart)
	}
	return true, nil
}

// errWaiting stops runPending at a turn that waits for client tool results.
var errWaiting = errors.New("the first open turn waits for client tool results")

// openRound rebuilds the last tool round of the turn answering user from
// its journal: the model's text of the round, its calls, the results
// stored, and the client calls still waiting for one. It returns nil when
// the turn has no tool round, or when server tool calls of its last round
// have no result (the turn was cut short while they ran: not resumable).
// Client tools are the calls of tools this agent does not have.
func (c *conv) openRound(ctx context.Context, user agentik.Message, journal []agentik.Message) (*pendingRound, error) {
	var p *pendingRound
	resulted := false
	for _, m := range journal {
		switch m.Type {
		case agentik.MsgAssistant:
			p = &pendingRound{user: user, text: agentik.JoinText(m.Content), reasoning: m.Reasoning}
			resulted = false
		case agentik.MsgToolCall:
			if p == nil || resulted {
				p = &pendingRound{user: user}
				resulted = false
			}
			p.calls = append(p.calls, agentik.ToolCall{ID: m.CallID, Name: m.Name, Arguments: m.Arguments})
		case agentik.MsgToolResult:
			if p == nil {
				continue
			}
			resulted = true
			if p.results == nil {
				p.results = map[string]agentik.ToolResult{}
			}
			p.results[m.CallID] = agentik.ToolResult{Content: m.Content, IsError: m.IsError}
		}
	}
	if p == nil || len(p.calls) == 0 {
		return nil, nil
	}
	if p.results == nil {
		p.results = map[string]agentik.ToolResult{}
	}
	p.waiting = map[string]bool{}
	set := c.e.opts.Tools.Snapshot(ctx)
	var st *approvalState
	for _, tc := range p.calls {
		if _, ok := p.results[tc.ID]; ok {
			continue
		}
		if _, server := set.Lookup(tc.Name); server {
			// A server call without a result: waiting for approval,
			// approved and not run yet, or cut short while it ran.
			if st == nil {
				s, err := c.readApprovals(ctx)
				if err != nil {
					return nil, err
				}
				st = &s
			}
			req, asked := st.requested[tc.ID]
			if !asked {
				return nil, nil
			}
			res, answered := st.resolved[tc.ID]
			switch {
			case !answered:
				if p.asking == nil {
					p.asking = map[string]agentik.Event{}
				}
				p.asking[tc.ID] = req
			case res.Approved != nil && *res.Approved:
				if p.approved == nil {
					p.approved = map[string]agentik.RawJSON{}
				}
				p.approved[tc.ID] = res.Arguments
			default: // denied: its result is committed with the answer
				p.results[tc.ID] = agentik.ErrorResult(agentik.DeniedText(res.Reason))
			}
			continue
		}
		p.waiting[tc.ID] = true
	}
	c.mu.Lock()
	if c.pending != nil && c.pending.user.ID == user.ID && len(c.pending.client) > 0 {
		p.client = c.pending.client // offered again with the results
	} else {
		p.client = user.ClientTools // as stored with the message
	}
	c.mu.Unlock()
	return p, nil
}

// inMemory reports whether the round's results are in working memory.
func (c *conv) inMemory(p *pendingRound) bool {
	for i := len(c.memory) - 1; i >= 0; i-- {
		m := c.memory[i].Message
		if m.Role == agentik.RoleTool && m.CallID == p.calls[0].ID {
			return true
		}
	}
	return false
}

// adoptPending makes p the round waiting for client results here, so that
// results (or a new message) posted to this process find it, whichever
// process ran the turn.
func (c *conv) adoptPending(p *pendingRound) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending != nil && c.pending.user.ID == p.user.ID && len(p.client) == 0 {
		p.client = c.pending.client
	}
	c.pending = p
}

// waiting reports whether the conversation's only open turn waits for
// client tool results: nothing to run until they come.
func (c *conv) waiting(q agentik.TurnQueue) bool {
	if len(q.Open) != 1 {
		return false
	}
	p, err := c.openRound(c.e.baseCtx, q.Open[0], q.Turn)
	return err != nil || (p != nil && (len(p.waiting) > 0 || len(p.asking) > 0))
}

// fenceKey carries the lease epoch of a turn in its context.
type fenceKey struct{}

func withFence(ctx context.Context, epoch int64) context.Context {
	return context.WithValue(ctx, fenceKey{}, epoch)
}

// fenceOf returns the lease epoch the writes made with ctx are fenced by
// (0: none). conv.commit puts it on every Write.
func fenceOf(ctx context.Context) int64 {
	e, _ := ctx.Value(fenceKey{}).(int64)
	return e
}

// fenced ends a turn whose write the store refused because another process
// took the lease: the turn is that process's now. Nothing is written and no
// end is published — the new lease holder publishes the turn's events.
func (r *turnRun) fenced(err error) {
	c := r.c
	c.e.log.Warn("lease taken over by another process; leaving the turn to it", "conversation", c.id, "reply_to", r.t.user.ID, "err", err)
	c.dropUnsaved()
	c.mu.Lock()
	r.t.reason = reasonLeaseLost
	if c.running == r.t {
		c.running = nil
		c.partial.Reset()
	}
	c.mu.Unlock()
}

// isFenced reports whether a turn failed because its lease was taken over.
func (c *conv) isFenced(err error) bool {
	return errors.Is(err, agentik.ErrFenced)
}

// parkedAt reports whether the open turn answering user waits for
// approvals (then a restart keeps it waiting, whatever OnRestart says).
func (c *conv) parkedAt(ctx context.Context, user agentik.Message) bool {
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil || len(q.Open) == 0 || q.Open[0].ID != user.ID {
		return false
	}
	p, err := c.openRound(ctx, user, q.Turn)
	return err == nil && p != nil && len(p.asking) > 0
}

// acquire takes the conversation's lease and, from a Coordinator that reads
// the queue in the same round trip, returns the queue read with it.
func (c *conv) acquire(ctx context.Context) (agentik.Lease, *agentik.TurnQueue, error) {
	qc, ok := c.coord.(agentik.QueueCoordinator)
	if !ok || !c.shared {
		l, err := c.coord.Acquire(ctx, c.id)
		return l, nil, err
	}
	l, q, err := qc.AcquirePending(ctx, c.id)
	if err != nil || !l.Held {
		return l, nil, err
	}
	return l, &q, nil
}

// keeps reports whether the loop may keep its lease (keep).
func (c *conv) keeps() bool {
	_, ok := c.coord.(agentik.LeaseKeeper)
	return ok && c.shared
}

// keep keeps the lease, which the loop holds and leaves with no turn
// waiting, when the Coordinator can (agentik.LeaseKeeper) and the store is
// shared; it reports whether it did. Not while shutting down: the lease
// is then given back for another process to take.
func (c *conv) keep(ctx context.Context) bool {
	if !c.keeps() || ctx.Err() != nil || c.e.isDraining() {
		return false
	}
	return c.coord.(agentik.LeaseKeeper).Keep(context.WithoutCancel(ctx), c.id)
}

// releaseReads reports whether release reads the queue in the same round
// trip as it gives the lease back.
func (c *conv) releaseReads() bool {
	_, ok := c.coord.(agentik.QueueCoordinator)
	return ok && c.shared
}

// release gives the lease back and, sharing the store unless stuck, reads
// the queue after it (in the same round trip when the Coordinator can):
// read says it did.
func (c *conv) release(ctx context.Context, stuck bool) (q agentik.TurnQueue, read bool, err error) {
	if qc, ok := c.coord.(agentik.QueueCoordinator); ok && c.shared && !stuck {
		q, err = qc.ReleasePending(context.WithoutCancel(ctx), c.id)
		return q, true, err
	}
	c.coord.Release(context.WithoutCancel(ctx), c.id)
	if !c.shared || stuck {
		return q, false, nil
	}
	q, err = c.coord.Pending(ctx, c.id)
	return q, true, err
}
