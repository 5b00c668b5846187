package edge

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serveListener serves a 200 through Listener(ln, idle) with net/http's
// header timeout set to header.
func serveListener(t *testing.T, header, idle time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: header,
		IdleTimeout:       time.Minute,
	}
	go srv.Serve(Listener(ln, idle)) //nolint:errcheck // ErrServerClosed on Close
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestNewConnectionWaitsLikeAKeptAliveOne: a client that connects and is
// slower than the header timeout to send its first request gets its answer
// (net/http alone closed the connection after the header timeout, counted
// from the connect: the client saw EOF). TestPostgresAgentStreamSubscribers
// failed this way on a loaded machine: 12 s between a Go client's dial and
// its POST, against a 10 s header timeout.
func TestNewConnectionWaitsLikeAKeptAliveOne(t *testing.T) {
	const header = 50 * time.Millisecond
	addr := serveListener(t, header, time.Minute)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Ten header timeouts of silence: the server must not hang up.
	c.SetReadDeadline(time.Now().Add(10 * header))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent new connection: read %d bytes, %v; want it still open", n, err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the request after the silence: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// TestHeaderTimeoutStillBoundsARequest: once the first bytes arrived, a
// client that does not finish its headers is cut off after the header
// timeout, as before; one that sends nothing is closed after idle.
func TestHeaderTimeoutStillBoundsARequest(t *testing.T) {
	const header = 50 * time.Millisecond
	for _, tc := range []struct {
		name, send string
		idle       time.Duration
	}{
		{"half a request", "GET / HTTP/1.1\r\n", time.Minute},
		{"nothing", "", 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveListener(t, header, tc.idle)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.send); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			b, err := io.ReadAll(c)
			if err != nil || strings.Contains(string(b), "200 OK") {
				t.Fatalf("read %q, %v; want the connection closed", b, err)
			}
			t.Logf("closed after %s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestListenerCloseEndsAccept: the server's Serve returns once the
// listener is closed, and a connection that never spoke is closed too.
func TestListenerCloseEndsAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listener(ln, time.Minute)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	l.Close()
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the silent connection was left open")
	}
}
