package stacktest

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
)

// LossyBuffer is how many events a subscriber of a Lossy stack's bus holds.
const LossyBuffer = 4

// LossyHeld is how many deltas of a response are published while the
// readers of a Lossy stack's bus are held.
const LossyHeld = 12

// lossyRelease bounds how long a stored answer waits for a held subscriber
// to take what it holds: a guard against a reader that never reads, which
// would otherwise hang the turn (the test then fails on the lost text).
const lossyRelease = 30 * time.Second

// Lossy makes the stack's bus lose deltas on purpose, exactly as it does
// for a subscriber too slow to take them, so that a test can show a front
// door still delivers the whole answer: each subscriber holds LossyBuffer
// events, and from the first append_text of a response until the next
// LossyHeld more deltas (or the next durable event) its readers are held
// (Next gives them nothing), so the deltas beyond the buffer are dropped
// and the subscriber marks the loss (EvDeltasLost). The next event is
// published once every subscriber's reader took what it held: the deltas
// after it arrive, after a gap. Every durable event waits the same way, so
// that no subscriber is cut off. A response therefore needs more than
// LossyBuffer deltas to lose some, and more than LossyHeld to have a gap in
// the middle.
func Lossy() Option {
	return func(c *config) { c.lossy = true }
}

// lossyBus is the bus of a Lossy stack: the real bus, with its subscribers
// held while a response streams.
type lossyBus struct {
	*bus.Bus

	mu     sync.Mutex
	held   bool
	deltas int  // published while held
	done   bool // the response's readers were held and let go
	subs   map[*heldSub]struct{}
}

func newLossyBus(b *bus.Bus) *lossyBus {
	return &lossyBus{Bus: b, subs: map[*heldSub]struct{}{}}
}

func (b *lossyBus) Publish(ev agentik.Event) {
	b.mu.Lock()
	switch {
	case ev.Type == agentik.EvAppendText && !b.held && !b.done:
		b.held, b.deltas = true, 0
		for s := range b.subs {
			s.hold(true)
		}
	case ev.Cursor != 0:
		b.done = false // the next response loses deltas too
	}
	if b.held {
		if ev.Type == agentik.EvAppendText {
			b.deltas++
		}
		if ev.Cursor != 0 || b.deltas > LossyHeld {
			b.held, b.done = false, ev.Cursor == 0
			subs := make([]*heldSub, 0, len(b.subs))
			for s := range b.subs {
				subs = append(subs, s)
			}
			b.mu.Unlock()
			deadline := time.Now().Add(lossyRelease)
			for _, s := range subs {
				s.hold(false)
				s.waitTaken(deadline)
			}
			b.mu.Lock()
		}
	}
	var wait []*heldSub
	if ev.Cursor != 0 {
		// A durable event never finds a full buffer here: the stack loses
		// deltas, it does not cut subscribers off (a busy machine would
		// otherwise do it now and then, and a test would see a resumption
		// instead of what it is about).
		for s := range b.subs {
			if s.conv == ev.ConversationID {
				wait = append(wait, s)
			}
		}
	}
	b.mu.Unlock()
	deadline := time.Now().Add(lossyRelease)
	for _, s := range wait {
		s.waitTaken(deadline)
	}
	b.Bus.Publish(ev)
}

func (b *lossyBus) Subscribe(conversationID string) agentik.Subscriber[agentik.Event] {
	s := &heldSub{Subscriber: b.Bus.Subscribe(conversationID), conv: conversationID, ready: make(chan struct{}, 1),
		taken: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	s.held = b.held
	b.mu.Unlock()
	s.forget = func() {
		b.mu.Lock()
		delete(b.subs, s)
		b.mu.Unlock()
	}
	go s.forward()
	return s
}

// heldSub is a subscriber whose reader can be held.
type heldSub struct {
	agentik.Subscriber[agentik.Event]
	conv   string
	ready  chan struct{}
	taken  chan struct{} // Next found nothing more while not held
	done   chan struct{}
	once   sync.Once
	forget func()

	mu   sync.Mutex
	held bool
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *heldSub) hold(h bool) {
	s.mu.Lock()
	s.held = h
	s.mu.Unlock()
	if !h {
		signal(s.ready)
	}
}

func (s *heldSub) isHeld() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// forward passes the bus's wake-ups on to the reader (the test's own
// goroutine: the real subscriber runs none).
func (s *heldSub) forward() {
	for {
		select {
		case <-s.Subscriber.Ready():
			signal(s.ready)
		case <-s.done:
			return
		}
	}
}

func (s *heldSub) Next() (*agentik.Shared[agentik.Event], bool) {
	if s.isHeld() {
		return nil, false
	}
	sh, closed := s.Subscriber.Next()
	if sh == nil {
		signal(s.taken)
	}
	return sh, closed
}

func (s *heldSub) Ready() <-chan struct{} { return s.ready }

// waitTaken waits until the reader took everything the subscriber holds
// (or it was closed, or the deadline passed).
func (s *heldSub) waitTaken(deadline time.Time) {
	p, ok := s.Subscriber.(interface{ Pending() bool })
	if !ok {
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for p.Pending() {
		select {
		case <-s.taken:
		case <-s.done:
			return
		case <-t.C:
			return
		}
	}
}

func (s *heldSub) Close() {
	s.once.Do(func() {
		close(s.done)
		s.forget()
	})
	s.Subscriber.Close()
}

// LossyAnswer is a streamed answer of n deltas ("w1 ", "w2 ", …, the last
// without its space) for a Lossy stack to lose some of (n > LossyBuffer),
// and its whole text: a text with a gap or a repeated piece is never it.
func LossyAnswer(n int) (reply llmtest.Reply, text string) {
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = "w" + strconv.Itoa(i+1) + " "
	}
	pieces[n-1] = strings.TrimSuffix(pieces[n-1], " ")
	return llmtest.Stream().Role().Content(pieces...).Finish("stop").Done(), strings.Join(pieces, "")
}

// LoseDeltas is Lossy as an adjustment of the engine's options, for the
// harnesses that take those: the engine publishes to a lossy bus of its
// own (Stack.Bus is then not the engine's).
func LoseDeltas(o *engine.Options) {
	o.Bus = newLossyBus(bus.NewBuffered(LossyBuffer))
}
