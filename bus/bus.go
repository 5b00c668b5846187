// Package bus is the in-process agentik.Bus: it fans events out to the live
// subscribers of one process.
//
// Delivery rules: Publish never blocks. Each subscriber has a bounded buffer;
// an online event that does not fit is dropped for that subscriber, a durable
// event that does not fit cuts the subscriber off (its channel is closed) so
// it can resume from its last cursor through the store. A slow subscriber
// therefore never stalls a turn or other subscribers, and never silently
// misses a durable event.
package bus

import (
	"sync"

	"github.com/agentik/agentik"
)

// DefaultBuffer is the per-subscriber buffer, in events.
const DefaultBuffer = 1024

// Bus is an in-process event fan-out. The zero value is not usable; call New.
type Bus struct {
	buffer int

	mu     sync.RWMutex
	convs  map[string]map[*sub[agentik.Event]]struct{}
	agents map[*sub[agentik.AgentEvent]]struct{}
}

var _ agentik.Bus = (*Bus)(nil)

// New returns a Bus with DefaultBuffer per subscriber.
func New() *Bus { return NewBuffered(DefaultBuffer) }

// NewBuffered returns a Bus whose subscribers buffer n events.
func NewBuffered(n int) *Bus {
	if n < 1 {
		n = 1
	}
	return &Bus{
		buffer: n,
		convs:  make(map[string]map[*sub[agentik.Event]]struct{}),
		agents: make(map[*sub[agentik.AgentEvent]]struct{}),
	}
}

// Publish delivers ev to the subscribers of its conversation.
func (b *Bus) Publish(ev agentik.Event) {
	durable := ev.Cursor != 0
	b.mu.RLock()
	var slow []*sub[agentik.Event]
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
func (b *Bus) PublishAgent(ev agentik.AgentEvent) {
	b.mu.RLock()
	var slow []*sub[agentik.AgentEvent]
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
func (b *Bus) Subscribe(conversationID string) agentik.Subscriber[agentik.Event] {
	s := &sub[agentik.Event]{ch: make(chan agentik.Event, b.buffer)}
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
		set = make(map[*sub[agentik.Event]]struct{})
		b.convs[conversationID] = set
	}
	set[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// SubscribeAgent registers a subscriber of agent events.
func (b *Bus) SubscribeAgent() agentik.Subscriber[agentik.AgentEvent] {
	s := &sub[agentik.AgentEvent]{ch: make(chan agentik.AgentEvent, b.buffer)}
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

type sub[T any] struct {
	ch     chan T
	remove func()

	mu     sync.Mutex // guards closed and sends against close
	closed bool
	once   sync.Once
}

// offer sends v without blocking; false when the buffer is full.
func (s *sub[T]) offer(v T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return true
	}
	select {
	case s.ch <- v:
		return true
	default:
		return false
	}
}

func (s *sub[T]) C() <-chan T { return s.ch }

func (s *sub[T]) Close() {
	s.once.Do(func() {
		s.remove()
		s.mu.Lock()
		s.closed = true
		close(s.ch)
		s.mu.Unlock()
	})
}
