package jsonscan

import (
	"encoding/json"
	"testing"
)

// FuzzScalars: a string or a number is passed over whole exactly when
// encoding/json finds it a valid JSON text.
func FuzzScalars(f *testing.F) {
	for _, s := range []string{`"a\"b\\c\u00e9\n"`, `"\x"`, `"\u12"`, "\"a\x01\"", `"ab`,
		`0`, `-0.5e+10`, `01`, `-`, `1.`, `1e`, `1E-3`, `12.34`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		s := Scanner{B: b}
		var ok bool
		switch b[0] {
		case '"':
			ok = s.SkipString()
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			ok = s.SkipNumber()
		default:
			return
		}
		if ok {
			s.Space() // encoding/json allows whitespace after the value
		}
		whole := ok && s.I == len(b)
		if whole != json.Valid(b) {
			t.Fatalf("%q: passed over whole %v, encoding/json valid %v", b, whole, json.Valid(b))
		}
	})
}

func TestSpaceAndLit(t *testing.T) {
	s := Scanner{B: []byte(" \t\r\ntrue x")}
	s.Space()
	if !s.Lit("true") || s.Lit("x") {
		t.Fatalf("at %d", s.I)
	}
	s.Space()
	if !s.Lit("x") || s.I != len(s.B) || s.Lit("x") {
		t.Fatalf("at %d", s.I)
	}
}
