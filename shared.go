package agentik

import (
	"context"
	"encoding/json"
	"sync"
)

// Shared is one event as every reader of it shares it: a Bus publishes an
// event once as a Shared and hands the same one to each subscriber, so its
// JSON is encoded once however many subscribers write it out; a replay
// from the store may carry the event's JSON as stored and decode it only
// if a reader asks for the value. Cursor and Type are the event's, for
// framing it without decoding it. A Shared is immutable once made and safe
// for concurrent use; use it by pointer.
type Shared[T any] struct {
	Cursor int64
	Type   string

	vOnce sync.Once
	v     T
	vErr  error

	jOnce sync.Once
	j     []byte
	jErr  error
}

// NewShared returns v to share. Its JSON is json.Marshal(v), made on the
// first call to JSON.
func NewShared[T any](cursor int64, typ string, v T) *Shared[T] {
	s := &Shared[T]{Cursor: cursor, Type: typ, v: v}
	s.vOnce.Do(func() {})
	return s
}

// SharedJSON returns an event to share that is known by its JSON, exactly as
// json.Marshal of its value would write it (a stored event's wire form).
// Value decodes it on its first call.
func SharedJSON[T any](cursor int64, typ string, data []byte) *Shared[T] {
	s := &Shared[T]{Cursor: cursor, Type: typ, j: data}
	s.jOnce.Do(func() {})
	return s
}

// Value returns the event (decoding its JSON once, if it was made from it).
func (s *Shared[T]) Value() (T, error) {
	s.vOnce.Do(func() {
		var v T
		if err := json.Unmarshal(s.j, &v); err != nil {
			s.vErr = WrapError(EInternal, "decode event", err)
			return
		}
		s.v, s.vErr = v, nil
	})
	return s.v, s.vErr
}

// JSON returns the event's JSON (encoding it once, if it was made from its
// value). The bytes are shared: callers must not modify them.
func (s *Shared[T]) JSON() ([]byte, error) {
	s.jOnce.Do(func() {
		if ev, ok := any(&s.v).(*Event); ok {
			if b, ok := ev.appendJSON(make([]byte, 0, ev.sizeHint())); ok {
				s.j = b
				return
			}
		}
		b, err := json.Marshal(s.v)
		if err != nil {
			s.jErr = WrapError(EInternal, "encode event", err)
			return
		}
		s.j = b
	})
	return s.j, s.jErr
}

// PullStream is a Stream that its reader may drain from its own goroutine,
// with Ready, Done and Next, instead of receiving from C: no goroutine of
// the stream's own then runs for it, and the reader gets each event as a
// Shared (with its JSON encoded once for every reader, or as stored). A
// reader uses either C or Next, never both; Next is for one goroutine at a
// time. The delivery guarantees are those of C: durable events exactly
// once, in cursor order; a reader that falls behind is cut off
// (ErrSlowSubscriber) and resumes from its last cursor.
type PullStream[T any] interface {
	Stream[T]
	// Next returns the next event without waiting for one to be published
	// (it may read the store to replay, under the stream's context). It
	// returns nil when none is ready now; ended then tells whether the
	// stream is over (Err says why).
	Next() (ev *Shared[T], ended bool)
	// Ready receives, coalesced, after an event became ready or the reader
	// was cut off; Done is closed once the stream is ending (the engine
	// stops, the conversation is gone, Close or the context). Either way,
	// call Next until it returns nil.
	Ready() <-chan struct{}
	Done() <-chan struct{}
}

// EventJSONReader is the part of Store that reads durable events as their
// wire JSON (json.Marshal of each Event, cursor included) without decoding
// them: a replay passes them through as stored. Same contract as
// Store.Events.
type EventJSONReader interface {
	EventsJSON(ctx context.Context, conversationID string, after int64, limit int) ([]*Shared[Event], error)
}
