package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxSSELine bounds one line of an event stream. The server's events are
// single-line JSON; a journal message with a large image could be long, but
// the bench sends text only, so anything past this is a broken stream.
const maxSSELine = 4 << 20

// sseEvent is one dispatched server-sent event. Only what the bench needs is
// kept: the event name, the id (cursor of a durable event) and the data.
type sseEvent struct {
	Type string
	ID   string
	Data []byte
}

// sseReader reads text/event-stream framing (WHATWG "event stream
// interpretation"): fields up to a blank line make one event, lines starting
// with ':' are comments, "data" lines are joined with '\n'. It allocates
// little so that the bench, which shares the machine with the server, spends
// its CPU time on the server's behalf as little as possible.
type sseReader struct {
	r    *bufio.Reader
	line []byte
	ev   sseEvent
	data bytes.Buffer
	has  bool // a field was seen since the last dispatch
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10)}
}

var errLineTooLong = errors.New("sse: line too long")

// readLine returns the next line without its terminator (LF, CRLF or a lone
// CR before LF). The slice is valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		s.line = append(s.line, frag...)
		if len(s.line) > maxSSELine {
			return nil, errLineTooLong
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF && len(s.line) > 0 {
			break // a last line without terminator still counts
		}
		return nil, err
	}
	l := s.line
	l = bytes.TrimSuffix(l, []byte("\n"))
	l = bytes.TrimSuffix(l, []byte("\r"))
	return l, nil
}

// Next returns the next event. The returned Data is valid until the next call.
// At the end of the stream it returns io.EOF (or the read error); an event
// not terminated by a blank line before the end is discarded, as the
// standard says.
func (s *sseReader) Next() (sseEvent, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if !s.has {
				continue
			}
			ev := s.ev
			ev.Data = s.data.Bytes()
			if n := len(ev.Data); n > 0 && ev.Data[n-1] == '\n' {
				ev.Data = ev.Data[:n-1]
			}
			s.ev, s.has = sseEvent{}, false
			// data is reused: Reset keeps the backing array, which ev.Data
			// still points into until the next call.
			s.data.Reset()
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			s.ev.Type, s.has = string(value), true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.ev.ID, s.has = string(value), true
			}
		case "data":
			s.data.Write(value)
			s.data.WriteByte('\n')
			s.has = true
		}
	}
}
