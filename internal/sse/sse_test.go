package sse

import (
	"bufio"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// ev is an Event with its data as a string, for comparisons.
type ev struct {
	Type, ID string
	HasID    bool
	Data     string
}

func readAll(t testing.TB, r io.Reader, bufSize, maxLine int) ([]ev, error) {
	t.Helper()
	p := NewReader(r, bufSize, maxLine)
	var out []ev
	for {
		e, err := p.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
		out = append(out, ev{e.Type, e.ID, e.HasID, string(e.Data)})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []ev
	}{
		{"durable", "id: 7\nevent: user_message\ndata: {\"a\":1}\n\n",
			[]ev{{"user_message", "7", true, `{"a":1}`}}},
		{"online keeps last id", "id: 7\nevent: a\ndata: x\n\nevent: b\ndata: y\n\n",
			[]ev{{"a", "7", true, "x"}, {"b", "7", false, "y"}}},
		{"crlf", "id: 1\r\nevent: a\r\ndata: x\r\n\r\n", []ev{{"a", "1", true, "x"}}},
		{"lone cr", "id: 1\revent: a\rdata: x\r\r", []ev{{"a", "1", true, "x"}}},
		{"comments and keep-alives", ": keep-alive\n\n:x\ndata: x\n\n", []ev{{"", "", false, "x"}}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []ev{{"", "", false, "a\nb\n c"}}},
		{"field without colon", "data\n\ndata\ndata\n\n", []ev{{"", "", false, ""}, {"", "", false, "\n"}}},
		{"no data no dispatch", "id: 3\nevent: a\n\ndata: x\n\n", []ev{{"", "3", false, "x"}}},
		{"id with NUL ignored", "id: 1\ndata: x\n\nid: 2\x00\ndata: y\n\n",
			[]ev{{"", "1", true, "x"}, {"", "1", false, "y"}}},
		{"empty id resets", "id: 1\ndata: x\n\nid\ndata: y\n\n", []ev{{"", "1", true, "x"}, {"", "", true, "y"}}},
		{"bom", "\uFEFFdata: x\n\n", []ev{{"", "", false, "x"}}},
		{"unterminated event dropped", "data: x\n\ndata: y\n", []ev{{"", "", false, "x"}}},
		{"cut mid-line", "event: end\ndata: x\n\nevent: cut\ndata: never dispatched", []ev{{"end", "", false, "x"}}},
		{"unknown fields and retry", "retry: 10\nfoo: bar\ndata: x\n\n", []ev{{"", "", false, "x"}}},
		{"colon in value", "data: a: b\n\n", []ev{{"", "", false, "a: b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, bufSize := range []int{1, 4096} {
				got, err := readAll(t, strings.NewReader(tt.in), bufSize, 1<<10)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("buffer %d: got %+v\nwant %+v", bufSize, got, tt.want)
				}
			}
		})
	}
}

func TestReaderLineLimit(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	got, err := readAll(t, strings.NewReader("data: "+long+"\n\n"), 4096, 1<<20)
	if err != nil || len(got) != 1 || got[0].Data != long {
		t.Fatalf("a 100,000-byte line: %d events, %v", len(got), err)
	}
	_, err = readAll(t, strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 4096, 64)
	if !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("err = %v, want bufio.ErrTooLong", err)
	}
}

// TestReaderDataReused: an event's data is valid until the next call, and
// the next event's data does not carry the previous one's.
func TestReaderDataReused(t *testing.T) {
	p := NewReader(strings.NewReader("data: long first\n\ndata: b\n\n"), 4096, 1<<10)
	first, err := p.Next()
	if err != nil || string(first.Data) != "long first" {
		t.Fatalf("first: %q, %v", first.Data, err)
	}
	second, err := p.Next()
	if err != nil || string(second.Data) != "b" {
		t.Fatalf("second: %q, %v", second.Data, err)
	}
}

// TestReaderSplitReads feeds the stream one byte at a time, so that every
// line ending, CRLF pair included, straddles a read.
func TestReaderSplitReads(t *testing.T) {
	in := "id: 1\r\nevent: a\r\ndata: x\r\n\r\nid: 2\rdata: y\r\r"
	got, err := readAll(t, oneByteReader{strings.NewReader(in)}, 4096, 1<<10)
	want := []ev{{"a", "1", true, "x"}, {"", "2", true, "y"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// readError fails with err once its reader is exhausted.
type readError struct {
	r   io.Reader
	err error
}

func (e readError) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	got, err := readAll(t, readError{strings.NewReader("data: x\n\ndata: y\n"), boom}, 4096, 1<<10)
	if !errors.Is(err, boom) || len(got) != 1 || got[0].Data != "x" {
		t.Fatalf("got %+v, %v; want one event, then %v", got, err, boom)
	}
}

// FuzzReader checks that the reader never panics or loops, that an event
// comes only from a blank line after data, that names and ids hold no line
// break or NUL, that LF and CRLF line endings read alike, and that the
// buffer size and the way reads are split change nothing.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"id: 7\nevent: user_message\ndata: {\"a\":1}\n\n",
		": keep-alive\n\ndata: a\ndata: b\n\n",
		"\uFEFFdata\n\nid: 1\x00\n\n",
		"event: x\r\ndata: y\r\n\r\n",
		"data: x\r\rdata: y\n",
		"id\nevent\ndata\n\n",
		"data: [DONE]\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, _ := readAll(t, strings.NewReader(in), 4096, 1<<16)
		if len(got) > len(in)/2 {
			t.Fatalf("%d events from %d bytes", len(got), len(in))
		}
		for _, e := range got {
			if strings.ContainsAny(e.Type+e.ID, "\r\n") || strings.ContainsRune(e.ID, 0) {
				t.Fatalf("event %+v carries a line break or NUL", e)
			}
		}
		split, _ := readAll(t, oneByteReader{strings.NewReader(in)}, 1, 1<<16)
		if !reflect.DeepEqual(got, split) {
			t.Fatalf("whole and byte by byte read differently:\n%+v\n%+v", got, split)
		}
		if !strings.Contains(in, "\r") {
			crlf, _ := readAll(t, strings.NewReader(strings.ReplaceAll(in, "\n", "\r\n")), 4096, 1<<17)
			if !reflect.DeepEqual(got, crlf) {
				t.Fatalf("LF and CRLF read differently:\n%+v\n%+v", got, crlf)
			}
		}
	})
}
