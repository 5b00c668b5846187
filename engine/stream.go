package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
)

// replayPage is how many durable events a replay reads per store query.
const replayPage = 500

// drainWait bounds how long a stream that is ending (shutdown, the
// conversation gone) waits for its reader to take the next event of what
// was already published.
const drainWait = time.Second

// Phases of a stream.
const (
	phaseReplay = iota // durable events from the store, up to bound
	phaseJoin          // what a subscriber joining a running turn gets first
	phaseLive          // events from the bus
)

// stream is an agentik.PullStream. Its reader drives it: Next replays from
// the store on the reader's goroutine, then takes live events from the bus
// subscriber, so a subscriber costs no goroutine of the engine's (C starts
// one, for readers that receive from a channel). It ends when its reader's
// context ends or Close is called, and when the engine shuts down or the
// conversation goes — then only after its reader took what was already
// published (or made no progress for drainWait), so the last events of
// interrupted turns reach their readers. Every stream is counted in
// e.streams until it has finished.
type stream[T any] struct {
	e      *Engine
	ctx    context.Context // the reader's context and Close
	cancel context.CancelFunc
	sub    agentik.Subscriber[T]

	// Set by the subscriber, read by Next.
	bound    int64                                                                // replay up to this cursor, then live
	page     func(ctx context.Context, after int64) ([]*agentik.Shared[T], error) // nil: live only
	replayed func(*agentik.Shared[T]) (bool, error)                               // per replayed event: deliver it?
	joined   func() []*agentik.Shared[T]                                          // delivered between replay and live
	live     func(*agentik.Shared[T]) bool                                        // deliver this bus event?
	mend     func(*agentik.Shared[T]) (bool, []*agentik.Shared[T])                // nil: marks of lost events are dropped
	onFinish func()
	reported func() // reports the stream's end to the Observer

	// The reader's state: Next runs on one goroutine at a time.
	phase    int
	after    int64
	pending  []*agentik.Shared[T]
	lastPage bool
	join     []*agentik.Shared[T]
	mended   []*agentik.Shared[T] // what mend put before an event, and it

	done     chan struct{} // closed once ending or finished
	doneOnce sync.Once
	pulls    atomic.Int64 // events taken: progress while ending

	mu       sync.Mutex
	stopping bool
	endErr   error // why end was called
	finished bool
	err      error
	expiry   *time.Timer

	cOnce sync.Once
	out   chan T
}

var _ agentik.PullStream[agentik.Event] = (*stream[agentik.Event])(nil)

func newStream[T any](e *Engine, parent context.Context, sub agentik.Subscriber[T]) *stream[T] {
	ctx, cancel := context.WithCancel(parent)
	return &stream[T]{e: e, ctx: ctx, cancel: cancel, sub: sub, done: make(chan struct{})}
}

// start makes the stream live: it ends with the engine's base context and
// its reader's. The caller has counted it in e.streams.
func (s *stream[T]) start(after int64) {
	s.after = after
	if after == agentik.LiveOnly || s.page == nil {
		s.phase = phaseJoin
	}
	unhook := context.AfterFunc(s.e.baseCtx, func() { s.end(nil) })
	context.AfterFunc(s.ctx, func() { unhook(); s.finish(nil) })
}

// end begins to end the stream: its reader gets what the bus subscriber
// already holds, then the stream finishes with err. A reader that takes
// nothing for drainWait is not waited for.
func (s *stream[T]) end(err error) {
	s.mu.Lock()
	if s.stopping || s.finished {
		s.mu.Unlock()
		return
	}
	s.stopping, s.endErr = true, err
	last := s.pulls.Load()
	check := func() {
		if n := s.pulls.Load(); n != last {
			last = n
			s.mu.Lock()
			if !s.finished {
				s.expiry.Reset(drainWait)
			}
			s.mu.Unlock()
			return
		}
		s.finish(err)
	}
	s.expiry = time.AfterFunc(drainWait, check)
	s.mu.Unlock()
	s.doneOnce.Do(func() { close(s.done) })
}

