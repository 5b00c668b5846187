package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: with html the bytes are json.Marshal's; without, an
// Encoder's with SetEscapeHTML(false).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\r\t\x00\x1f\x7f", "bad\xff\xfe", "é😀", "\u2028\u2029", "<&>", "\xed\xa0\x80", "\b\f/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, json.Marshal %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s, false); !bytes.Equal(got, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) {
			t.Fatalf("%q: got %s, encoder %s", s, got, buf.Bytes())
		}
	})
}
