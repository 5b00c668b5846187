package openai

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// sseReader reads the data of a text/event-stream's events by the rules of
// openai-go's ssestream decoder, which the adapter used before: lines end
// at '\n' (one '\r' before it dropped), a blank line dispatches the event
// when it has data, "data" fields are joined each followed by '\n', other
// fields and comments are skipped, a last line without its end still
// counts, and a line longer than maxSSELine is an error (bufio.ErrTooLong).
// FuzzSSEReader holds the two to the same events and errors.
//
// Its reader and data buffer are reused by the streams that follow
// (ssePool): the decoder they replace made a 4 KiB buffer per stream and a
// data slice per chunk, a tenth of the bytes a turn allocated.
type sseReader struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer, gathered
	data []byte // the current event's data
	err  error  // the reader's error (io.EOF at a clean end)
}

// maxSSELine is the longest line read, as openai-go's decoder allows.
const maxSSELine = bufio.MaxScanTokenSize << 9

// maxPooledSSE bounds the buffers an sseReader keeps for the next stream.
const maxPooledSSE = 64 << 10

var ssePool = sync.Pool{New: func() any { return &sseReader{br: bufio.NewReaderSize(nil, 4096)} }}

// newSSEReader returns a reader of r's events; release it when done.
func newSSEReader(r io.Reader) *sseReader {
	s := ssePool.Get().(*sseReader)
	s.br.Reset(r)
	return s
}

// release returns s to the pool: nothing it returned may be used after.
func (s *sseReader) release() {
	s.br.Reset(nil)
	s.err = nil
	s.data = s.data[:0]
	if cap(s.data) > maxPooledSSE {
		s.data = nil
	}
	s.long = nil
	ssePool.Put(s)
}

// next returns the data of the next event that has some, valid until the
// following call, or false at the end of the stream (see error).
func (s *sseReader) next() ([]byte, bool) {
	s.data = s.data[:0]
	for {
		line, ok := s.line()
		if !ok {
			return nil, false
		}
		if len(line) == 0 {
			if len(s.data) > 0 {
				return s.data, true
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(name) == "data" {
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		}
	}
}

// error is why the stream ended: nil at its end, else the read error.
func (s *sseReader) error() error {
	if s.err == io.EOF {
		return nil
	}
	return s.err
}

// line returns the next line without its end, valid until the next call.
func (s *sseReader) line() ([]byte, bool) {
	if s.err != nil {
		return nil, false
	}
	b, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = s.br.ReadSlice('\n')
			s.long = append(s.long, b...)
			if len(s.long) > maxSSELine {
				s.err = bufio.ErrTooLong
				return nil, false
			}
		}
		b = s.long
	}
	if err == nil {
		return dropCR(b[:len(b)-1]), true
	}
	// The stream ended or failed: what came before is its last line.
	s.err = err
	if len(b) == 0 {
		return nil, false
	}
	return dropCR(b), true
}

func dropCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}
