package irc

import (
	"context"
	"sync"
	"time"
)

// sendq is one client's bounded queue of serialized lines, drained by its
// writer goroutine. Lines that other clients' actions cause (push) never
// wait: a client whose queue would pass the limit is cut off. Lines of the
// client's own conversations are queued up to a mark below the limit: a
// live line only if it fits now (tryPush), the others, like replies to the
// client's own commands, waiting for room up to a timeout (pushWait). Only
// that client's follower or command waits, so a client that reads gets a
// burst of any size while one that does not is cut off once the wait ends.
// Safe for concurrent use.
type sendq struct {
	mu     sync.Mutex
	lines  [][]byte
	size   int
	max    int
	closed bool
	last   []byte // written after everything else, then the connection ends
	ready  chan struct{}
	room   chan struct{}
}

func newSendq(max int) *sendq {
	return &sendq{max: max, ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push queues b; false when the queue is closed or b would pass the limit.
func (q *sendq) push(b []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.size+len(b) > q.max {
		return false
	}
	q.lines = append(q.lines, b)
	q.size += len(b)
	signal(q.ready)
	return true
}

// tryPush queues b if the queue then holds at most fill bytes (fill ≤ the
// limit), or it is empty; false otherwise, or when it is closed.
func (q *sendq) tryPush(b []byte, fill int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || (q.size+len(b) > min(fill, q.max) && q.size > 0) {
		return false
	}
	q.lines = append(q.lines, b)
	q.size += len(b)
	signal(q.ready)
	return true
}

// pushWait queues b once the queue holds at most fill bytes with it
// (fill ≤ the limit: what a waiting line leaves free is for the lines that
// cannot wait), waiting up to timeout for that. A line longer than fill is
// queued once the queue is empty. False when the wait ends first, ctx ends
// or the queue is closed.
func (q *sendq) pushWait(ctx context.Context, b []byte, fill int, timeout time.Duration) bool {
	var deadline <-chan time.Time
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			signal(q.room) // another waiter ends too
			return false
		}
		if q.size+len(b) <= min(fill, q.max) || q.size == 0 {
			q.lines = append(q.lines, b)
			q.size += len(b)
			more := q.size < fill
			signal(q.ready)
			q.mu.Unlock()
			if more {
				signal(q.room) // another waiter's line may fit as well
			}
			return true
		}
		q.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-q.room:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// take waits for lines and returns them all; final is true once the queue
// is closed and drained: the lines returned then end with the last line.
func (q *sendq) take(stop <-chan struct{}) (lines [][]byte, final bool) {
	for {
		q.mu.Lock()
		if len(q.lines) > 0 || q.closed {
			lines, q.lines = q.lines, nil
			q.size = 0
			final = q.closed
			if final && q.last != nil {
				lines = append(lines, q.last)
				q.last = nil
			}
			q.mu.Unlock()
			signal(q.room)
			return lines, final
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-stop:
			return nil, true
		}
	}
}

// close ends the queue: last (if any) is written after what is queued,
// unless discard, which drops what is queued (a client cut off for not
// reading gets only the last line). Idempotent: the first call wins.
func (q *sendq) close(last []byte, discard bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.closed = true
	q.last = last
	if discard {
		q.lines, q.size = nil, 0
	}
	signal(q.ready)
	signal(q.room)
	return true
}
