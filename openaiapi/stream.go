package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// sseWriter writes an event stream; after a failed write it writes
// nothing more (failed).
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	failed bool
	// held, while holding, collects events to write and flush at once
	// (release): a Responses event seldom comes alone, and one write and
	// flush for several is what a streamed turn saves most on.
	held    []byte
	holding bool
	// unsent: the header is not flushed yet; it goes with the first
	// events (one write less per stream), or alone at the first release.
	unsent bool
}

// hold starts collecting events; release writes and flushes them.
func (s *sseWriter) hold() { s.holding = true }

// release writes what hold collected, in one write and one flush.
func (s *sseWriter) release() {
	s.holding = false
	if s.failed || len(s.held) == 0 {
		s.held = s.held[:0]
		if s.unsent && !s.failed {
			s.flush()
		}
		return
	}
	_, err := s.w.Write(s.held)
	s.held = s.held[:0]
	if err != nil {
		s.failed = true
		return
	}
	s.flush()
}

// startSSE answers with an event stream. The header is flushed with the
// first event, comment or release, which the caller writes at once.
func startSSE(w http.ResponseWriter, header func(http.Header)) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	if header != nil {
		header(h)
	}
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), unsent: true}
}

// data writes one event: "event: typ" when typ is set, then the JSON of v.
func (s *sseWriter) data(typ string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.failed = true
		return
	}
	s.raw(typ, b)
}

// raw writes one event with data b.
func (s *sseWriter) raw(typ string, b []byte) {
	if s.failed {
		return
	}
	if s.holding {
		s.held = appendEvent(s.held, typ, b)
		return
	}
	buf := appendEvent(make([]byte, 0, len(b)+len(typ)+16), typ, b)
	if _, err := s.w.Write(buf); err != nil {
		s.failed = true
		return
	}
	s.flush()
}

func (s *sseWriter) comment(text string) {
	if s.failed {
		return
	}
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		s.failed = true
		return
	}
	s.flush()
}

func (s *sseWriter) flush() {
	s.unsent = false
	if err := s.rc.Flush(); err != nil {
		s.failed = true
	}
}

// turnFilter tells which events of a conversation's stream belong to one
// turn: durable ones by the turn they reply to, online ones by the working
// event that starts the turn (append_text names no turn).
type turnFilter struct {
	turn string
	mine bool // the turn is the one running now
}

// keep reports whether ev is of the turn.
func (f *turnFilter) keep(ev agentik.Event) bool {
	if ev.Message != nil {
		return ev.Message.ReplyTo == f.turn
	}
	switch ev.Type {
	case agentik.EvWorking:
		f.mine = ev.ReplyTo == f.turn
		return f.mine
	case agentik.EvAppendText, agentik.EvAppendImage:
		return f.mine
	case agentik.EvEnd:
		keep := ev.ReplyTo == f.turn
		if keep {
			f.mine = false
		}
		return keep
	}
	return ev.ReplyTo == f.turn
}

// follow feeds the turn's events of stream to fn until fn says the turn is
// done, ctx ends, or the stream cannot go on (an error). tick, when set,
// runs on every keep-alive interval without an event and may end the
// follow too. A subscription cut off for being slow resumes from the last
// durable cursor.
func (h *Handler) follow(ctx context.Context, conv agentik.Conversation, stream agentik.Stream[agentik.Event], cursor int64, turn string, fn func(agentik.Event) bool, tick func() bool) error {
	defer func() { stream.Close() }()
	f := &turnFilter{turn: turn}
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	// Pulled on the request's goroutine (edge.Pull): a request costs the
	// engine no goroutine or channel of its own.
	events := edge.Pull(stream, edge.EventFrame)
	for {
		ev, ok, ended, err := edge.Take(events)
		if ended {
			if err != nil {
				return err
			}
			if !errors.Is(events.Err(), agentik.ErrSlowSubscriber) {
				if err := events.Err(); err != nil {
					return err
				}
				return agentik.Errorf(agentik.EUnavailable, "the conversation's event stream ended")
			}
			next, err := conv.Events(ctx, cursor)
			if err != nil {
				return err
			}
			stream.Close()
			stream = next
			events = edge.Pull(stream, edge.EventFrame)
			continue
		}
		if ok {
			if ev.Cursor > cursor {
				cursor = ev.Cursor
			}
			if f.keep(ev) && fn(ev) {
				return nil
			}
			keepAlive.Reset(h.opts.KeepAlive)
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-keepAlive.C:
			if tick != nil && tick() {
				return nil
			}
		case <-events.Ready():
		case <-events.Done():
		}
	}
}

// appendEvent appends one event: "event: typ" when typ is set, then data b.
func appendEvent(buf []byte, typ string, b []byte) []byte {
	if typ != "" {
		buf = append(append(append(buf, "event: "...), typ...), '\n')
	}
	return append(append(append(buf, "data: "...), b...), "\n\n"...)
}
