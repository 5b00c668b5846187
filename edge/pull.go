package edge

import (
	"sync"

	"github.com/agentik/agentik"
)

// Pull returns stream as a PullStream, for a front door to read on its own
// connection's goroutine with Next, waking on Ready and Done, as the native
// SSE handler does: an engine stream is one already, and then no goroutine
// or channel of the engine's runs for the subscriber (C would start one).
// A stream that cannot be pulled (an Agent of another implementation, a
// remote client) is read through its channel by one goroutine, handing
// over one event at a time. frame gives an event's cursor and type.
func Pull[T any](stream agentik.Stream[T], frame func(T) (int64, string)) agentik.PullStream[T] {
	if p, ok := stream.(agentik.PullStream[T]); ok {
		return p
	}
	c := &chanPull[T]{Stream: stream, frame: frame, ready: make(chan struct{}, 1),
		taken: make(chan struct{}, 1), done: make(chan struct{}), quit: make(chan struct{})}
	go c.feed()
	return c
}

// EventFrame frames a conversation event (for Pull).
func EventFrame(ev agentik.Event) (int64, string) { return ev.Cursor, ev.Type }

// AgentEventFrame frames an agent event (for Pull).
func AgentEventFrame(ev agentik.AgentEvent) (int64, string) { return ev.Cursor, ev.Type }

// Take returns the value of the next event the stream has ready: ok false
// when none is (ended then tells whether the stream is over, Err why). An
// event whose value cannot be had (a stored event that does not decode)
// ends the reading with that error.
func Take[T any](p agentik.PullStream[T]) (v T, ok, ended bool, err error) {
	sh, ended := p.Next()
	if sh == nil {
		return v, false, ended, nil
	}
	v, err = sh.Value()
	if err != nil {
		p.Close()
		return v, false, true, err
	}
	return v, true, false, nil
}

// chanPull pulls from a stream's channel.
type chanPull[T any] struct {
	agentik.Stream[T]
	frame func(T) (int64, string)
	ready chan struct{} // an event is held, or the channel closed
	taken chan struct{} // the held event was taken
	done  chan struct{} // closed with the channel
	quit  chan struct{} // closed by Close
	once  sync.Once

	mu     sync.Mutex
	held   *agentik.Shared[T]
	closed bool
}

func (c *chanPull[T]) feed() {
	for v := range c.Stream.C() {
		cur, typ := c.frame(v)
		c.mu.Lock()
		c.held = agentik.NewShared(cur, typ, v)
		c.mu.Unlock()
		signal(c.ready)
		select {
		case <-c.taken:
		case <-c.quit:
			c.Stream.Close()
			for range c.Stream.C() { // until the stream closes its channel
			}
		}
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	close(c.done)
	signal(c.ready)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (c *chanPull[T]) Next() (*agentik.Shared[T], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sh := c.held; sh != nil {
		c.held = nil
		signal(c.taken)
		return sh, false
	}
	return nil, c.closed
}

// Close closes the stream, and lets the goroutine go if it waits for the
// reader.
func (c *chanPull[T]) Close() error {
	c.once.Do(func() { close(c.quit) })
	return c.Stream.Close()
}

func (c *chanPull[T]) Ready() <-chan struct{} { return c.ready }
func (c *chanPull[T]) Done() <-chan struct{}  { return c.done }
