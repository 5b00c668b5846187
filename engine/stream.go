package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// replayPage is how many durable events a replay reads per store query.
const replayPage = 500

// drainWait bounds how long a stream ended by shutdown waits for its reader
// to take each event that was already published.
const drainWait = time.Second

// stream is an agentik.Stream fed by one goroutine owned by the Engine. It
// ends when its reader's context ends or Close is called, and when the engine
// shuts down — then only after delivering what was already published, so the
// last events of interrupted turns reach their readers.
type stream[T any] struct {
	out    chan T
	ctx    context.Context // the reader's context and Close
	cancel context.CancelFunc
	stop   chan struct{} // closed by end: engine shutdown or conversation gone

	mu      sync.Mutex
	err     error
	endErr  error // why end was called
	endOnce sync.Once
}

func newStream[T any](parent, base context.Context) *stream[T] {
	ctx, cancel := context.WithCancel(parent)
	s := &stream[T]{out: make(chan T, 16), ctx: ctx, stop: make(chan struct{})}
	unhook := context.AfterFunc(base, func() { s.end(nil) })
	s.cancel = func() { unhook(); cancel() }
	return s
}

// end stops the stream after it delivered what was already published; Err
// then returns err.
func (s *stream[T]) end(err error) {
	s.endOnce.Do(func() {
		s.mu.Lock()
		s.endErr = err
		s.mu.Unlock()
		close(s.stop)
	})
}

// ended returns the error end was called with.
func (s *stream[T]) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endErr
}

func (s *stream[T]) C() <-chan T { return s.out }

func (s *stream[T]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *stream[T]) Close() error {
	s.cancel()
	return nil
}

// send delivers v unless the stream was closed or the engine stops.
func (s *stream[T]) send(v T) bool {
	select {
	case s.out <- v:
		return true
	case <-s.ctx.Done():
		return false
	case <-s.stop:
		return false
	}
}

// pender is a Subscriber that can tell it holds events not yet in its
// channel (bus subscribers queue what their channel cannot hold).
type pender interface{ Pending() bool }

// drain delivers what sub already holds, each event waiting at most
// drainWait for the reader, then ends the stream.
func drain[T any](s *stream[T], sub agentik.Subscriber[T], keep func(T) bool) {
	for {
		var v T
		var ok bool
		select {
		case v, ok = <-sub.C():
		default:
			p, can := sub.(pender)
			if !can || !p.Pending() {
				return
			}
			t := time.NewTimer(drainWait)
			select {
			case v, ok = <-sub.C():
				t.Stop()
			case <-t.C:
				return
			}
		}
		if !ok {
			return
		}
		if !keep(v) {
			continue
		}
		if !s.sendLast(v) {
			return
		}
	}
}

// sendLast delivers v after shutdown began, waiting at most drainWait.
func (s *stream[T]) sendLast(v T) bool {
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case s.out <- v:
		return true
	case <-s.ctx.Done():
	case <-t.C:
	}
	return false
}

// finish records why the stream ended and closes its channel.
func (s *stream[T]) finish(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.cancel()
	close(s.out)
}

// subscribe starts a conversation stream: durable events after the cursor up
// to the moment of subscription, then (if a turn runs) working and the
// partial text, then live events.
func (c *conv) subscribe(ctx context.Context, after int64) (agentik.Stream[agentik.Event], error) {
	e := c.e
	if c.shared {
		// A turn another process parked is found in the store.
		if _, err := c.pendingApprovalsShared(ctx); err != nil {
			return nil, err
		}
	}
	s := newStream[agentik.Event](ctx, e.baseCtx)

	// Under mu and writeMu nothing is published: the bus subscription, the
	// partial-text snapshot and the replay bound are one consistent point.
	c.mu.Lock()
	c.writeMu.Lock()
	sub, remote := c.coord.Join(c.id)
	bound, err := c.replayBound(ctx)
	if err != nil {
		c.writeMu.Unlock()
		c.mu.Unlock()
		sub.Close()
		s.Close()
		return nil, err
	}
	var join []agentik.Event
	if t := c.running; t != nil {
		join = append(join, agentik.Event{ConversationID: c.id, Date: agentik.Now(), Type: agentik.EvWorking, ReplyTo: t.user.ID})
		if c.partial.Len() > 0 {
			start := agentik.EvStartResponse
			if c.phase == agentik.DeltaReasoning {
				start = agentik.EvStartReasoning
			}
			join = append(join,
				agentik.Event{ConversationID: c.id, Date: agentik.Now(), Type: start, ReplyTo: t.user.ID},
				agentik.Event{ConversationID: c.id, Date: agentik.Now(), Type: agentik.EvAppendText, Text: c.partial.String()})
		}
	} else if p := c.parked; p != nil {
		join = parkedJoin(c.id, p)
	} else {
		join = remoteJoin(c.id, remote) // a turn running in another process
	}
	c.streams[s] = struct{}{}
	c.lastActive = timeNow()
	c.writeMu.Unlock()
	c.mu.Unlock()

	if !e.addStream() {
		c.mu.Lock()
		delete(c.streams, s)
		c.mu.Unlock()
		sub.Close()
		s.Close()
		return nil, agentik.Errorf(agentik.EUnavailable, "the agent is shutting down")
	}
	done := e.subscriber(ctx)
	go func() {
		defer e.streams.Done()
		defer done()
		defer sub.Close()
		err := c.feed(s, sub, after, bound, join)
		c.mu.Lock()
		delete(c.streams, s)
		c.lastActive = timeNow()
		c.mu.Unlock()
		s.finish(err)
	}()
	return s, nil
}

