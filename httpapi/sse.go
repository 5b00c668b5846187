package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik"
)

// sseBatch bounds how many waiting events one write carries.
const sseBatch = 64

// idleBuffer is the largest write buffer a stream keeps between bursts.
const idleBuffer = 4 << 10

// serveSSE writes stream as a text/event-stream until the stream ends, the
// client goes away or a write fails. The caller has already subscribed: the
// 200 is written here, after the subscription exists, so nothing committed
// after the client sees the 200 can be missed.
//
// It runs on the request's goroutine and starts none of its own. A client
// that stops reading blocks a write for at most writeTimeout; meanwhile the
// core cuts the subscription off instead of waiting for it, so a slow client
// costs neither the turn nor other subscribers anything.
func serveSSE[T any](s *server, w http.ResponseWriter, r *http.Request, stream agentik.Stream[T], meta func(T) (cursor int64, typ string)) {
	defer stream.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if err := s.writeFlush(w, rc, nil); err != nil {
		return
	}

	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	var buf bytes.Buffer
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			if err := s.writeFlush(w, rc, []byte(": keep-alive\n\n")); err != nil {
				return
			}
		case ev, ok := <-stream.C():
			if !ok {
				// ErrSlowSubscriber and shutdown both end the response: the
				// client resumes from its last cursor.
				if err := stream.Err(); err != nil && !errors.Is(err, agentik.ErrSlowSubscriber) {
					s.log.DebugContext(r.Context(), "event stream ended", "path", r.URL.Path, "err", err)
				}
				return
			}
			// Events already waiting go out with this one in one write and
			// one flush (a replay, a burst of deltas); never more than
			// sseBatch, so a long replay still reaches the client steadily.
			buf.Reset()
			for n := 0; ; n++ {
				cursor, typ := meta(ev)
				data, err := json.Marshal(ev)
				if err != nil {
					s.log.ErrorContext(r.Context(), "encode event", "type", typ, "err", err)
					return
				}
				appendEvent(&buf, cursor, typ, data)
				if n+1 == sseBatch {
					break
				}
				select {
				case ev, ok = <-stream.C():
				default:
					ok = false
				}
				if !ok {
					// Nothing waiting, or the stream closed (the outer
					// select sees that again): send what we have.
					break
				}
			}
			if err := s.writeFlush(w, rc, buf.Bytes()); err != nil {
				return
			}
			if buf.Cap() > idleBuffer {
				buf = bytes.Buffer{} // an idle subscriber keeps no burst's buffer
			}
			keepAlive.Reset(s.keepAlive) // keep-alives only fill silences
		}
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
	if err := rc.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return rc.Flush()
}
