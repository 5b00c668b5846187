// Package jsonscan walks JSON text without decoding it: what the
// allocation-free checks of request bodies and model stream chunks share.
// The methods pass over one piece at the scanner's position, leaving the
// position just past it, and most report whether it was valid JSON.
package jsonscan

import "unicode/utf8"

// Scanner is a position I in the JSON text B.
type Scanner struct {
	B []byte
	I int
}

// Space passes over whitespace.
func (s *Scanner) Space() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Lit passes over lit if the text continues with it.
func (s *Scanner) Lit(lit string) bool {
	if len(s.B)-s.I >= len(lit) && string(s.B[s.I:s.I+len(lit)]) == lit {
		s.I += len(lit)
		return true
	}
	return false
}

// SkipString passes over a string, at its opening quote, checking its escapes
// and that it holds no control character (invalid UTF-8 is accepted, as
// encoding/json does).
func (s *Scanner) SkipString() bool {
	s.I++ // the opening quote
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			s.I++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.I++
			if s.I >= len(s.B) {
				return false
			}
			switch s.B[s.I] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.I++
			case 'u':
				if len(s.B)-s.I < 5 {
					return false
				}
				for _, h := range s.B[s.I+1 : s.I+5] {
					if !isHex(h) {
						return false
					}
				}
				s.I += 5
			default:
				return false
			}
		default:
			s.I++
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// SkipNumber passes over a number of RFC 8259's grammar (no leading zero, no
// lone sign, point or exponent).
func (s *Scanner) SkipNumber() bool {
	s.Lit("-")
	start := s.I
	n := s.digits()
	if n == 0 || (n > 1 && s.B[start] == '0') {
		return false
	}
	if s.Lit(".") && s.digits() == 0 {
		return false
	}
	if s.I < len(s.B) && (s.B[s.I] == 'e' || s.B[s.I] == 'E') {
		s.I++
		if !s.Lit("+") {
			s.Lit("-")
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *Scanner) digits() int {
	start := s.I
	for s.I < len(s.B) && s.B[s.I] >= '0' && s.B[s.I] <= '9' {
		s.I++
	}
	return s.I - start
}

// Value passes over one value. An object or an array is the caller's to
// pass over: open gets its opening byte ('{' or '['), at it.
func (s *Scanner) Value(open func(c byte) bool) bool {
	if s.I >= len(s.B) {
		return false
	}
	switch c := s.B[s.I]; c {
	case '{', '[':
		return open(c)
	case '"':
		return s.SkipString()
	case 't':
		return s.Lit("true")
	case 'f':
		return s.Lit("false")
	case 'n':
		return s.Lit("null")
	}
	return s.SkipNumber()
}

// Object passes over an object, whose keys must be plain strings (see
// PlainString), calling field with each key, positioned at its value (or
// the whitespace before it); field passes over the value, or returns false
// to give up.
func (s *Scanner) Object(field func(key []byte) bool) bool {
	s.Space()
	if !s.Lit("{") {
		return false
	}
	s.Space()
	if s.Lit("}") {
		return true
	}
	for {
		s.Space()
		key, ok := s.PlainString()
		if !ok {
			return false
		}
		s.Space()
		if !s.Lit(":") || !field(key) {
			return false
		}
		s.Space()
		if s.Lit("}") {
			return true
		}
		if !s.Lit(",") {
			return false
		}
	}
}

// Array passes over an array, calling elem positioned at each element (or
// the whitespace before it); elem passes over it, or returns false to give
// up.
func (s *Scanner) Array(elem func() bool) bool {
	s.Space()
	if !s.Lit("[") {
		return false
	}
	s.Space()
	if s.Lit("]") {
		return true
	}
	for {
		if !elem() {
			return false
		}
		s.Space()
		if s.Lit("]") {
			return true
		}
		if !s.Lit(",") {
			return false
		}
	}
}

// PlainString reads a string without escapes, of valid UTF-8; the bytes
// are B's.
func (s *Scanner) PlainString() ([]byte, bool) {
	if !s.Lit(`"`) {
		return nil, false
	}
	start := s.I
	ascii := true
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			str := s.B[start:s.I]
			s.I++
			if !ascii && !utf8.Valid(str) {
				return nil, false
			}
			return str, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.I++
	}
	return nil, false
}
