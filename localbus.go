package agentik

import "sync"

// DefaultBusBuffer is how many events a subscriber of a LocalBus may fall
// behind by (see chanBuffer for what an idle one holds).
const DefaultBusBuffer = 1024

// LocalBus is the in-process Bus: it fans events out to the live subscribers
// of one process. A Bus spanning processes delivers through one too.
//
// Delivery rules: Publish never blocks. Each subscriber has a bounded buffer;
// an online event that does not fit is dropped for that subscriber, a durable
// event that does not fit cuts the subscriber off (its channel is closed) so
// it can resume from its last cursor through the store. A slow subscriber
// therefore never stalls a turn or other subscribers, and never silently
// misses a durable event.
//
// The zero value is not usable; call NewLocalBus.
type LocalBus struct {
	buffer int

	mu     sync.RWMutex
	convs  map[string]map[*localSub[Event]]struct{}
	agents map[*localSub[AgentEvent]]struct{}
}

var _ Bus = (*LocalBus)(nil)

// NewLocalBus returns a LocalBus whose subscribers buffer n events
// (DefaultBusBuffer when n < 1).
func NewLocalBus(n int) *LocalBus {
	if n < 1 {
		n = DefaultBusBuffer
	}
	return &LocalBus{
		buffer: n,
		convs:  make(map[string]map[*localSub[Event]]struct{}),
		agents: make(map[*localSub[AgentEvent]]struct{}),
	}
}

// Publish delivers ev to the subscribers of its conversation.
func (b *LocalBus) Publish(ev Event) {
	durable := ev.Cursor != 0
	b.mu.RLock()
	var slow []*localSub[Event]
	for s := range b.convs[ev.ConversationID] {
		if !s.offer(ev) && durable {
			slow = append(slow, s)
		}
	}
	b.mu.RUnlock()
	for _, s := range slow {
		s.Close()
	}
}

// PublishAgent delivers ev to every agent-event subscriber.
func (b *LocalBus) PublishAgent(ev AgentEvent) {
	b.mu.RLock()
	var slow []*localSub[AgentEvent]
	for s := range b.agents {
		if !s.offer(ev) {
			slow = append(slow, s)
		}
	}
	b.mu.RUnlock()
	for _, s := range slow {
		s.Close()
	}
}

// Subscribe registers a subscriber of one conversation.
func (b *LocalBus) Subscribe(conversationID string) Subscriber[Event] {
	s := newLocalSub[Event](b.buffer)
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
		set = make(map[*localSub[Event]]struct{})
		b.convs[conversationID] = set
	}
	set[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// SubscribeAgent registers a subscriber of agent events.
func (b *LocalBus) SubscribeAgent() Subscriber[AgentEvent] {
	s := newLocalSub[AgentEvent](b.buffer)
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
func (b *LocalBus) Subscribers(conversationID string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.convs[conversationID])
}

// chanBuffer is the channel capacity of a subscriber: what an idle one
// holds ready. Events beyond it wait in a queue that grows as needed, up to
// the Bus's buffer, and is let go once its reader has caught up — so an
// idle subscriber costs a few events, not the whole buffer (1,000 idle
// subscribers of 1,024 events each held ~300 MiB once a long answer had
// passed through them).
const chanBuffer = 16

// localSub is one subscriber. Events go straight into ch while it has room and
// nothing is queued; otherwise into queue, which one pump goroutine (alive
// only while the queue is not empty) moves into ch in order.
type localSub[T any] struct {
	ch     chan T
	max    int // events held at most: ch and queue together
	remove func()

	mu      sync.Mutex // guards what follows, and sends against close
	queue   []T
	pumping bool
	closed  bool
	done    chan struct{} // closed by Close: the pump stops
	pump    sync.WaitGroup
	once    sync.Once
}

func newLocalSub[T any](max int) *localSub[T] {
	return &localSub[T]{ch: make(chan T, min(max, chanBuffer)), max: max, done: make(chan struct{})}
}

// offer queues v without blocking; false when the buffer is full.
func (s *localSub[T]) offer(v T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return true
	}
	if len(s.queue) == 0 {
		select {
		case s.ch <- v:
			return true
		default:
		}
	}
	if len(s.queue)+cap(s.ch) >= s.max {
		return false
	}
	s.queue = append(s.queue, v)
	if !s.pumping {
		s.pumping = true
		s.pump.Add(1)
		go s.run()
	}
	return true
}

// run moves the queue into ch, in order, until it is empty or Close.
func (s *localSub[T]) run() {
	defer s.pump.Done()
	var zero T
	for {
		s.mu.Lock()
		if s.closed || len(s.queue) == 0 {
			s.queue, s.pumping = nil, false // an empty queue holds no memory
			s.mu.Unlock()
			return
		}
		v := s.queue[0]
		s.mu.Unlock()
		select {
		case s.ch <- v:
			s.mu.Lock()
			if len(s.queue) > 0 {
				s.queue[0] = zero
				s.queue = s.queue[1:]
			}
			s.mu.Unlock()
		case <-s.done:
			return
		}
	}
}

// Pending reports whether events wait in the queue, not yet in C: a reader
// draining without blocking should wait for them.
func (s *localSub[T]) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) > 0
}

func (s *localSub[T]) C() <-chan T { return s.ch }

// Close removes the subscriber and closes C once the pump has stopped;
// queued events are dropped (the reader resumes from its cursor).
func (s *localSub[T]) Close() {
	s.once.Do(func() {
		s.remove()
		s.mu.Lock()
		s.closed = true
		s.queue = nil
		close(s.done)
		s.mu.Unlock()
		s.pump.Wait()
		close(s.ch)
	})
}
