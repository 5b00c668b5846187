package httpapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/sse"
	"github.com/agentik/agentik/llmtest"
)

// subscribers counts the engine's open event streams (the Observer's
// Subscribers), and lets a test wait for a count.
type subscribers struct {
	agentik.NopObserver
	mu      sync.Mutex
	n       int
	changed chan struct{}
}

func newSubscribers() *subscribers { return &subscribers{changed: make(chan struct{}, 1)} }

func (s *subscribers) Subscribers(_, _ string, delta int) {
	s.mu.Lock()
	s.n += delta
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// await fails t unless the count reaches n before ctx ends.
func (s *subscribers) await(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for {
		s.mu.Lock()
		got := s.n
		s.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			t.Fatalf("%d event streams open, want %d", got, n)
		}
	}
}

// handOffEnv is an agent mounted with Mount (its wait is the shutdown's),
// with its streams counted.
type handOffEnv struct {
	*realEnv
	subs *subscribers
	mnt  *httptest.Server
	wait func(context.Context)
}

func newHandOffEnv(t *testing.T) *handOffEnv {
	subs := newSubscribers()
	e := newRealEnv(t, Options{}, func(o *engine.Options) { o.Observer = subs })
	mux := http.NewServeMux()
	wait := Mount(mux, DefaultPrefix, e.eng, Options{KeepAlive: 50 * time.Millisecond})
	mnt := httptest.NewUnstartedServer(mux)
	mnt.EnableHTTP2 = true
	mnt.StartTLS()
	t.Cleanup(mnt.Close)
	return &handOffEnv{realEnv: e, subs: subs, mnt: mnt, wait: wait}
}

// rawStream sends a GET for a conversation's events on a connection of
// its own, in proto ("HTTP/1.1", "HTTP/1.0"), over TLS to the test server.
func (e *handOffEnv) rawStream(t *testing.T, conv, proto, headers, extra string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := tls.Dial("tcp", e.mnt.Listener.Addr().String(), e.mnt.Client().Transport.(*http.Transport).TLSClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	path := DefaultPrefix + "/conversations/" + conv + "/events?after=0"
	req := "GET " + path + " " + proto + "\r\nHost: test\r\nAccept: text/event-stream\r\n" + headers + "\r\n" + extra
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	r, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), r)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s %s: %d %q", proto, path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return c, resp
}

// readUntil reads SSE events from p until one of type typ, and returns
// the types read.
func readUntil(t *testing.T, p *sse.Reader, typ string) []string {
	t.Helper()
	var types []string
	for {
		ev, err := p.Next()
		if err != nil {
			t.Fatalf("after %v: %v", types, err)
		}
		types = append(types, ev.Type)
		if ev.Type == typ {
			return types
		}
	}
}

// readToEnd reads what is left of a stream, which must end cleanly.
func readToEnd(t *testing.T, p *sse.Reader) {
	t.Helper()
	for {
		_, err := p.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the stream ended with %v", err)
		}
	}
}

func reader(resp *http.Response) *sse.Reader { return sse.NewReader(resp.Body, 4096, 1<<20) }

// TestHandedOffStreamHTTP11: an HTTP/1.1 event stream served off its
// request is a well-formed chunked response: its events arrive, the
// client's hang-up ends the subscription, and at shutdown its last events
// and the closing chunk go out before Mount's wait returns.
func TestHandedOffStreamHTTP11(t *testing.T) {
	e := newHandOffEnv(t)
	ctx := testCtx(t)
	conv := e.create()

	c, resp := e.rawStream(t, conv.ID(), "HTTP/1.1", "", "")
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v, want chunked", resp.TransferEncoding)
	}
	if !resp.Close {
		t.Fatal("no Connection: close: a pool would reuse the connection once the stream ends")
	}
	e.subs.await(ctx, t, 1)
	e.llm.Enqueue(llmtest.Text("handed off"))
	if _, err := conv.Send(ctx, text("hello")); err != nil {
		t.Fatal(err)
	}
	if got := readUntil(t, reader(resp), agentik.EvEnd); !slices.Contains(got, agentik.EvAssistantMessage) {
		t.Fatalf("events %v", got)
	}
	c.Close() // the client hangs up
	e.subs.await(ctx, t, 0)

	// A second stream, ended by the shutdown once it has replayed.
	_, resp = e.rawStream(t, conv.ID(), "HTTP/1.1", "", "")
	p := reader(resp)
	readUntil(t, p, agentik.EvAssistantMessage)
	if err := e.eng.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	e.wait(ctx)
	if ctx.Err() != nil {
		t.Fatal("wait returned at its deadline")
	}
	readToEnd(t, p) // the closing chunk came
	e.subs.await(ctx, t, 0)
}

