package engine

import (
	"context"
	"fmt"

	"github.com/agentik/agentik"
)

// Coordinator lets several engines — agentik processes — share one Store
// (PostgreSQL). With Options.Cluster set:
//
//   - the store is the queue: a user message stored by any process is an
//     open turn (Store.OpenTurns) that the process holding the
//     conversation's lease answers, in seq order;
//   - a turn runs only while its process holds the conversation's lease, so
//     exactly one process runs a conversation's turns at a time;
//   - interrupts reach the process running the turn, wherever it was posted;
//   - when a process dies its leases are freed, and the Coordinator's Kick
//     makes another process pick the open turns up (failover);
//   - a new subscriber's replay reaches the store's latest cursor, not just
//     what this process published, so events committed by other processes
//     are not skipped.
//
// Temporal conversations live in one process's memory and are never shared.
// A Coordinator is safe for concurrent use.
type Coordinator interface {
	// Start begins delivering the callbacks. Called once by Engine.Start.
	Start(cb ClusterCallbacks) error
	// Acquire tries to take the lease of a conversation's turns without
	// waiting: true when this process holds it (also when it already did).
	Acquire(ctx context.Context, conversationID string) (bool, error)
	// Release gives the lease back; a no-op when not held.
	Release(ctx context.Context, conversationID string)
	// Pending returns the conversation's open turns in seq order.
	Pending(ctx context.Context, conversationID string) ([]agentik.Message, error)
	// Interrupt asks the process running the conversation's turn to cancel
	// it with reason, unless that turn answers message `unless` (empty: any
	// turn). It reports whether some process holds the lease.
	Interrupt(ctx context.Context, conversationID, reason, unless string) (bool, error)
}

// ClusterBus is a Bus that spans the processes sharing a store and brings
// their Coordinator: Options.Cluster defaults to it, so wiring a shared
// store and its bus is enough to run as one of several processes.
type ClusterBus interface {
	agentik.Bus
	Coordinator() Coordinator
}

// ClusterCallbacks are what a Coordinator calls into the engine with. They
// do not block on turns.
type ClusterCallbacks struct {
	// Kick: the conversation has open turns that may have no runner.
	Kick func(conversationID string)
	// Interrupt: another process asked to interrupt the conversation's
	// running turn (see Coordinator.Interrupt); true if one was cancelled.
	Interrupt func(conversationID, reason, unless string) bool
	// Lost: the leases of this process may now be held by others. Running
	// turns stop at once and are left open (nothing is written), so that the
	// process that takes the lease answers them — never twice.
	Lost func()
}

// reasonLeaseLost marks a turn cancelled because its lease was lost: it is
// left open for the new lease holder (turnRun.closeInterrupted).
const reasonLeaseLost = "lease_lost"

func (e *Engine) clustered(c *conv) bool { return e.opts.Cluster != nil && !c.temporal }

// startCluster is Start for a shared store: every open turn is offered to
// the conversation's loop, which runs it only if it gets the lease (the
// restart policy does not apply: another process may be running them).
func (e *Engine) startCluster(ctx context.Context) error {
	err := e.opts.Cluster.Start(ClusterCallbacks{
		Kick:      e.clusterKick,
		Interrupt: e.clusterInterrupt,
		Lost:      e.clusterLost,
	})
	if err != nil {
		return fmt.Errorf("start: cluster: %w", err)
	}
	open, err := e.opts.Store.OpenTurns(ctx)
	if err != nil {
		return fmt.Errorf("start: open turns: %w", err)
	}
	seen := map[string]bool{}
	for _, m := range open {
		if !seen[m.ConversationID] {
			seen[m.ConversationID] = true
			e.clusterKick(m.ConversationID)
		}
	}
	e.janitor.Add(1)
	go e.sweepTemporal()
	return nil
}

