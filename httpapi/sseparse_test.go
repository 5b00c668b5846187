package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func parseAll(t testing.TB, in string, maxLine int) ([]sseEvent, error) {
	t.Helper()
	p := newSSEReader(strings.NewReader(in), maxLine)
	var out []sseEvent
	for {
		ev, err := p.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"durable", "id: 7\nevent: user_message\ndata: {\"a\":1}\n\n",
			[]sseEvent{{ID: "7", Event: "user_message", Data: `{"a":1}`}}},
		{"online keeps last id", "id: 7\nevent: a\ndata: x\n\nevent: b\ndata: y\n\n",
			[]sseEvent{{ID: "7", Event: "a", Data: "x"}, {ID: "7", Event: "b", Data: "y"}}},
		{"crlf", "id: 1\r\nevent: a\r\ndata: x\r\n\r\n",
			[]sseEvent{{ID: "1", Event: "a", Data: "x"}}},
		{"lone cr", "id: 1\revent: a\rdata: x\r\r",
			[]sseEvent{{ID: "1", Event: "a", Data: "x"}}},
		{"comments and keep-alives", ": keep-alive\n\n:x\ndata: x\n\n",
			[]sseEvent{{Event: "message", Data: "x"}}},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n",
			[]sseEvent{{Event: "message", Data: "a\nb\n c"}}},
		{"field without colon", "data\n\ndata\ndata\n\n",
			[]sseEvent{{Event: "message", Data: ""}, {Event: "message", Data: "\n"}}},
		{"no data no dispatch", "event: a\n\ndata: x\n\n",
			[]sseEvent{{Event: "message", Data: "x"}}},
		{"id with NUL ignored", "id: 1\ndata: x\n\nid: 2\x00\ndata: y\n\n",
			[]sseEvent{{ID: "1", Event: "message", Data: "x"}, {ID: "1", Event: "message", Data: "y"}}},
		{"empty id resets", "id: 1\ndata: x\n\nid\ndata: y\n\n",
			[]sseEvent{{ID: "1", Event: "message", Data: "x"}, {ID: "", Event: "message", Data: "y"}}},
		{"bom", "\uFEFFdata: x\n\n", []sseEvent{{Event: "message", Data: "x"}}},
		{"unterminated event dropped", "data: x\n\ndata: y\n", []sseEvent{{Event: "message", Data: "x"}}},
		{"unknown fields and retry", "retry: 10\nfoo: bar\ndata: x\n\n", []sseEvent{{Event: "message", Data: "x"}}},
		{"colon in value", "data: a: b\n\n", []sseEvent{{Event: "message", Data: "a: b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAll(t, tt.in, 1<<10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSSEReaderLineLimit(t *testing.T) {
	_, err := parseAll(t, "data: "+strings.Repeat("x", 100)+"\n\n", 64)
	if !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("err = %v, want bufio.ErrTooLong", err)
	}
}

// TestSSEReaderSplitReads feeds the stream one byte at a time, so that every
// line ending, CRLF pair included, straddles a read.
func TestSSEReaderSplitReads(t *testing.T) {
	in := "id: 1\r\nevent: a\r\ndata: x\r\n\r\nid: 2\rdata: y\r\r"
	p := newSSEReader(oneByteReader{strings.NewReader(in)}, 1<<10)
	var got []sseEvent
	for {
		ev, err := p.Next()
		if err != nil {
			break
		}
		got = append(got, ev)
	}
	want := []sseEvent{{ID: "1", Event: "a", Data: "x"}, {ID: "2", Event: "message", Data: "y"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// FuzzSSEReader checks that the parser never panics, that CRLF and LF line
// endings parse alike, and that what the server writes parses back intact.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"id: 7\nevent: user_message\ndata: {\"a\":1}\n\n",
		": keep-alive\n\ndata: a\ndata: b\n\n",
		"\uFEFFdata\n\nid: 1\x00\n\n",
		"event: x\r\ndata: y\r\n\r\n",
		"data: x\r\rdata: y\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, _ := parseAll(t, in, 1<<16)
		for _, ev := range got {
			if strings.ContainsAny(ev.Event+ev.ID, "\r\n") || strings.ContainsRune(ev.ID, 0) {
				t.Fatalf("event %+v carries a line break or NUL", ev)
			}
		}
		if !strings.Contains(in, "\r") {
			crlf, _ := parseAll(t, strings.ReplaceAll(in, "\n", "\r\n"), 1<<16)
			if !reflect.DeepEqual(got, crlf) {
				t.Fatalf("LF and CRLF parse differently:\n%+v\n%+v", got, crlf)
			}
		}
		// Round trip: any single-line payload written by appendEvent comes back.
		data := strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, in)
		var buf bytes.Buffer
		appendEvent(&buf, 42, "append_text", []byte(data))
		back, err := parseAll(t, buf.String(), 1<<20)
		if err != nil || len(back) != 1 || back[0] != (sseEvent{ID: "42", Event: "append_text", Data: data}) {
			t.Fatalf("round trip of %q: %+v, %v", data, back, err)
		}
	})
}