// feed runs a stream until it ends; the error says why (nil when closed).
func (c *conv) feed(s *stream[agentik.Event], sub agentik.Subscriber[agentik.Event], after, bound int64, join []agentik.Event) error {
	if after != agentik.LiveOnly {
		for after < bound {
			evs, err := c.store.Events(s.ctx, c.id, after, replayPage)
			if err != nil {
				if s.ctx.Err() != nil {
					return nil
				}
				return c.readErr(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				if ev.Cursor > bound {
					break
				}
				if !s.send(ev) {
					return nil
				}
				after = ev.Cursor
				join = joinAfterReplay(join, ev)
			}
			if len(evs) < replayPage {
				break
			}
		}
	}
	for _, ev := range join {
		if !s.send(ev) {
			return nil
		}
	}
	keep := func(ev agentik.Event) bool { return ev.Cursor == 0 || ev.Cursor > bound }
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-s.stop:
			drain(s, sub, keep)
			return s.ended()
		case ev, ok := <-sub.C():
			if !ok {
				return agentik.ErrSlowSubscriber
			}
			if keep(ev) && !s.send(ev) {
				if isStopped(s.stop) && s.sendLast(ev) {
					drain(s, sub, keep)
				}
				return s.ended()
			}
		}
	}
}

func isStopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Events streams agent events of the caller's conversations after the cursor.
func (e *Engine) Events(ctx context.Context, after int64) (agentik.Stream[agentik.AgentEvent], error) {
	owner := agentik.PrincipalFrom(ctx)
	s := newStream[agentik.AgentEvent](ctx, e.baseCtx)
	e.agentMu.Lock()
	sub := e.opts.Bus.SubscribeAgent()
	bound := e.lastAgentSeen
	e.agentMu.Unlock()
	bound, err := e.agentReplayBound(ctx, bound)
	if err != nil {
		sub.Close()
		s.Close()
		return nil, err
	}

	if !e.addStream() {
		sub.Close()
		s.Close()
		return nil, agentik.Errorf(agentik.EUnavailable, "the agent is shutting down")
	}
	done := e.subscriber(ctx)
	go func() {
		defer e.streams.Done()
		defer done()
		defer sub.Close()
		s.finish(e.feedAgent(s, sub, owner, after, bound))
	}()
	return s, nil
}

func (e *Engine) feedAgent(s *stream[agentik.AgentEvent], sub agentik.Subscriber[agentik.AgentEvent], owner string, after, bound int64) error {
	if after != agentik.LiveOnly {
		for after < bound {
			evs, err := e.opts.Store.AgentEvents(s.ctx, after, replayPage)
			if err != nil {
				if s.ctx.Err() != nil {
					return nil
				}
				return err
			}
			for _, ev := range evs {
				if ev.Cursor > bound {
					break
				}
				after = ev.Cursor
				if ev.Owner != owner {
					continue
				}
				if !s.send(ev) {
					return nil
				}
			}
			if len(evs) < replayPage {
				break
			}
		}
	}
	keep := func(ev agentik.AgentEvent) bool { return ev.Cursor > bound && ev.Owner == owner }
	for {
		select {
		case <-s.ctx.Done():
			return nil
		case <-s.stop:
			drain(s, sub, keep)
			return s.ended()
		case ev, ok := <-sub.C():
			if !ok {
				return agentik.ErrSlowSubscriber
			}
			if keep(ev) && !s.send(ev) {
				if isStopped(s.stop) && s.sendLast(ev) {
					drain(s, sub, keep)
				}
				return s.ended()
			}
		}
	}
}

// subscriber reports a stream opened for the facade of ctx, and returns
// what reports its end.
func (e *Engine) subscriber(ctx context.Context) func() {
	agent, facade := e.opts.Info.ID, agentik.FacadeFrom(ctx)
	e.opts.Observer.Subscribers(agent, facade, 1)
	return func() { e.opts.Observer.Subscribers(agent, facade, -1) }
}

// addStream counts a new stream goroutine unless Shutdown has begun to wait
// for them (a WaitGroup must not grow from zero while it is waited on).
func (e *Engine) addStream() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.streamsClosed {
		return false
	}
	e.streams.Add(1)
	return true
}

// parkedJoin is what a subscriber joining a turn that waits for approvals
// gets first: working, then each pending approval_requested again (without
// a cursor: the stream's position is where the subscriber asked), so a
// client that reconnects knows what waits for an answer.
func parkedJoin(id string, p *parkedTurn) []agentik.Event {
	join := []agentik.Event{{ConversationID: id, Date: agentik.Now(), Type: agentik.EvWorking, ReplyTo: p.replyTo}}
	evs := make([]agentik.Event, 0, len(p.asking))
	for _, ev := range p.asking {
		ev.Cursor = 0
		evs = append(evs, ev)
	}
	slices.SortFunc(evs, func(a, b agentik.Event) int { return strings.Compare(a.CallID, b.CallID) })
	return append(join, evs...)
}
