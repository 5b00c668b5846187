package agentik_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/agentik/agentik"
)

// FuzzParseSearchQuery: a query is refused as invalid, or parsed into at
// most MaxSearchTerms words of letters and digits only, none of the
// index's query syntax; the snippet of any text never panics and stays
// within its bound.
func FuzzParseSearchQuery(f *testing.F) {
	for _, s := range []string{"alpha", `"alpha" OR *`, "NEAR(a b)", "scope:x", "{body}:a", "a\x00", "é ü", "", "   ", "\xff", "a:* & !b | c"} {
		f.Add(s, "some text with alpha in it")
	}
	f.Fuzz(func(t *testing.T, s, text string) {
		q, err := agentik.ParseSearchQuery(s)
		if err != nil {
			if agentik.ErrorCode(err) != agentik.EInvalid {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if len(q.Terms) == 0 || len(q.Terms) > agentik.MaxSearchTerms {
			t.Fatalf("%q: %d terms", s, len(q.Terms))
		}
		for _, term := range q.Terms {
			if strings.IndexFunc(term, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) >= 0 {
				t.Fatalf("%q: term %q holds more than letters and digits", s, term)
			}
		}
		if sn := agentik.Snippet(text, q); len([]rune(sn)) > agentik.SnippetRunes+2 {
			t.Fatalf("snippet of %d runes", len([]rune(sn)))
		}
	})
}

func TestSnippet(t *testing.T) {
	q, _ := agentik.ParseSearchQuery("Needle")
	long := strings.Repeat("hay ", 200) + "the needle\nis here " + strings.Repeat("straw ", 200)
	got := agentik.Snippet(long, q)
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || !strings.Contains(got, "the needle is here") {
		t.Fatalf("snippet %q", got)
	}
	if got := agentik.Snippet("short needle text", q); got != "short needle text" {
		t.Fatalf("short snippet %q", got)
	}
	if got := agentik.Snippet(strings.Repeat("x ", 300), q); !strings.HasPrefix(got, "x x") || !strings.HasSuffix(got, "…") {
		t.Fatalf("no word: %q", got)
	}
}
