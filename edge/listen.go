package edge

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Listener returns ln whose connections reach the server only once their
// client has sent something (or hung up), waiting at most idle for that; a
// connection silent for longer is closed.
//
// net/http starts http.Server.ReadHeaderTimeout when it reads a new
// connection's first request, which is at once: the time a client takes to
// send that request after connecting counts against it. On a kept-alive
// connection the timeout starts at the next request's first bytes, and the
// wait before them is bounded by IdleTimeout. This gives a new connection
// the same rules. Without it a client that connected and was slow to write
// (a loaded machine: 12 s between a Go client's dial and its request was
// seen), or that dialled a connection it parked in its idle pool for later,
// found it closed without an answer: EOF, and Go's client retries no POST,
// PATCH or DELETE.
//
// Connections that cannot be waited on (no syscall.Conn) are handed over at
// once. Closing the listener closes the connections still waiting.
func Listener(ln net.Listener, idle time.Duration) net.Listener {
	l := &listener{Listener: ln, idle: idle, ready: make(chan net.Conn), errs: make(chan error),
		closed: make(chan struct{}), waiting: map[net.Conn]struct{}{}}
	go l.acceptLoop()
	return l
}

type listener struct {
	net.Listener
	idle   time.Duration
	ready  chan net.Conn // connections whose client has sent something
	errs   chan error    // the inner Accept's errors, for the server's Accept
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	waiting map[net.Conn]struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		close(l.closed)
		l.mu.Lock()
		for c := range l.waiting {
			c.Close()
		}
		l.mu.Unlock()
	})
	return err
}

// acceptLoop accepts from the inner listener and starts a wait for each
// connection. An error goes to the server's Accept (net/http backs off on
// temporary ones before it asks again, which paces this loop too).
func (l *listener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.closed:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.mu.Lock()
		select {
		case <-l.closed:
			l.mu.Unlock()
			c.Close()
			return
		default:
		}
		l.waiting[c] = struct{}{}
		l.mu.Unlock()
		go l.wait(c)
	}
}

// wait hands c over once it is readable: data, or the client's hang-up,
// which the server then reads as usual.
func (l *listener) wait(c net.Conn) {
	ok := waitReadable(c, l.idle)
	l.mu.Lock()
	delete(l.waiting, c)
	l.mu.Unlock()
	if !ok {
		c.Close()
		return
	}
	select {
	case l.ready <- c:
	case <-l.closed:
		c.Close()
	}
}
