package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// sseBatch bounds how many waiting events one write carries.
const sseBatch = 64

// bufPool holds the write buffers of streams: a stream takes one when
// events are ready and gives it back before it waits, so an idle
// subscriber holds no buffer at all.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled is the largest buffer given back to bufPool.
const maxPooled = 64 << 10

// serveSSE writes stream as a text/event-stream until the stream ends, the
// client goes away or a write fails, then calls release. The caller has
// already subscribed, with d's context: the 200 is written here, after the
// subscription exists, so nothing committed after the client sees the 200
// can be missed.
//
// An HTTP/1.x GET without a body is handed off (handOff): once its
// headers are out (with Connection: close: the connection serves no other
// request), it is taken from net/http and served by a goroutine of the
// stream's own, and the handler returns. net/http then lets go of what it
// holds per request (its read and write buffers, the request), about half
// of what an idle subscriber cost (docs/reliability.md). Other streams
// (HTTP/2, a HEAD, a GET with a body) are served on the request's
// goroutine as before. Either way each event's JSON is shared
// with the other subscribers (or passed through as stored, on replay). A
// client that stops reading blocks a write for at most writeTimeout;
// meanwhile the core cuts the subscription off instead of waiting for it,
// so a slow client costs neither the turn nor other subscribers anything.
func serveSSE[T any](s *server, w http.ResponseWriter, r *http.Request, d *detach, stream agentik.Stream[T], release func(), meta func(T) (cursor int64, typ string)) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	if handOffable(r) {
		// Said before the headers go: a pool must not reuse the
		// connection once the stream is over.
		h.Set("Connection", "close")
	}
	w.WriteHeader(http.StatusOK)
	if err := s.writeFlush(w, rc, nil); err != nil {
		d.finish(stream, release)
		return
	}
	if c, ok := s.handOff(r, rc, d); ok {
		s.handedOff.add()
		go func() {
			defer s.handedOff.done()
			defer d.finish(stream, release)
			defer c.close()
			loopSSE(s, c, d, stream, meta)
		}()
		return
	}
	defer d.finish(stream, release)
	loopSSE(s, &responseSink{s: s, w: w, rc: rc}, d, stream, meta)
}

// loopSSE writes stream's events to sink until the stream ends, d's
// context ends or a write fails.
func loopSSE[T any](s *server, sink sseSink, d *detach, stream agentik.Stream[T], meta func(T) (int64, string)) {
	var next func() (*agentik.Shared[T], bool)
	var ready, done <-chan struct{}
	var in <-chan T // a stream that cannot be pulled: wait on its channel
	var cp *chanPull[T]
	if pull, ok := stream.(agentik.PullStream[T]); ok {
		next, ready, done = pull.Next, pull.Ready(), pull.Done()
	} else {
		cp = &chanPull[T]{c: stream.C(), meta: meta}
		next, in = cp.next, stream.C()
	}
	keepAlive := time.NewTicker(s.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		// Events already waiting go out in one write and one flush (a
		// replay, a burst of deltas); never more than sseBatch, so a long
		// replay still reaches the client steadily.
		wrote, ended, err := writeBatch(sink, next)
		if err != nil {
			if !errors.Is(err, errWrite) {
				s.log.ErrorContext(d.ctx, "encode event", "err", err)
			}
			return
		}
		if wrote {
			keepAlive.Reset(s.opts.KeepAlive) // keep-alives only fill silences
			if !ended {
				continue // more may wait
			}
		}
		if ended {
			// ErrSlowSubscriber and shutdown both end the response: the
			// client resumes from its last cursor.
			if err := stream.Err(); err != nil && !errors.Is(err, agentik.ErrSlowSubscriber) {
				s.log.DebugContext(d.ctx, "event stream ended", "path", d.path, "err", err)
			}
			return
		}
		select {
		case <-d.ctx.Done():
			return
		case <-keepAlive.C:
			if err := sink.write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
		case <-ready:
		case <-done:
		case v, ok := <-in:
			cp.stash(v, ok)
		}
	}
}

// errWrite marks a failed write to the client (nothing to log).
var errWrite = errors.New("write failed")

// writeBatch writes the events next has ready, up to sseBatch, to sink in
// one write, with a buffer from bufPool.
func writeBatch[T any](sink sseSink, next func() (*agentik.Shared[T], bool)) (wrote, ended bool, err error) {
	var buf *bytes.Buffer
	defer func() {
		if buf != nil && buf.Cap() <= maxPooled {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	for n := 0; n < sseBatch; n++ {
		var ev *agentik.Shared[T]
		if ev, ended = next(); ev == nil {
			break
		}
		data, err := ev.JSON()
		if err != nil {
			return false, false, fmt.Errorf("encode event %s: %w", ev.Type, err)
		}
		if buf == nil {
			buf = bufPool.Get().(*bytes.Buffer)
		}
		appendEvent(buf, ev.Cursor, ev.Type, data)
	}
	if buf == nil {
		return false, ended, nil
	}
	if err := sink.write(buf.Bytes()); err != nil {
		return false, false, errWrite
	}
	return true, ended, nil
}

// chanPull reads a Stream that cannot be pulled (of another Agent
// implementation) through its channel: what the wait received first, then
// what else is waiting.
type chanPull[T any] struct {
	c      <-chan T
	meta   func(T) (int64, string)
	held   *agentik.Shared[T]
	closed bool
}

func (p *chanPull[T]) stash(v T, ok bool) {
	if !ok {
		p.closed = true
		return
	}
	p.held = p.share(v)
}

func (p *chanPull[T]) share(v T) *agentik.Shared[T] {
	c, t := p.meta(v)
	return agentik.NewShared(c, t, v)
}

func (p *chanPull[T]) next() (*agentik.Shared[T], bool) {
	if ev := p.held; ev != nil {
		p.held = nil
		return ev, false
	}
	if p.closed {
		return nil, true
	}
	select {
	case v, ok := <-p.c:
		if !ok {
			p.closed = true
			return nil, true
		}
		return p.share(v), false
	default:
		return nil, false
	}
}

// appendEvent writes one SSE event. data is single-line JSON; durable events
// (cursor > 0) carry their cursor as the SSE id, online events carry none, so
// a client's Last-Event-ID is always the last durable event it received.
func appendEvent(buf *bytes.Buffer, cursor int64, typ string, data []byte) {
	if cursor > 0 {
		buf.WriteString("id: ")
		buf.WriteString(strconv.FormatInt(cursor, 10))
		buf.WriteByte('\n')
	}
	if typ != "" && !strings.ContainsAny(typ, "\r\n") {
		buf.WriteString("event: ")
		buf.WriteString(typ)
		buf.WriteByte('\n')
	}
	buf.WriteString("data: ")
	buf.Write(data)
	buf.WriteString("\n\n")
}

// writeFlush writes b and flushes it to the client within writeTimeout.
func (s *server) writeFlush(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	if err := rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return rc.Flush()
}
