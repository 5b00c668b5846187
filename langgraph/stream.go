package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// sseWriter writes one response's text/event-stream. Writes are
// serialised with the keep-alive comments.
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	failed bool
	stop   chan struct{}
	done   chan struct{}
}

// startSSE writes the stream's headers and starts its keep-alive comments.
func startSSE(w http.ResponseWriter, keepAlive time.Duration, hdr func(http.Header)) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	if hdr != nil {
		hdr(h)
	}
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), stop: make(chan struct{}), done: make(chan struct{})}
	s.rc.Flush()
	go s.keepAlive(keepAlive)
	return s
}

func (s *sseWriter) keepAlive(d time.Duration) {
	defer close(s.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.write([]byte(": keep-alive\n\n"))
		}
	}
}

// close stops the keep-alive comments; nothing is written after it.
func (s *sseWriter) close() {
	close(s.stop)
	<-s.done
}

func (s *sseWriter) write(b []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return false
	}
	s.rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := s.w.Write(b); err != nil {
		s.failed = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.failed = true
		return false
	}
	return true
}

// event writes one event; id > 0 writes its id line (a durable point a
// client may resume after with Last-Event-ID).
func (s *sseWriter) event(name string, id int64, data any) bool {
	b, err := json.Marshal(data)
	if err != nil {
		return false
	}
	buf := make([]byte, 0, len(b)+64)
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, '\n')
	if id > 0 {
		buf = append(buf, "id: "...)
		buf = strconv.AppendInt(buf, id, 10)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	return s.write(buf)
}

// sink is where a run's follower puts what it makes: a stream, or nothing
// (wait and join only want the end).
type sink interface {
	event(name string, id int64, data any) bool
}

// discard is the sink of a run nobody streams.
type discard struct{}

func (discard) event(string, int64, any) bool { return true }

// lastEventID is the Last-Event-ID a rejoining client sends: a durable
// cursor (0: none).
func lastEventID(r *http.Request) int64 {
	n, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// detach is a context for work that belongs to the thread, not to the
// request that started it.
func detach(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