// ending reports whether end was called, and with what.
func (s *stream[T]) ending() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping, s.endErr
}

// finish ends the stream with err (the first call counts): the reader's
// next Next returns ended, Err returns err.
func (s *stream[T]) finish(err error) {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return
	}
	s.finished, s.err = true, err
	if s.expiry != nil {
		s.expiry.Stop()
	}
	s.mu.Unlock()
	s.doneOnce.Do(func() { close(s.done) })
	s.cancel()
	s.sub.Close()
	if s.onFinish != nil {
		s.onFinish()
	}
	if s.reported != nil {
		s.reported()
	}
	s.e.streams.Done()
}

func (s *stream[T]) isFinished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished
}

func (s *stream[T]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *stream[T]) Close() error {
	s.finish(nil)
	return nil
}

func (s *stream[T]) Ready() <-chan struct{} { return s.sub.Ready() }

func (s *stream[T]) Done() <-chan struct{} { return s.done }

// Next returns the next event: replayed, joined or live, in that order,
// with the text a slow reader lost put back (mend).
func (s *stream[T]) Next() (*agentik.Shared[T], bool) {
	for {
		if len(s.mended) > 0 {
			sh := s.mended[0]
			s.mended[0] = nil
			s.mended = s.mended[1:]
			return sh, false
		}
		sh, ended := s.next()
		if sh == nil {
			return nil, ended
		}
		if s.mend == nil {
			if sh.Type == agentik.EvDeltasLost {
				continue
			}
			return sh, false
		}
		keep, before := s.mend(sh)
		if !keep {
			continue
		}
		if len(before) > 0 {
			s.mended = append(before[1:], sh)
			return before[0], false
		}
		return sh, false
	}
}

// next returns the next event as the store and the bus have it.
func (s *stream[T]) next() (*agentik.Shared[T], bool) {
	for {
		if s.isFinished() {
			return nil, true
		}
		switch s.phase {
		case phaseReplay:
			if stopping, err := s.ending(); stopping {
				s.finish(err) // the reader resumes from its cursor
				return nil, true
			}
			if len(s.pending) == 0 {
				if s.lastPage || s.after >= s.bound {
					s.pending, s.phase = nil, phaseJoin
					continue
				}
				evs, err := s.page(s.ctx, s.after)
				if err != nil {
					if s.ctx.Err() != nil {
						err = nil
					}
					s.finish(err)
					return nil, true
				}
				s.pending, s.lastPage = evs, len(evs) < replayPage
				if len(evs) == 0 {
					s.pending, s.phase = nil, phaseJoin
					continue
				}
			}
			sh := s.pending[0]
			s.pending[0] = nil
			s.pending = s.pending[1:]
			if sh.Cursor > s.bound {
				s.pending, s.phase = nil, phaseJoin
				continue
			}
			s.after = sh.Cursor
			ok, err := s.replayed(sh)
			if err != nil {
				s.finish(err)
				return nil, true
			}
			if ok {
				s.pulls.Add(1)
				return sh, false
			}
		case phaseJoin:
			if s.joined != nil {
				// What the replay's hooks held goes with them.
				s.join, s.joined, s.replayed, s.page = s.joined(), nil, nil, nil
			}
			if len(s.join) > 0 {
				sh := s.join[0]
				s.join = s.join[1:]
				s.pulls.Add(1)
				return sh, false
			}
			s.join, s.phase = nil, phaseLive
		case phaseLive:
			sh, closed := s.sub.Next()
			if sh == nil {
				if stopping, err := s.ending(); stopping {
					s.finish(err)
					return nil, true
				}
				if closed {
					s.finish(agentik.ErrSlowSubscriber)
					return nil, true
				}
				return nil, false
			}
			if s.live(sh) {
				s.pulls.Add(1)
				return sh, false
			}
		}
	}
}

