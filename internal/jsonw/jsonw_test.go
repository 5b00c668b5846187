package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzAppendString: with html the bytes are json.Marshal's; without, an
// Encoder's with SetEscapeHTML(false).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\n\r\t\x00\x1f\x7f", "bad\xff\xfe", "é😀", "\u2028\u2029", "<&>", "\xed\xa0\x80", "\b\f/",
		// Eight bytes at a time: what to escape at each place of a word,
		// and text that is not ASCII, valid or not, around words.
		"0123456\"89abcdef", "\x1f1234567", "1234567\x7f\x00", "abcdefgh<ijklmno>pq&", "abcdefghijklmnop\\",
		"Море широкое и синее", "plain text, then \u2028 far in", "a long run of ASCII, then \xff", "ASCII then é and more ASCII text"} {
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

// BenchmarkAppendString: a chat message's text, mostly plain ASCII with a
// few characters to escape, as a model request and the event stream carry.
func BenchmarkAppendString(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"plain", strings.Repeat("The sea is wide and blue, and the waves come in slowly. ", 20)},
		{"escapes", strings.Repeat("The sea is wide and blue, and the waves come in \"slowly\".\n", 20)},
		{"cyrillic", strings.Repeat("Море широкое и синее, и волны приходят медленно. ", 20)},
		{"delta", " waves"}, // a streamed token
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(c.s))
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				buf = AppendString(buf[:0], c.s, false)
			}
		})
	}
}
