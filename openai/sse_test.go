package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// sseEvents reads every event's data with an sseReader, the reader
// handing over at most chunk bytes per Read (0: all at once).
func sseEvents(stream []byte, chunk int, fail error) (events []string, err error) {
	var r io.Reader = bytes.NewReader(stream)
	if chunk > 0 {
		r = &chunkReader{b: stream, n: chunk}
	}
	if fail != nil {
		r = io.MultiReader(r, iotest.ErrReader(fail))
	}
	s := newSSEReader(r)
	defer s.release()
	for {
		data, ok := s.next()
		if !ok {
			return events, s.error()
		}
		events = append(events, string(data))
	}
}

// officialEvents reads the same with openai-go's ssestream decoder.
func officialEvents(stream []byte, fail error) (events []string, err error) {
	var r io.Reader = bytes.NewReader(stream)
	if fail != nil {
		r = io.MultiReader(r, iotest.ErrReader(fail))
	}
	d := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(r)})
	for d.Next() {
		events = append(events, string(d.Event().Data))
	}
	return events, d.Err()
}

type chunkReader struct {
	b []byte
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[n:]
	return n, nil
}

var errCut = errors.New("connection cut")

func sameEvents(t *testing.T, stream []byte) {
	t.Helper()
	for _, fail := range []error{nil, errCut} {
		want, wantErr := officialEvents(stream, fail)
		for _, chunk := range []int{0, 1, 7} {
			got, err := sseEvents(stream, chunk, fail)
			if !errors.Is(err, wantErr) || strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
				t.Fatalf("%q (read %d at a time, then %v):\n got %q, %v\nwant %q, %v", stream, chunk, fail, got, err, want, wantErr)
			}
		}
	}
}

// TestSSEReaderMatchesOfficial: the events and errors of openai-go's
// decoder, on the shapes servers send and on odd ones.
func TestSSEReaderMatchesOfficial(t *testing.T) {
	long := strings.Repeat("x", 10_000) // past the 4 KiB reader
	for _, s := range []string{
		"",
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n",
		"data:{\"a\":1}\n\n",
		"data:  two spaces\n\n",
		"data: one\ndata: two\n\n",
		": keep-alive\n\ndata: x\n\n",
		"event: error\ndata: {\"error\":{}}\n\n",
		"id: 1\nretry: 10\ndata: x\n\n",
		"data\n\n",
		"data:\n\n",
		"\n\n\ndata: x\n\n\n",
		"data: no blank line at the end\n",
		"data: no line end",
		"data: x\n\r",
		"data: x\r\r\n\n",
		"data: a:b:c\n\n",
		"DATA: case\n\n",
		"data: " + long + "\n\ndata: after\n\n",
		"data: " + long + "\r\n" + "data: " + long,
	} {
		sameEvents(t, []byte(s))
	}
}

// TestSSEReaderTooLong: a line past maxSSELine is an error, as it is for
// the official decoder.
func TestSSEReaderTooLong(t *testing.T) {
	stream := append([]byte("data: "), bytes.Repeat([]byte("x"), maxSSELine+1)...)
	stream = append(stream, "\n\n"...)
	got, err := sseEvents(stream, 0, nil)
	if !errors.Is(err, bufio.ErrTooLong) || len(got) != 0 {
		t.Fatalf("got %d events, %v; want bufio.ErrTooLong", len(got), err)
	}
	if _, err := officialEvents(stream, nil); !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("official: %v", err)
	}
}

// TestSSEReaderReused: a pooled reader starts clean, whatever the stream
// before it left behind.
func TestSSEReaderReused(t *testing.T) {
	for range 3 {
		if got, err := sseEvents([]byte("data: half an ev"), 0, errCut); len(got) != 0 || !errors.Is(err, errCut) {
			t.Fatalf("cut stream: %q, %v", got, err)
		}
		if got, err := sseEvents([]byte("data: whole\n\n"), 0, nil); err != nil || len(got) != 1 || got[0] != "whole\n" {
			t.Fatalf("next stream: %q, %v", got, err)
		}
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: x\r\ndata:y\r\n\r\n: c\ndata\n\ndata: z"))
	f.Add([]byte("\n\r\n\rdata: a\ndata: b\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		sameEvents(t, stream)
	})
}
