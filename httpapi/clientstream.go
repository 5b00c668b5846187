package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/sse"
)

// eventStream is the client side of an SSE subscription: an agentik.Stream
// fed by one goroutine that reads, decodes and reconnects. The goroutine is
// owned by the stream: Close (or the end of the caller's context) stops it
// and waits for it.
type eventStream[T any] struct {
	client   *Client
	path     string
	cursorOf func(T) int64

	ctx    context.Context
	cancel context.CancelFunc
	c      chan T
	done   chan struct{}

	cursor  int64         // last durable cursor delivered, else the start cursor (LiveOnly: none)
	backoff time.Duration // delay before the next reconnect attempt

	mu  sync.Mutex
	err error
}

// subscribe opens the first connection before returning, so that errors such
// as not_found come back from Events and — the server subscribing before its
// 200 — nothing committed after Events returns is missed.
func subscribe[T any](ctx context.Context, c *Client, path string, after int64, cursorOf func(T) int64) (agentik.Stream[T], error) {
	if after < agentik.LiveOnly {
		return nil, agentik.Errorf(agentik.EInvalid, "after must be a cursor or LiveOnly")
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &eventStream[T]{
		client:   c,
		path:     path,
		cursorOf: cursorOf,
		ctx:      ctx,
		cancel:   cancel,
		c:        make(chan T),
		done:     make(chan struct{}),
		cursor:   after,
		backoff:  c.minDelay,
	}
	body, err := s.connect(true)
	if err != nil {
		cancel()
		return nil, err
	}
	go s.run(body)
	return s, nil
}

func (s *eventStream[T]) C() <-chan T { return s.c }

func (s *eventStream[T]) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the stream and waits for its goroutine. Idempotent.
func (s *eventStream[T]) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// connect opens the event stream from s.cursor: with ?after= the first time
// (the documented API form), with Last-Event-ID on reconnects (what a browser
// does; the server lets the header win).
func (s *eventStream[T]) connect(first bool) (io.ReadCloser, error) {
	q := url.Values{}
	if first && s.cursor >= 0 {
		q.Set("after", strconv.FormatInt(s.cursor, 10))
	}
	req, err := s.client.newRequest(s.ctx, http.MethodGet, s.path, q, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if !first && s.cursor >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(s.cursor, 10))
	}
	resp, err := s.client.hc.Do(req)
	if err != nil {
		return nil, agentik.WrapError(agentik.EUnavailable, "cannot reach the agent", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, responseError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, agentik.Errorf(agentik.EUnavailable, "the agent answered %q, not an event stream", mt)
	}
	return resp.Body, nil
}

// run delivers events until the stream is closed or cannot be resumed.
func (s *eventStream[T]) run(body io.ReadCloser) {
	defer close(s.done)
	defer close(s.c)
	for {
		start := time.Now()
		delivered, err := s.read(body)
		body.Close()
		if s.ctx.Err() != nil {
			return // closed, or the caller's context ended: Err stays nil
		}
		if code := agentik.ErrorCode(err); code == agentik.EMalformed || code == agentik.ETooLarge {
			s.fail(err) // the same bytes would come again: reconnecting will not help
			return
		}
		// A connection that delivered events or lived long was healthy: start
		// the backoff afresh. One that died at once keeps it growing, so a
		// server that accepts and drops is not hammered.
		if delivered || time.Since(start) >= s.client.maxDelay {
			s.backoff = s.client.minDelay
		}
		body, err = s.reconnect()
		if err != nil {
			if s.ctx.Err() == nil {
				s.fail(err)
			}
			return
		}
	}
}

func (s *eventStream[T]) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// read delivers the events of one connection; it returns when the connection
// ends. Durable events at or below the last delivered cursor are dropped:
// they were delivered before a reconnect.
func (s *eventStream[T]) read(body io.Reader) (delivered bool, err error) {
	p := sse.NewReader(body, 4096, s.client.maxEvent)
	for {
		ev, err := p.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				return delivered, nil
			case errors.Is(err, bufio.ErrTooLong):
				return delivered, agentik.WrapError(agentik.ETooLarge, "the agent sent an event larger than the client accepts", err)
			}
			return delivered, err
		}
		var v T
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			return delivered, agentik.WrapError(agentik.EMalformed, "the agent sent an event that is not JSON", err)
		}
		if cur := s.cursorOf(v); cur > 0 {
			if cur <= s.cursor {
				continue
			}
			s.cursor = cur
		}
		select {
		case s.c <- v:
			delivered = true
		case <-s.ctx.Done():
			return delivered, s.ctx.Err()
		}
	}
}

// reconnect retries with a doubling delay until a connection opens, an
// answer says retrying is useless, or the attempts are spent.
func (s *eventStream[T]) reconnect() (io.ReadCloser, error) {
	var err error
	for range s.client.attempts {
		t := time.NewTimer(s.backoff)
		s.backoff = min(s.backoff*2, s.client.maxDelay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return nil, s.ctx.Err()
		case <-t.C:
		}
		var body io.ReadCloser
		body, err = s.connect(false)
		if err == nil {
			return body, nil
		}
		if !retryable(err) {
			return nil, err
		}
	}
	return nil, err
}

// retryable reports whether a failed connect may succeed later.
func retryable(err error) bool {
	switch agentik.ErrorCode(err) {
	case agentik.EUnavailable, agentik.ERateLimited, agentik.EInternal:
		return true
	}
	return false
}
