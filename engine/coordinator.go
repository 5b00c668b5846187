package engine

import (
	"context"
	"fmt"

	"github.com/agentik/agentik"
)

// localCoordinator is the Coordinator of a store this process alone uses
// (SQLite, and the memory store of temporal conversations): every lease is
// free and held at once, unfenced and always continued; no other process
// runs turns or needs interrupts; the store is the queue, as for a shared
// one. With it the engine runs exactly the same loop and recovery as
// alongside other processes.
type localCoordinator struct {
	store agentik.Store
	bus   agentik.Bus
}

var _ agentik.Coordinator = localCoordinator{}

func (localCoordinator) Start(agentik.CoordinatorCallbacks) error { return nil }

func (localCoordinator) Acquire(context.Context, string) (agentik.Lease, error) {
	return agentik.Lease{Held: true, Continued: true}, nil
}

func (localCoordinator) Release(context.Context, string) {}

func (l localCoordinator) Pending(ctx context.Context, conversationID string) (agentik.TurnQueue, error) {
	return agentik.ReadTurnQueue(ctx, l.store, conversationID)
}

func (localCoordinator) Interrupt(context.Context, agentik.InterruptRequest) (bool, error) {
	return false, nil
}

func (l localCoordinator) Join(conversationID string) (agentik.Subscriber[agentik.Event], agentik.RemoteTurn) {
	return l.bus.Subscribe(conversationID), agentik.RemoteTurn{}
}

func (localCoordinator) Running(string) (agentik.RemoteTurn, bool) {
	return agentik.RemoteTurn{}, false
}

// callbacks are what the store's Coordinator calls into the engine with.
func (e *Engine) callbacks() agentik.CoordinatorCallbacks {
	return agentik.CoordinatorCallbacks{Kick: e.kick, Wake: e.wake, Interrupt: e.remoteInterrupt, Lost: e.leasesLost}
}

// kick starts the loop of a conversation with open turns, if none runs.
func (e *Engine) kick(id string) { e.kickConv(id, false) }

// wake has the loop of a conversation whose lease this process keeps read
// the queue again (agentik.LeaseKeeper): started if it is not running, and
// going once more if it is (what it read may be older than the message).
func (e *Engine) wake(id string) { e.kickConv(id, true) }

func (e *Engine) kickConv(id string, again bool) {
	ctx, cancel := context.WithTimeout(e.baseCtx, finalWriteTimeout)
	defer cancel()
	c, err := e.load(ctx, id)
	if err != nil {
		if !agentik.IsNotFound(err) {
			e.log.Warn("kick: load conversation", "conversation", id, "err", err)
		}
		return
	}
	c.mu.Lock()
	if again {
		c.sent++ // work for a loop of this process: a running one goes again
	}
	c.kickLocked()
	c.mu.Unlock()
}

// remoteInterrupt cancels the running turn another process asked to
// interrupt, if it is the one req targets; a targeted turn that does not
// run here is withdrawn before it starts (withdraw.go).
func (e *Engine) remoteInterrupt(id string, req agentik.InterruptRequest) bool {
	c := e.lockLive(id)
	if c == nil {
		return false
	}
	defer c.mu.Unlock()
	if c.running != nil && req.Matches(c.running.user.ID) {
		return c.interruptLocked(req.Reason)
	}
	if req.ReplyTo != "" && req.Reason == agentik.ReasonUser {
		c.remoteWithdraw(req.ReplyTo) // not running here: withdrawn before it starts
	}
	return false
}

// leasesLost stops every turn of a shared conversation at once, leaving it
// open for the next lease holder.
func (e *Engine) leasesLost() {
	e.mu.Lock()
	convs := make([]*conv, 0, len(e.live))
	for _, c := range e.live {
		if c.shared {
			convs = append(convs, c)
		}
	}
	e.mu.Unlock()
	for _, c := range convs {
		if c.interrupt(reasonLeaseLost) {
			e.log.Warn("lease lost; the turn is left to the next lease holder", "conversation", c.id)
		}
	}
}

// remoteJoin is what a subscriber joining a turn that runs in another
// process gets first: working and the text of the current phase so far.
func remoteJoin(id string, t agentik.RemoteTurn) []agentik.Event {
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
	if !c.shared {
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
