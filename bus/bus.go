// Package bus is the in-process agentik.Bus: it fans events out to the live
// subscribers of one process. A Bus spanning processes (postgres.Bus)
// delivers through one too.
package bus

import (
	"sync"

	"github.com/agentik/agentik"
)

// DefaultBuffer is how many events a subscriber may fall behind by. What a
// subscriber holds grows with what it is behind by: an idle one holds
// nothing (see subscriber).
const DefaultBuffer = 1024

// Bus is the in-process agentik.Bus.
//
// Delivery rules: Publish never blocks. Each subscriber has a bounded buffer;
// an online event that does not fit is dropped for that subscriber, which
// then finds an EvDeltasLost marker in its place (so it knows the text it
// streams has a gap, and recovers it from the stored message); a durable
// event that does not fit cuts the subscriber off (Next reports it closed,
// its channel is closed) so it can resume from its last cursor through the
// store. Each event is published as one Shared that every subscriber holds
// by pointer: its JSON is encoded at most once. A slow subscriber
// therefore never stalls a turn or other subscribers, and never silently
// misses a durable event.
//
// A Bus is safe for concurrent use. The zero value is not usable; call New
// or NewBuffered.
type Bus struct {
	buffer int

	mu     sync.RWMutex
	convs  map[string]map[*subscriber[agentik.Event]]struct{}
	agents map[*subscriber[agentik.AgentEvent]]struct{}
}

var _ agentik.Bus = (*Bus)(nil)

// New returns a Bus with DefaultBuffer per subscriber.
func New() *Bus { return NewBuffered(DefaultBuffer) }

// NewBuffered returns a Bus whose subscribers buffer n events (at least one).
func NewBuffered(n int) *Bus {
	return &Bus{
		buffer: max(n, 1),
		convs:  make(map[string]map[*subscriber[agentik.Event]]struct{}),
		agents: make(map[*subscriber[agentik.AgentEvent]]struct{}),
	}
}

// Publish delivers ev to the subscribers of its conversation.
func (b *Bus) Publish(ev agentik.Event) {
	durable := ev.Cursor != 0
	b.mu.RLock()
	var slow []*subscriber[agentik.Event]
	var sh *agentik.Shared[agentik.Event]
	kind := classOf(ev)
	for s := range b.convs[ev.ConversationID] {
		if sh == nil {
			sh = agentik.NewShared(ev.Cursor, ev.Type, ev)
		}
		if !s.offer(sh, kind) && durable {
			slow = append(slow, s)
		}
	}
	b.mu.RUnlock()
	for _, s := range slow {
		s.Close()
	}
}

// PublishAgent delivers ev to every agent-event subscriber.
func (b *Bus) PublishAgent(ev agentik.AgentEvent) {
	b.mu.RLock()
	var slow []*subscriber[agentik.AgentEvent]
	var sh *agentik.Shared[agentik.AgentEvent]
	for s := range b.agents {
		if sh == nil {
			sh = agentik.NewShared(ev.Cursor, ev.Type, ev)
		}
		if !s.offer(sh, classDurable) {
			slow = append(slow, s)
		}
	}
	b.mu.RUnlock()
	for _, s := range slow {
		s.Close()
	}
}