// TestHandedOffStreamHTTP10: an HTTP/1.0 client gets the stream unchunked,
// ended by the connection's close.
func TestHandedOffStreamHTTP10(t *testing.T) {
	e := newHandOffEnv(t)
	ctx := testCtx(t)
	conv := e.create()
	_, resp := e.rawStream(t, conv.ID(), "HTTP/1.0", "", "")
	if len(resp.TransferEncoding) != 0 {
		t.Fatalf("transfer encoding %v for HTTP/1.0", resp.TransferEncoding)
	}
	e.llm.Enqueue(llmtest.Text("old client"))
	if _, err := conv.Send(ctx, text("hello")); err != nil {
		t.Fatal(err)
	}
	p := reader(resp)
	readUntil(t, p, agentik.EvEnd)
	if err := e.eng.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	readToEnd(t, p)
	e.subs.await(ctx, t, 0)
}

// TestPipelinedRequestEndsTheStream: a client that sends another request
// behind its event stream's gets the stream ended (it would never be
// answered), cleanly, and its subscription goes.
func TestPipelinedRequestEndsTheStream(t *testing.T) {
	e := newHandOffEnv(t)
	ctx := testCtx(t)
	conv := e.create()
	_, resp := e.rawStream(t, conv.ID(), "HTTP/1.1", "", "GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
	readToEnd(t, reader(resp))
	e.subs.await(ctx, t, 0)
}

// TestGetWithABodyStaysOnItsRequest: a GET that sends a body is not handed
// off: what net/http leaves of the body (it reads at most 256 KiB of an
// unread one before it answers) would read as bytes after the request.
// Its stream works and ends when the client hangs up (seen at a
// keep-alive's write: nobody reads the connection).
func TestGetWithABodyStaysOnItsRequest(t *testing.T) {
	e := newHandOffEnv(t)
	ctx := testCtx(t)
	conv := e.create()
	body := strings.Repeat("x", 300<<10)
	c, resp := e.rawStream(t, conv.ID(), "HTTP/1.1", "Content-Length: "+strconv.Itoa(len(body))+"\r\n", body)
	e.llm.Enqueue(llmtest.Text("with a body"))
	if _, err := conv.Send(ctx, text("hello")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, reader(resp), agentik.EvEnd)
	e.subs.await(ctx, t, 1)
	c.Close()
	e.subs.await(ctx, t, 0)
}

// TestStreamOverHTTP2: HTTP/2 cannot hand a stream off; it is served on
// its request, and ends with it.
func TestStreamOverHTTP2(t *testing.T) {
	e := newHandOffEnv(t)
	ctx := testCtx(t)
	conv := e.create()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, e.mnt.URL+DefaultPrefix+"/conversations/"+conv.ID()+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.mnt.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("protocol %s, want HTTP/2", resp.Proto)
	}
	e.llm.Enqueue(llmtest.Text("over h2"))
	if _, err := conv.Send(ctx, text("hello")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, reader(resp), agentik.EvEnd)
	cancel()
	e.subs.await(ctx, t, 0)
}

// TestStreamCountGrowsWhileWaited: a stream handed off while the shutdown
// already waits is waited for too (a WaitGroup may not grow from zero
// while waited on).
func TestStreamCountGrowsWhileWaited(t *testing.T) {
	var c streamCount
	c.wait(context.Background()) // none: returns at once
	c.add()
	waited := make(chan struct{})
	go func() {
		c.wait(context.Background())
		close(waited)
	}()
	c.add()
	c.done()
	select {
	case <-waited:
		t.Fatal("wait returned with a stream still counted")
	default:
	}
	c.done()
	<-waited
	ctx, cancel := context.WithCancel(context.Background())
	c.add()
	cancel()
	c.wait(ctx) // returns when ctx ends
}
