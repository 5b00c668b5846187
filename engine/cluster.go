package engine

import (
	"context"
	"errors"
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
	// waiting. The Lease's Epoch is zero when another process holds it;
	// holding it already returns the current lease.
	Acquire(ctx context.Context, conversationID string) (Lease, error)
	// Release gives the lease back; a no-op when not held.
	Release(ctx context.Context, conversationID string)
	// Pending returns the conversation's open turns in seq order and the
	// journal of the first one so far.
	Pending(ctx context.Context, conversationID string) (Queue, error)
	// Interrupt asks the process running the conversation's turn to cancel
	// it with reason, unless that turn answers message `unless` (empty: any
	// turn). It reports whether some process holds the lease.
	Interrupt(ctx context.Context, conversationID, reason, unless string) (bool, error)
	// Join subscribes to the conversation's events (as Bus.Subscribe) and
	// returns, at the same point of the stream, the turn another process
	// runs in it (zero when none is known).
	Join(conversationID string) (agentik.Subscriber[agentik.Event], RemoteTurn)
	// Running returns the turn another process runs in the conversation.
	Running(conversationID string) (RemoteTurn, bool)
}

// Lease is a held conversation lease. Epoch fences every turn write made
// under it (agentik.Write.Fence); Continued says this process held the
// lease last, so no other process wrote the conversation's turns since and
// the cached working memory is current.
type Lease struct {
	Epoch     int64
	Continued bool
}

// Queue is a conversation's open turns in seq order, and the journal
// messages answering the first one (its turn so far: tool calls, results).
type Queue struct {
	Open []agentik.Message
	Turn []agentik.Message
}