// clusterKick starts the conversation's loop if it is not running.
func (e *Engine) clusterKick(id string) {
	ctx, cancel := context.WithTimeout(e.baseCtx, finalWriteTimeout)
	defer cancel()
	c, err := e.load(ctx, id)
	if err != nil {
		if !agentik.IsNotFound(err) {
			e.log.Warn("cluster: load conversation", "conversation", id, "err", err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.looping {
		return
	}
	e.mu.Lock()
	draining := e.draining
	if !draining {
		e.turns.Add(1)
	}
	e.mu.Unlock()
	if draining {
		return
	}
	c.looping = true
	e.limits.started(c.owner)
	go c.loop()
}

func (e *Engine) clusterInterrupt(id, reason, unless string) bool {
	e.mu.Lock()
	c := e.live[id]
	e.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == nil || (unless != "" && c.running.user.ID == unless) {
		return false
	}
	return c.interruptLocked(reason)
}

func (e *Engine) clusterLost() {
	e.mu.Lock()
	convs := make([]*conv, 0, len(e.live))
	for _, c := range e.live {
		if !c.temporal {
			convs = append(convs, c)
		}
	}
	e.mu.Unlock()
	for _, c := range convs {
		if c.interrupt(reasonLeaseLost) {
			e.log.Warn("cluster: lease lost; the turn is left to the next lease holder", "conversation", c.id)
		}
	}
}

// clusterLoop replaces loop for a shared conversation: take the lease, answer
// the store's open turns in order, give the lease back, and check again for
// a message stored by a process that could not take the lease meanwhile.
// The caller (loop) has set looping and counts in e.turns.
func (c *conv) clusterLoop() {
	cl := c.e.opts.Cluster
	ctx := c.e.baseCtx
	// Local entries carry what the store does not: client tools and
	// continuations of client tool rounds (AG-UI), by user message id.
	local := map[string]queued{}
	for {
		c.mu.Lock()
		for _, q := range c.queue {
			local[q.user.ID] = q
		}
		c.queue = nil
		c.mu.Unlock()

		held, err := cl.Acquire(ctx, c.id)
		if err != nil && ctx.Err() == nil {
			c.e.log.Warn("cluster: acquire lease", "conversation", c.id, "err", err)
		}
		again := false
		if held {
			// Another process may have answered turns since we last ran.
			c.memoryLoaded = false
			c.runPending(ctx, local)
			cl.Release(context.WithoutCancel(ctx), c.id)
			// A process that stored a message while we held the lease could
			// not take it: the message is ours to see now.
			if p, err := cl.Pending(ctx, c.id); err == nil && len(p) > 0 && !c.e.isDraining() {
				again = true
			}
		}
		c.mu.Lock()
		if (again || len(c.queue) > 0) && ctx.Err() == nil && !c.e.isDraining() {
			c.mu.Unlock()
			if !held && len(local) > 0 {
				// Not ours: another process holds the lease and answers them.
				clear(local)
			}
			continue
		}
		c.looping = false
		c.e.limits.stopped(c.owner)
		c.mu.Unlock()
		return
	}
}

// runPending runs the store's open turns of the conversation while it holds
// the lease. It stops when none is left, on shutdown, when the store cannot
// be read, and when a turn stays open after running (its closing write
// failed or the lease was lost): the Coordinator's Kick retries later.
func (c *conv) runPending(ctx context.Context, local map[string]queued) {
	last := ""
	for !c.e.isDraining() && ctx.Err() == nil {
		pending, err := c.e.opts.Cluster.Pending(ctx, c.id)
		if err != nil {
			if ctx.Err() == nil {
				c.e.log.Warn("cluster: read open turns", "conversation", c.id, "err", err)
			}
			return
		}
		if len(pending) == 0 || pending[0].ID == last {
			return
		}
		user := pending[0]
		last = user.ID
		q, ok := local[user.ID]
		if !ok {
			q = queued{user: user}
		}
		delete(local, user.ID)

		tctx, cancel := context.WithCancel(ctx)
		t := &turn{user: user, cancel: cancel}
		c.mu.Lock()
		c.running = t
		c.phase = ""
		c.partial.Reset()
		c.publishLocked(agentik.Event{Type: agentik.EvWorking, ReplyTo: user.ID})
		c.mu.Unlock()

		c.runTurn(tctx, t, q)
		cancel()

		c.mu.Lock()
		c.running = nil
		c.partial.Reset()
		c.lastActive = timeNow()
		lost := t.reason == reasonLeaseLost
		c.mu.Unlock()
		if lost {
			return
		}
	}
}

func (e *Engine) isDraining() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.draining
}

// replayBound is where a new subscriber's replay from the store ends and
// live delivery begins. Alone, the engine knows the last cursor it
// published; sharing the store, events committed by other processes may lie
// beyond it, so the store's latest cursor is read — after the bus
// subscription is registered, so that anything committed later arrives live.
// The caller holds c.mu and c.writeMu.
func (c *conv) replayBound(ctx context.Context) (int64, error) {
	if !c.e.clustered(c) {
		return c.lastPublished, nil
	}
	last, err := c.store.LastCursor(ctx, c.id)
	if err != nil {
		return 0, c.readErr(err)
	}
	return max(last, c.lastPublished), nil
}

// agentReplayBound is replayBound for the agent-event stream.
func (e *Engine) agentReplayBound(ctx context.Context, seen int64) (int64, error) {
	if e.opts.Cluster == nil {
		return seen, nil
	}
	last, err := e.opts.Store.LastAgentCursor(ctx)
	if err != nil {
		return 0, fmt.Errorf("agent events: %w", err)
	}
	return max(last, seen), nil
}

// handleFor returns the handle of a live conversation.
func (e *Engine) handleFor(c *conv) agentik.Conversation {
	if e.clustered(c) {
		return &clusterHandle{handle{c: c}}
	}
	return &handle{c: c}
}

// clusterHandle is a handle whose busy policies and interrupts also reach a
// turn running in another process.
type clusterHandle struct{ handle }

// Send applies the busy policy to a turn running anywhere: reject refuses
// while the conversation has an open turn, interrupt cancels the turn
// running elsewhere (not the one answering this message).
func (h *clusterHandle) Send(ctx context.Context, req agentik.SendRequest) (agentik.SendResult, error) {
	cl := h.c.e.opts.Cluster
	if req.IfBusy == agentik.BusyReject && len(req.ToolResults) == 0 {
		open, err := cl.Pending(ctx, h.c.id)
		if err != nil {
			return agentik.SendResult{}, h.c.readErr(err)
		}
		if len(open) > 0 {
			return agentik.SendResult{}, agentik.Errorf(agentik.EBusy, "a turn is running")
		}
	}
	res, err := h.handle.Send(ctx, req)
	if err == nil && req.IfBusy == agentik.BusyInterrupt && !h.c.isWorking() {
		if _, err := cl.Interrupt(ctx, h.c.id, agentik.ReasonBusyPolicy, res.MessageID); err != nil {
			h.c.e.log.Warn("cluster: forward busy-policy interrupt", "conversation", h.c.id, "err", err)
		}
	}
	return res, err
}

// Interrupt cancels the turn here, or asks the process running it.
func (h *clusterHandle) Interrupt(ctx context.Context) (bool, error) {
	if h.c.interrupt(agentik.ReasonUser) {
		return true, nil
	}
	ok, err := h.c.e.opts.Cluster.Interrupt(ctx, h.c.id, agentik.ReasonUser, "")
	if err != nil {
		return false, h.c.readErr(err)
	}
	return ok, nil
}
