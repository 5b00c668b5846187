// Package jsonw writes JSON by hand for the hot paths that cannot afford
// encoding/json's reflection: the same bytes, without the work.
package jsonw

import (
	"math/bits"
	"strings"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way encoding/json writes it:
// invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are escaped, and with
// html so are <, > and & (json.Marshal's default; without it the output is
// json.Encoder's with SetEscapeHTML(false)).
func AppendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	// Valid UTF-8 without U+2028 or U+2029, nearly all text, has only ASCII
	// to escape: it goes eight bytes at a time, and what is not ASCII is
	// written as it is. Shorter than a word (a streamed token), checking
	// first would cost more than it saves.
	fast := len(s) >= 8 && utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")
	for i := 0; i < len(s); {
		if fast && i+8 <= len(s) {
			m := special(word(s, i), html)
			if m == 0 {
				i += 8 // eight bytes written as they are
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // to the first that is not
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		if fast {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// word is the eight bytes of s from i, the first in the low byte (the
// compiler makes it one load).
func word(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// zeros marks the bytes of x that are 0 with their high bit. Only the
// lowest mark is sure (a borrow may mark a byte above a zero), which is the
// one special uses.
func zeros(x uint64) uint64 { return (x - ones) &^ x & highs }

// special marks with their high bit the ASCII bytes of x that AppendString
// escapes: control characters, quote and backslash, and with html <, > and
// &. The lowest mark is the first such byte; there is none when it returns
// 0.
func special(x uint64, html bool) uint64 {
	m := (x-0x20*ones)&^x&highs | zeros(x^'"'*ones) | zeros(x^'\\'*ones)
	if html {
		m |= zeros(x^'<'*ones) | zeros(x^'>'*ones) | zeros(x^'&'*ones)
	}
	return m
}