// RemoteTurn is a turn running in another process, as its online events
// tell: the user message it answers, the phase of the current model call
// (agentik.DeltaReasoning or DeltaText, "" before the first delta) and the
// text of that phase so far.
type RemoteTurn struct {
	ReplyTo string
	Phase   string
	Partial string
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

		lease, err := cl.Acquire(ctx, c.id)
		if err != nil && ctx.Err() == nil && !agentik.IsNotFound(err) {
			c.e.log.Warn("cluster: acquire lease", "conversation", c.id, "err", err)
		}
		held := lease.Epoch != 0
		again := false
		if held {
			if !lease.Continued {
				// Another process answered turns since we last ran.
				c.memoryLoaded = false
			}
			c.runPending(ctx, lease.Epoch, local)
			cl.Release(context.WithoutCancel(ctx), c.id)
			// A process that stored a message while we held the lease could
			// not take it: the message is ours to see now.
			if q, err := cl.Pending(ctx, c.id); err == nil && len(q.Open) > 0 && !c.waiting(q) && !c.e.isDraining() {
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
// the lease of the given epoch. It stops when none is left, on shutdown,
// when the store cannot be read, when the first open turn waits for client
// tool results, and when a turn stays open after running (its closing write
// failed or the lease was lost): the Coordinator's Kick retries later.
func (c *conv) runPending(ctx context.Context, epoch int64, local map[string]queued) {
	last := ""
	for !c.e.isDraining() && ctx.Err() == nil {
		q, err := c.e.opts.Cluster.Pending(ctx, c.id)
		if err != nil {
			if ctx.Err() == nil {
				c.e.log.Warn("cluster: read open turns", "conversation", c.id, "err", err)
			}
			return
		}
		if len(q.Open) == 0 || q.Open[0].ID == last {
			return
		}
		user := q.Open[0]
		last = user.ID
		item, ok := local[user.ID]
		if !ok {
			item = queued{user: user}
		}
		delete(local, user.ID)
		// Every write of the turn carries the lease epoch: if another
		// process took the lease meanwhile, the store refuses it.
		fctx := withFence(agentik.WithConversation(ctx, c.id), epoch)
		if item.resume == nil {
			run, err := c.recoverTurn(fctx, q, &item)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, errWaiting) {
					c.e.log.Warn("cluster: recover open turn", "conversation", c.id, "reply_to", user.ID, "err", err)
				}
				return
			}
			if !run {
				continue // closed here; the next open turn is read again
			}
		}

		tctx, cancel := context.WithCancel(fctx)
		t := &turn{user: user, cancel: cancel}
		c.mu.Lock()
		c.running = t
		c.phase = ""
		c.partial.Reset()
		c.publishLocked(agentik.Event{Type: agentik.EvWorking, ReplyTo: user.ID})
		c.mu.Unlock()

		c.runTurn(tctx, t, item)
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

// recoverTurn decides what to do with the first open turn, q.Open[0], when
// this process has no continuation of it in hand. The store is the only
// state processes share, so the turn's journal tells its state:
//
//   - its last tool round has client tool calls without results: it waits
//     for the client. It is left alone (run false, and runPending stops) —
//     unless later messages are queued behind it, which abandon it (closed
//     with interrupted{busy_policy}, as a message sent while this process
//     knew of the waiting round would have);
//   - its last round has all results but is not in working memory yet: the
//     client's results were posted (to any process), or a process died just
//     after storing them: the turn continues from that round;
//   - it was started before (its user message is in working memory) by a
//     process that is gone or lost the lease: with OnRestart interrupt it is
//     closed with interrupted{restart}, else answered again;
//   - otherwise it is a queued message: it runs.
//
// It reports whether the turn is to run now; when it closes the turn it
// returns false and the caller reads the queue again.
func (c *conv) recoverTurn(ctx context.Context, q Queue, item *queued) (bool, error) {
	user := q.Open[0]
	if err := c.ensureMemory(ctx); err != nil {
		return false, err
	}
	round := c.openRound(ctx, user, q.Turn)
	switch {
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
	case c.e.opts.OnRestart == RestartInterrupt && c.hasUserEntry(user.ID):
		c.e.log.Info("cluster: closing a turn cut short elsewhere", "conversation", c.id, "reply_to", user.ID, "policy", RestartInterrupt)
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
func (c *conv) openRound(ctx context.Context, user agentik.Message, journal []agentik.Message) *pendingRound {
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
		return nil
	}
	if p.results == nil {
		p.results = map[string]agentik.ToolResult{}
	}
	p.waiting = map[string]bool{}
	set := c.e.opts.Tools.Snapshot(ctx)
	for _, tc := range p.calls {
		if _, ok := p.results[tc.ID]; ok {
			continue
		}
		if _, server := set.Lookup(tc.Name); server {
			return nil
		}
		p.waiting[tc.ID] = true
	}
	c.mu.Lock()
	if c.pending != nil && c.pending.user.ID == user.ID {
		p.client = c.pending.client // the client's tools are only known where they were offered
	}
	c.mu.Unlock()
	return p
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
func (c *conv) waiting(q Queue) bool {
	if len(q.Open) != 1 {
		return false
	}
	p := c.openRound(c.e.baseCtx, q.Open[0], q.Turn)
	return p != nil && len(p.waiting) > 0
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
	c.e.log.Warn("cluster: lease taken over by another process; leaving the turn to it", "conversation", c.id, "reply_to", r.t.user.ID, "err", err)
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
	return c.e.clustered(c) && errors.Is(err, agentik.ErrFenced)
}

// subscribeBus subscribes to the conversation's events; for a shared
// conversation it also returns the turn another process runs in it.
func (c *conv) subscribeBus() (agentik.Subscriber[agentik.Event], RemoteTurn) {
	if c.e.clustered(c) {
		return c.e.opts.Cluster.Join(c.id)
	}
	return c.e.opts.Bus.Subscribe(c.id), RemoteTurn{}
}

// remoteJoin is what a subscriber joining a turn that runs in another
// process gets first: working and the text of the current phase so far.
func remoteJoin(id string, t RemoteTurn) []agentik.Event {
	if t.ReplyTo == "" {
		return nil
	}
	now := agentik.Now()
	join := []agentik.Event{{ConversationID: id, Date: now, Type: agentik.EvWorking, ReplyTo: t.ReplyTo}}
	if t.Partial != "" {
		start := agentik.EvStartResponse
		if t.Phase == agentik.DeltaReasoning {
			start = agentik.EvStartReasoning
		}
		join = append(join,
			agentik.Event{ConversationID: id, Date: now, Type: start, ReplyTo: t.ReplyTo},
			agentik.Event{ConversationID: id, Date: now, Type: agentik.EvAppendText, Text: t.Partial})
	}
	return join
}

// joinAfterReplay drops the join of a turn that a replayed event closed:
// the turn ended between the snapshot and the replay's bound.
func joinAfterReplay(join []agentik.Event, ev agentik.Event) []agentik.Event {
	if len(join) == 0 {
		return join
	}
	replyTo := join[0].ReplyTo
	switch {
	case ev.Type == agentik.EvInterrupted && ev.ReplyTo == replyTo,
		ev.Message != nil && ev.Message.ReplyTo == replyTo && ev.Message.ClosesTurn():
		return nil
	}
	return join
}

// working reports whether a turn of the conversation runs here or, for a
// shared conversation, in another process.
func (c *conv) working() bool {
	if c.isWorking() {
		return true
	}
	return c.e.remoteWorking(c.id, c.temporal)
}

// remoteWorking reports whether another process runs a turn of the
// conversation (never for temporal ones, which live in one process).
func (e *Engine) remoteWorking(id string, temporal bool) bool {
	if e.opts.Cluster == nil || temporal {
		return false
	}
	_, ok := e.opts.Cluster.Running(id)
	return ok
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
// running elsewhere (not the one answering this message). A turn waiting
// for client tool results is found in the store, whichever process ran it,
// so results — or a new message, which abandons it — may be posted to any
// process.
func (h *clusterHandle) Send(ctx context.Context, req agentik.SendRequest) (agentik.SendResult, error) {
	c := h.c
	cl := c.e.opts.Cluster
	q, err := cl.Pending(ctx, c.id)
	if err != nil {
		return agentik.SendResult{}, c.readErr(err)
	}
	var round *pendingRound
	if len(q.Open) > 0 {
		if p := c.openRound(ctx, q.Open[0], q.Turn); p != nil && len(p.waiting) > 0 {
			round = p
		}
	}
	if req.IfBusy == agentik.BusyReject && len(req.ToolResults) == 0 && len(q.Open) > 0 && (round == nil || len(q.Open) > 1) {
		return agentik.SendResult{}, agentik.Errorf(agentik.EBusy, "a turn is running")
	}
	c.mu.Lock()
	switch {
	case round != nil:
		if c.pending != nil && c.pending.user.ID == round.user.ID && len(round.client) == 0 {
			round.client = c.pending.client
		}
		c.pending = round
	case c.running == nil:
		c.pending = nil // answered or abandoned through another process
	}
	c.mu.Unlock()
	res, err := h.handle.Send(ctx, req)
	if err == nil && req.IfBusy == agentik.BusyInterrupt && !c.isWorking() {
		if _, err := cl.Interrupt(ctx, c.id, agentik.ReasonBusyPolicy, res.MessageID); err != nil {
			c.e.log.Warn("cluster: forward busy-policy interrupt", "conversation", c.id, "err", err)
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

// InterruptTurn interrupts the turn answering replyTo: here (running or
// queued), or — when another process runs exactly that turn — there. A turn
// queued in the shared store but not started yet is not withdrawn: false.
func (h *clusterHandle) InterruptTurn(ctx context.Context, replyTo string) (bool, error) {
	if ok, err := h.handle.InterruptTurn(ctx, replyTo); ok || err != nil {
		return ok, err
	}
	if rt, running := h.c.e.opts.Cluster.Running(h.c.id); !running || rt.ReplyTo != replyTo {
		return false, nil
	}
	ok, err := h.c.e.opts.Cluster.Interrupt(ctx, h.c.id, agentik.ReasonUser, "")
	if err != nil {
		return false, h.c.readErr(err)
	}
	return ok, nil
}
