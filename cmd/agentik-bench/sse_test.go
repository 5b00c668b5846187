package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\n\n" +
		"id: 12\nevent: user_message\ndata: {\"a\":1}\n\n" +
		"event: append_text\r\ndata: x\r\ndata: y\r\n\r\n" +
		"event: end\ndata: {\"reason\":\"completed\"}\n\n" +
		"event: cut\ndata: never dispatched"
	r := newSSEReader(strings.NewReader(in))
	want := []sseEvent{
		{Type: "user_message", ID: "12", Data: []byte(`{"a":1}`)},
		{Type: "append_text", Data: []byte("x\ny")},
		{Type: "end", Data: []byte(`{"reason":"completed"}`)},
	}
	for i, w := range want {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != w.Type || ev.ID != w.ID || string(ev.Data) != string(w.Data) {
			t.Fatalf("event %d = %q %q %q, want %q %q %q", i, ev.Type, ev.ID, ev.Data, w.Type, w.ID, w.Data)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last event: %v, want EOF", err)
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	r := newSSEReader(strings.NewReader("data: " + long + "\n\n"))
	ev, err := r.Next()
	if err != nil || string(ev.Data) != long {
		t.Fatalf("long line: %d bytes, %v", len(ev.Data), err)
	}
	r = newSSEReader(strings.NewReader("data: " + strings.Repeat("b", maxSSELine+1) + "\n\n"))
	if _, err := r.Next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("oversized line: %v, want errLineTooLong", err)
	}
}

// FuzzSSEReader feeds arbitrary bytes to the event-stream reader: it must
// never panic, never loop forever, and every event it returns must come from
// a field the input held.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"id: 1\nevent: user_message\ndata: {}\n\n",
		"event: append_text\r\ndata: hi\r\n\r\n",
		": comment\n\nevent: end\ndata: {\"reason\":\"completed\"}\n\n",
		"data: [DONE]\n\n",
		"id\nevent\ndata\n\n",
		"\r\n\r\n\n",
		"id: a\x00b\ndata: x\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newSSEReader(strings.NewReader(string(b)))
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if i > len(b) {
				t.Fatalf("more events (%d) than input bytes (%d)", i, len(b))
			}
			if ev.Type != "" && !strings.Contains(string(b), ev.Type) {
				t.Fatalf("event type %q not in input", ev.Type)
			}
			if strings.ContainsAny(ev.ID, "\x00\n") {
				t.Fatalf("id %q holds NUL or LF", ev.ID)
			}
		}
	})
}
