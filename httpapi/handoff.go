package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// detach is the context an event stream is subscribed with. While the
// request's handler serves the stream it ends with the request; once the
// stream is handed off (handOff) it outlives the request and ends when the
// client hangs up, a write fails, the request's credential is revoked or
// the stream ends.
type detach struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	unhook  func() bool // stops the request's context from ending ctx
	unwatch func() bool
	path    string // for the log
}

// newDetach makes the context to subscribe r's stream with: r's values
// (the principal, the facade, the trace), ended with r until handed off.
func newDetach(r *http.Request) *detach {
	parent := r.Context()
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	unhook := context.AfterFunc(parent, func() { cancel(context.Cause(parent)) })
	return &detach{ctx: ctx, cancel: cancel, unhook: unhook, path: r.URL.Path}
}

// finish ends what the stream held: the credential's watch, the context,
// the stream, and what the caller gave to release.
func (d *detach) finish(closer interface{ Close() error }, release func()) {
	if d.unwatch != nil {
		d.unwatch()
	}
	d.unhook()
	d.cancel(nil)
	if closer != nil {
		closer.Close()
	}
	if release != nil {
		release()
	}
}

// errHangUp ends a handed-off stream whose client closed the connection
// (or sent anything after its request, which no stream reads).
var errHangUp = errors.New("the client hung up")

// sseSink is where an event stream's bytes go: the response, or a
// connection handed off.
type sseSink interface {
	// write writes b and flushes it to the client within the write timeout.
	write(b []byte) error
}

// responseSink writes through net/http's response.
type responseSink struct {
	s  *server
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (r *responseSink) write(b []byte) error { return r.s.writeFlush(r.w, r.rc, b) }

// connSink writes a handed-off stream to its connection, in HTTP/1.1's
// chunked encoding where net/http's headers announced it.
type connSink struct {
	c       net.Conn
	chunked bool
	timeout time.Duration
	failed  bool // a write failed: the response cannot be ended well
}

var crlf = []byte("\r\n")

func (c *connSink) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	err := c.c.SetWriteDeadline(time.Now().Add(c.timeout))
	switch {
	case err != nil:
	case !c.chunked:
		_, err = c.c.Write(b)
	default:
		err = c.writeChunk(b)
	}
	c.failed = c.failed || err != nil
	return err
}

// writeChunk writes b as one chunk: with one writev on TCP, else (TLS)
// assembled first, so that a chunk is one write (one TLS record).
func (c *connSink) writeChunk(b []byte) error {
	var size [20]byte
	head := append(strconv.AppendInt(size[:0], int64(len(b)), 16), crlf...)
	if _, ok := c.c.(*net.TCPConn); ok {
		bufs := net.Buffers{head, b, crlf}
		_, err := bufs.WriteTo(c.c)
		return err
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooled {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	buf.Write(head)
	buf.Write(b)
	buf.Write(crlf)
	_, err := c.c.Write(buf.Bytes())
	return err
}

// close ends the response (the last chunk, unless a write failed) and
// closes the connection: a handed-off connection serves no other request.
func (c *connSink) close() {
	if c.chunked && !c.failed && c.c.SetWriteDeadline(time.Now().Add(c.timeout)) == nil {
		c.c.Write([]byte("0\r\n\r\n"))
	}
	c.c.Close()
}

// handOffable reports whether r's stream can be handed off: an HTTP/1.x
// GET without a body (a body, -1 when chunked, would be read as bytes
// after the request).
func handOffable(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.Method == http.MethodGet && r.ContentLength == 0
}

// handOff takes an HTTP/1.x GET's connection from net/http, once the
// response's headers are out, for a goroutine of the stream's own: the
// handler returns, and net/http lets go of its per-request buffers. d's
// context then no longer ends with the request; it ends when the client
// hangs up (a goroutine waits on the connection, as net/http's own does
// while a handler runs) or the request's credential is revoked. ok is
// false when the stream stays on the request's goroutine: HTTP/2, a HEAD
// (net/http drops its body), a GET with a body, or a connection that
// cannot be taken.
func (s *server) handOff(r *http.Request, rc *http.ResponseController, d *detach) (*connSink, bool) {
	if !handOffable(r) {
		return nil, false
	}
	// Watch the credential before the handler returns: the edge stops its
	// own watch then.
	d.unwatch = edge.WatchCredential(r.Context(), func() { d.cancel(edge.ErrRevoked) })
	conn, rw, err := rc.Hijack()
	if err != nil {
		d.unwatch()
		d.unwatch = nil
		return nil, false
	}
	sink := &connSink{c: conn, chunked: r.ProtoAtLeast(1, 1), timeout: s.opts.WriteTimeout}
	if rw.Reader.Buffered() > 0 {
		// Bytes after the request: a pipelined request this stream would
		// never answer. The response ends at once; the client may ask
		// again on another connection.
		d.cancel(errHangUp)
		return sink, true
	}
	// From here the client's hang-up ends ctx, not the request's end (when
	// the request ended first, ctx has already ended with it).
	d.unhook()
	go func() {
		var b [1]byte
		conn.Read(b[:]) // a hang-up, or bytes nobody reads
		d.cancel(errHangUp)
	}()
	return sink, true
}

// streamCount counts the streams handed off. Unlike a WaitGroup, it may
// grow while it is waited for: a request handed off during the shutdown.
type streamCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n reaches 0; nil while nobody waits
}

func (c *streamCount) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *streamCount) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// wait waits until no stream is counted or ctx ends.
func (c *streamCount) wait(ctx context.Context) {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// wait waits, until ctx ends, for the event streams handed off from their
// requests (serveSSE) to end. Call it once the agent has shut down (its
// streams end then): a process that exits before that may cut their last
// events off.
func (s *server) wait(ctx context.Context) { s.handedOff.wait(ctx) }

// streamRequest subscribes r's event stream with open and serves it; the
// caller's release runs when the stream is done (also when opening it
// failed).
func streamRequest[T any](s *server, w http.ResponseWriter, r *http.Request, open func(ctx context.Context) (agentik.Stream[T], error), release func(), meta func(T) (int64, string)) {
	d := newDetach(r)
	stream, err := open(d.ctx)
	if err != nil {
		d.finish(nil, release)
		s.writeError(w, r, err)
		return
	}
	serveSSE(s, w, r, d, stream, release, meta)
}