// C starts, once, the goroutine that feeds the stream's channel from Next.
func (s *stream[T]) C() <-chan T {
	s.cOnce.Do(func() {
		s.out = make(chan T, 16)
		go s.feedC()
	})
	return s.out
}

func (s *stream[T]) feedC() {
	defer close(s.out)
	for {
		sh, ended := s.Next()
		if ended {
			return
		}
		if sh == nil {
			select {
			case <-s.Ready():
			case <-s.done:
			}
			continue
		}
		v, err := sh.Value()
		if err != nil {
			s.finish(err)
			return
		}
		select {
		case s.out <- v:
		case <-s.ctx.Done():
			s.finish(nil)
			return
		}
	}
}

// shareAll wraps events to deliver.
func shareAll[T any](vs []T, frame func(T) (int64, string)) []*agentik.Shared[T] {
	out := make([]*agentik.Shared[T], len(vs))
	for i, v := range vs {
		c, t := frame(v)
		out[i] = agentik.NewShared(c, t, v)
	}
	return out
}

func eventFrame(ev agentik.Event) (int64, string) { return ev.Cursor, ev.Type }

func agentFrame(ev agentik.AgentEvent) (int64, string) { return ev.Cursor, ev.Type }

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
		return nil, err
	}
	var join []agentik.Event
	joinTurn := remote.ReplyTo // the turn running when the stream joined
	if t := c.running; t != nil {
		joinTurn = t.user.ID
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
		joinTurn = p.replyTo
		join = parkedJoin(c.id, p)
	} else {
		join = remoteJoin(c.id, remote) // a turn running in another process
	}
	s := newStream(e, ctx, sub)
	c.streams[s] = struct{}{}
	c.lastActive = timeNow()
	c.writeMu.Unlock()
	c.mu.Unlock()

	var stale *staleOnline
	if c.shared {
		stale = &staleOnline{turn: joinTurn}
	}
	s.bound = bound
	s.page = c.replayPage
	s.replayed = func(sh *agentik.Shared[agentik.Event]) (bool, error) {
		stale.replayed(sh)
		if len(join) == 0 {
			return true, nil
		}
		ev, err := sh.Value()
		if err != nil {
			return false, err
		}
		join = joinAfterReplay(join, ev)
		return true, nil
	}
	s.joined = func() []*agentik.Shared[agentik.Event] { return shareAll(join, eventFrame) }
	s.live = func(sh *agentik.Shared[agentik.Event]) bool {
		if sh.Cursor == 0 {
			return !stale.drops(sh)
		}
		return sh.Cursor > bound
	}
	s.mend = new(mender).pass
	s.onFinish = func() {
		c.mu.Lock()
		delete(c.streams, s)
		c.lastActive = timeNow()
		c.mu.Unlock()
	}
	if !e.addStream() {
		c.mu.Lock()
		delete(c.streams, s)
		c.mu.Unlock()
		sub.Close()
		s.cancel()
		return nil, agentik.Errorf(agentik.EUnavailable, "the agent is shutting down")
	}
	s.reported = e.subscriber(ctx)
	s.start(after)
	return s, nil
}

// replayPage reads the durable events after the cursor, as stored where
// the store can pass them through.
func (c *conv) replayPage(ctx context.Context, after int64) ([]*agentik.Shared[agentik.Event], error) {
	var evs []*agentik.Shared[agentik.Event]
	var err error
	evs, err = c.store.EventsJSON(ctx, c.id, after, replayPage)
	if err != nil {
		return nil, c.readErr(err)
	}
	return evs, nil
}

