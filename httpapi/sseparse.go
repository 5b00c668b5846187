package httpapi

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	ID    string // the last event id seen on the stream (SSE semantics: it persists)
	Event string // "message" when the event had no event: line
	Data  string // data: lines joined by "\n"
}

// sseReader parses a text/event-stream as the HTML standard describes it:
// lines end in LF, CRLF or a lone CR; lines starting with ':' are comments;
// "field: value" loses one space after the colon; data lines accumulate; a
// blank line dispatches the event unless it has no data; an id containing NUL
// is ignored; an unterminated event at the end of the stream is discarded.
//
// One difference: a line ended by a lone CR is recognised only once the next
// byte arrives, so a server that ends lines with lone CRs sees its events
// delivered one byte late. Agentik servers write LF.
type sseReader struct {
	sc     *bufio.Scanner
	lastID string
	first  bool
}

// newSSEReader reads events from r; no line may be longer than maxLine bytes.
func newSSEReader(r io.Reader, maxLine int) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(4096, maxLine)), maxLine)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc, first: true}
}

// Next returns the next event; io.EOF when the stream ended cleanly, or the
// read error (bufio.ErrTooLong for an oversized line).
func (p *sseReader) Next() (sseEvent, error) {
	var data strings.Builder
	var event string
	hasData := false
	for p.sc.Scan() {
		line := p.sc.Bytes()
		if p.first {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
			p.first = false
		}
		if len(line) == 0 {
			if !hasData {
				event = "" // nothing to dispatch; the id (if any) stays
				continue
			}
			if event == "" {
				event = "message"
			}
			return sseEvent{ID: p.lastID, Event: event, Data: data.String()}, nil
		}
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found {
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.lastID = string(value)
			}
		}
		// retry and unknown fields are ignored: the client has its own
		// reconnect policy.
	}
	if err := p.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}

// scanSSELines is a bufio.SplitFunc for SSE lines (LF, CRLF or CR endings).
// Bytes after the last line ending at EOF are dropped: an event cut off
// mid-line is incomplete and must not be dispatched.
func scanSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF {
			return len(data), nil, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	default:
		return 0, nil, nil // a CR at the end of the buffer: is an LF next?
	}
}
