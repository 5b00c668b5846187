package httpapi

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/agentik/agentik/internal/sse"
)

// FuzzSSERoundTrip: any single-line payload the server writes with
// appendEvent reads back intact with the reader the Go client uses, under
// its id and type.
func FuzzSSERoundTrip(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "", ": not a comment", "data: x", "\uFEFFx", "a\x00b"} {
		f.Add(s, int64(42), "append_text")
	}
	f.Fuzz(func(t *testing.T, data string, cursor int64, typ string) {
		data = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, data)
		var buf bytes.Buffer
		appendEvent(&buf, cursor, typ, []byte(data))
		appendEvent(&buf, 0, "end", []byte("{}"))
		p := sse.NewReader(&buf, 4096, 1<<20)
		ev, err := p.Next()
		if err != nil || string(ev.Data) != data {
			t.Fatalf("data %q came back as %q, %v", data, ev.Data, err)
		}
		if cursor > 0 && (!ev.HasID || ev.ID != strconv.FormatInt(cursor, 10)) {
			t.Fatalf("cursor %d came back as id %q (set %v)", cursor, ev.ID, ev.HasID)
		}
		if cursor <= 0 && ev.HasID {
			t.Fatalf("an online event came back with id %q", ev.ID)
		}
		wantType := typ
		if strings.ContainsAny(typ, "\r\n") {
			wantType = "" // appendEvent leaves out a type it cannot write
		}
		if ev.Type != wantType {
			t.Fatalf("type %q came back as %q", typ, ev.Type)
		}
		if end, err := p.Next(); err != nil || end.Type != "end" || end.HasID {
			t.Fatalf("the following online event: %+v, %v", end, err)
		}
	})
}
