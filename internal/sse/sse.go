// Package sse reads text/event-stream responses as the HTML standard's
// "event stream interpretation" describes them. The Go client (httpapi),
// the A2A client and the bench read Agentik's and other servers' streams
// with it. The model adapter keeps a reader of its own (openai/sse.go): it
// follows openai-go's decoder, whose rules differ on malformed streams, and
// is held to that decoder by a fuzz test.
package sse

import (
	"bufio"
	"bytes"
	"io"
)

// Event is one dispatched event.
type Event struct {
	// Type is the event's "event" field, "" when it had none (the standard
	// then calls it "message").
	Type string
	// ID is the stream's last event id: it persists from an event that set
	// it to the events after it, as the standard says, and is what a client
	// resumes from (Last-Event-ID).
	ID string
	// HasID tells whether this event set the id itself.
	HasID bool
	// Data is the "data" lines joined by "\n". It is valid until the next
	// call of Next.
	Data []byte
}

// Reader reads the events of one stream:
//   - lines end in LF, CRLF or a lone CR;
//   - a leading byte-order mark is skipped;
//   - lines starting with ':' are comments;
//   - "field: value" loses one space after the colon, and a line without
//     a colon is a field with an empty value;
//   - "data" lines accumulate, and a blank line dispatches the event when
//     it has data (otherwise the event's type is forgotten);
//   - an id containing NUL is ignored; retry and unknown fields are
//     ignored;
//   - an event not ended by a blank line before the stream ends is
//     discarded: it may have been cut off.
//
// One difference from the standard: a line ended by a lone CR is recognised
// only once the next byte arrives, so a server that ends its lines with lone
// CRs sees each event delivered one byte late. Agentik writes LF.
type Reader struct {
	sc     *bufio.Scanner
	data   []byte
	lastID string
	first  bool
}

// NewReader reads events from r, with a read buffer of up to bufSize bytes
// that grows for a long line; no line may be longer than maxLine bytes
// (Next then fails with bufio.ErrTooLong).
func NewReader(r io.Reader, bufSize, maxLine int) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, max(1, min(bufSize, maxLine))), maxLine)
	sc.Split(scanLines)
	return &Reader{sc: sc, first: true}
}

// Next returns the next event: io.EOF when the stream ended cleanly, else
// the read error (bufio.ErrTooLong for an oversized line).
func (p *Reader) Next() (Event, error) {
	p.data = p.data[:0]
	var ev Event
	hasData := false
	for p.sc.Scan() {
		line := p.sc.Bytes()
		if p.first {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
			p.first = false
		}
		if len(line) == 0 {
			if !hasData {
				ev.Type, ev.HasID = "", false // nothing to dispatch; the id stays
				continue
			}
			ev.ID, ev.Data = p.lastID, p.data
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment (keep-alive)
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found {
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "event":
			ev.Type = string(value)
		case "data":
			if hasData {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.lastID, ev.HasID = string(value), true
			}
		}
	}
	if err := p.sc.Err(); err != nil {
		return Event{}, err
	}
	return Event{}, io.EOF
}

// scanLines is a bufio.SplitFunc for event-stream lines (LF, CRLF or CR
// endings). Bytes after the last line ending at the end of the stream are
// dropped: a line cut off there belongs to an event that is never
// dispatched.
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
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