// Subscribe registers a subscriber of one conversation.
func (b *Bus) Subscribe(conversationID string) agentik.Subscriber[agentik.Event] {
	s := newSubscriber[agentik.Event](b.buffer)
	s.mark = func() *agentik.Shared[agentik.Event] {
		return agentik.NewShared(0, agentik.EvDeltasLost, agentik.Event{
			ConversationID: conversationID, Date: agentik.Now(), Type: agentik.EvDeltasLost})
	}
	s.remove = func() {
		b.mu.Lock()
		set := b.convs[conversationID]
		delete(set, s)
		if len(set) == 0 {
			delete(b.convs, conversationID)
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	set := b.convs[conversationID]
	if set == nil {
		set = make(map[*subscriber[agentik.Event]]struct{})
		b.convs[conversationID] = set
	}
	set[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// SubscribeAgent registers a subscriber of agent events.
func (b *Bus) SubscribeAgent() agentik.Subscriber[agentik.AgentEvent] {
	s := newSubscriber[agentik.AgentEvent](b.buffer)
	s.remove = func() {
		b.mu.Lock()
		delete(b.agents, s)
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.agents[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscribers returns the number of live conversation subscribers (for tests
// and metrics).
func (b *Bus) Subscribers(conversationID string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.convs[conversationID])
}

// Classes of events, for what a full buffer does with them.
const (
	classDurable = iota // cuts the subscriber off: it resumes from its cursor
	classDelta          // dropped, and the subscriber told (EvDeltasLost)
	classControl        // online but not text: fits in controlRoom more
)

// controlRoom is how many online events that are not deltas (working,
// start_response, end…) a full buffer still takes: a reader that lost
// some text still learns where a response starts and that its turn ended,
// which text recovered from the store cannot tell it. It stays bounded:
// every turn also publishes durable events, and one that does not fit
// cuts the subscriber off.
const controlRoom = 16

func classOf(ev agentik.Event) int {
	switch {
	case ev.Cursor != 0:
		return classDurable
	case ev.Type == agentik.EvAppendText || ev.Type == agentik.EvAppendImage:
		return classDelta
	}
	return classControl
}

// keepQueue is the largest queue (in events) a subscriber keeps once its
// reader has caught up; a longer one, grown by a burst, is let go.
const keepQueue = 16

// subscriber is one subscriber: a queue of shared events, grown as needed up
// to max and let go once its reader has caught up, and a notification
// channel. It runs no goroutine unless C is used, so an idle subscriber
// costs a few words (1,000 idle subscribers with a fixed 1,024-event
// buffer each held ~300 MiB once a long answer had passed through them).
type subscriber[T any] struct {
	max    int // events held at most
	remove func()
	mark   func() *agentik.Shared[T] // makes the EvDeltasLost marker
	ready  chan struct{}             // capacity 1: Next may have something

	mu     sync.Mutex           // guards what follows
	queue  []*agentik.Shared[T] // a nil entry marks where events were lost
	head   int                  // queue[head:] is what waits
	lost   bool                 // events were dropped after the last one queued
	closed bool
	once   sync.Once

	cOnce sync.Once
	ch    chan T // C's channel, made by its first call
}

func newSubscriber[T any](max int) *subscriber[T] {
	return &subscriber[T]{max: max, ready: make(chan struct{}, 1)}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// offer queues v (of class kind) without blocking; false when the buffer
// is full. A dropped online event leaves a mark: the next event queued,
// or Next once the queue is empty, is preceded by the marker.
func (s *subscriber[T]) offer(v *agentik.Shared[T], kind int) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return true
	}
	if n := len(s.queue) - s.head; n >= s.max && (kind != classControl || n >= s.max+controlRoom) {
		if kind != classDurable {
			s.lost = true
		}
		s.mu.Unlock()
		return false
	}
	if s.head > 0 && len(s.queue) == cap(s.queue) {
		// Reuse what the reader has taken before growing.
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	if s.lost {
		s.queue, s.lost = append(s.queue, nil), false
	}
	s.queue = append(s.queue, v)
	s.mu.Unlock()
	notify(s.ready)
	return true
}

func (s *subscriber[T]) Next() (*agentik.Shared[T], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.queue) {
		if s.lost && !s.closed {
			s.lost = false
			return s.marker(), false
		}
		return nil, s.closed
	}
	v := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	if s.head == len(s.queue) {
		// Caught up: an empty queue holds no burst's memory.
		if cap(s.queue) > keepQueue {
			s.queue = nil
		} else {
			s.queue = s.queue[:0]
		}
		s.head = 0
	}
	if v == nil {
		v = s.marker()
	}
	return v, false
}

// marker is the EvDeltasLost event, made when a reader takes it (never
// while publishing).
func (s *subscriber[T]) marker() *agentik.Shared[T] {
	if s.mark == nil {
		var zero T
		return agentik.NewShared(0, agentik.EvDeltasLost, zero)
	}
	return s.mark()
}

func (s *subscriber[T]) Ready() <-chan struct{} { return s.ready }

// Pending reports whether events wait to be taken.
func (s *subscriber[T]) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head < len(s.queue) || (s.lost && !s.closed)
}

func (s *subscriber[T]) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// C starts, once, the goroutine that moves the queue into an unbuffered
// channel; it ends (closing the channel) when the subscriber is closed.
func (s *subscriber[T]) C() <-chan T {
	s.cOnce.Do(func() {
		s.ch = make(chan T)
		go s.feedC()
	})
	return s.ch
}

func (s *subscriber[T]) feedC() {
	defer close(s.ch)
	for {
		sh, closed := s.Next()
		if sh == nil {
			if closed {
				return
			}
			<-s.ready
			continue
		}
		v, _ := sh.Value() // a published event always has its value
		for sent := false; !sent; {
			select {
			case s.ch <- v:
				sent = true
			case <-s.ready:
				if s.isClosed() {
					return
				}
			}
		}
	}
}

// Close removes the subscriber; what it had not taken is dropped (the reader
// resumes from its cursor).
func (s *subscriber[T]) Close() {
	s.once.Do(func() {
		s.remove()
		s.mu.Lock()
		s.closed = true
		s.queue, s.head, s.lost = nil, 0, false
		s.mu.Unlock()
		notify(s.ready)
	})
}