// Events streams agent events of the caller's conversations after the cursor.
func (e *Engine) Events(ctx context.Context, after int64) (agentik.Stream[agentik.AgentEvent], error) {
	owner := agentik.PrincipalFrom(ctx)
	e.agentMu.Lock()
	sub := e.opts.Bus.SubscribeAgent()
	bound := e.lastAgentSeen
	e.agentMu.Unlock()
	bound, err := e.agentReplayBound(ctx, bound)
	if err != nil {
		sub.Close()
		return nil, err
	}
	s := newStream(e, ctx, sub)
	s.bound = bound
	s.page = func(ctx context.Context, after int64) ([]*agentik.Shared[agentik.AgentEvent], error) {
		evs, err := e.opts.Store.AgentEvents(ctx, after, replayPage)
		if err != nil {
			return nil, err
		}
		return shareAll(evs, agentFrame), nil
	}
	mine := func(sh *agentik.Shared[agentik.AgentEvent]) bool {
		ev, _ := sh.Value() // agent events always have their value
		return ev.Owner == owner
	}
	s.replayed = func(sh *agentik.Shared[agentik.AgentEvent]) (bool, error) { return mine(sh), nil }
	s.live = func(sh *agentik.Shared[agentik.AgentEvent]) bool { return sh.Cursor > bound && mine(sh) }
	if !e.addStream() {
		sub.Close()
		s.cancel()
		return nil, agentik.Errorf(agentik.EUnavailable, "the agent is shutting down")
	}
	s.reported = e.subscriber(ctx)
	s.start(after)
	return s, nil
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

// staleOnline drops the online events a subscriber sharing the store gets
// live although they came before its replay. The replay reads the store up
// to its bound, which can be ahead of what this process has heard from the
// others (the Bus reads a conversation's cursor for its first subscriber,
// a poll or a catch-up reads ahead): the notification that carries another
// process's working and deltas can still be on its way when the answer
// that closed that turn is already in the store, and replayed. So an
// online event of a turn whose answer the replay held is dropped when its
// sender published it before committing that answer (Event.SentBefore).
// A regenerate's run of the same turn comes after its head move, a commit
// after the answer, and passes. The turn of an event without ReplyTo (a
// delta) is the one the last event with ReplyTo named, or the turn the
// stream joined.
type staleOnline struct {
	answered []answeredTurn // the last turns the replay's answers closed
	turn     string         // the turn the online events heard belong to
}

type answeredTurn struct {
	replyTo string
	cursor  int64 // of the answer
}

// maxStaleTurns bounds the turns remembered as answered by the replay:
// only the last few can still have online events on their way.
const maxStaleTurns = 4

// replayed notes a replayed answer that closes its turn.
func (s *staleOnline) replayed(sh *agentik.Shared[agentik.Event]) {
	if s == nil || (sh.Type != agentik.EvAssistantMessage && sh.Type != agentik.EvError) {
		return
	}
	ev, err := sh.Value()
	if err != nil || ev.Message == nil || !ev.Message.ClosesTurn() {
		return
	}
	if len(s.answered) == maxStaleTurns {
		s.answered = append(s.answered[:0], s.answered[1:]...)
	}
	s.answered = append(s.answered, answeredTurn{ev.Message.ReplyTo, sh.Cursor})
}

// drops reports whether a live online event is a late one of a turn the
// replay answered. Only the events of a turn count (not, say,
// conversation_closing).
func (s *staleOnline) drops(sh *agentik.Shared[agentik.Event]) bool {
	if s == nil || len(s.answered) == 0 {
		return false
	}
	switch sh.Type {
	case agentik.EvWorking, agentik.EvStartReasoning, agentik.EvStartResponse, agentik.EvAppendText,
		agentik.EvAppendImage, agentik.EvEnd, agentik.EvAwaitingApproval, agentik.EvDeltasLost:
	default:
		return false
	}
	ev, err := sh.Value()
	if err != nil {
		return false
	}
	if ev.ReplyTo != "" {
		s.turn = ev.ReplyTo
	}
	if ev.SentBefore == 0 {
		return false // this process's own, or not known
	}
	for _, a := range s.answered {
		if a.replyTo == s.turn && ev.SentBefore <= a.cursor {
			return true
		}
	}
	return false
}
