package agentik

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// MaxJSONDepth is how deeply outside JSON may nest. Real requests stay far
// below it; deeper ones only cost the decoders time and stack.
const MaxJSONDepth = 128

// MaxJSONArray is how many elements one array of outside JSON may hold.
// Decoding a huge array of tiny values costs far more memory than its bytes
// (a 16 MiB body of 600,000 content parts took hundreds of MiB); no request
// needs that many.
const MaxJSONArray = 65536

// CheckJSON refuses outside JSON that encoding/json would silently accept
// but turn into something else than what its sender wrote (RFC 8259 §8.1,
// RFC 7493): bytes that are not UTF-8 (they would become U+FFFD), duplicate
// object keys (parsers disagree on which one wins), lone UTF-16 surrogate
// escapes (U+FFFD again), nesting deeper than MaxJSONDepth, and arrays of
// more than MaxJSONArray elements (ETooLarge). Keys are
// duplicates when they differ only by case, because encoding/json matches
// them to struct fields that way (`"content"` and `"Content"` fill the same
// field, and the last one wins). Errors have
// code EMalformed and say what is wrong without quoting the input at length.
// Syntax errors are left to the caller's decoder, which reports them with
// their position; CheckJSON returns nil for them.
//
// Every facade runs it on a request body before decoding it.
func CheckJSON(b []byte) error {
	if !utf8.Valid(b) {
		return Errorf(EMalformed, "the body is not valid UTF-8")
	}
	if err := checkSurrogates(b); err != nil {
		return err
	}
	if plainJSON(b) {
		return nil
	}
	return checkTokens(b)
}

// checkTokens is CheckJSON's check of structure, token by token.
func checkTokens(b []byte) error {
	// Each open object keeps the keys seen so far; arrays push nil.
	type frame struct {
		keys      map[string]struct{}
		expectKey bool
		elements  int // arrays: direct elements so far
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // end of input, or a syntax error the decoder will name
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].keys == nil {
			if d, ok := tok.(json.Delim); !ok || d == '{' || d == '[' {
				if stack[top].elements++; stack[top].elements > MaxJSONArray {
					return Errorf(ETooLarge, "the body has an array of more than %d elements", MaxJSONArray)
				}
			}
		}
		if top >= 0 && stack[top].keys != nil {
			if stack[top].expectKey {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:top]
					continue
				}
				k, _ := tok.(string)
				folded := foldKey(k)
				if _, dup := stack[top].keys[folded]; dup {
					return Errorf(EMalformed, "the body has a duplicate key %q (keys are compared without case)", truncateKey(k))
				}
				stack[top].keys[folded] = struct{}{}
				stack[top].expectKey = false
				continue
			}
			stack[top].expectKey = true // this token starts the member's value
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(stack) >= MaxJSONDepth {
					return Errorf(EMalformed, "the body nests deeper than %d levels", MaxJSONDepth)
				}
				f := frame{}
				if d == '{' {
					f = frame{keys: map[string]struct{}{}, expectKey: true}
				}
				stack = append(stack, f)
			case ']':
				if top >= 0 {
					stack = stack[:top]
				}
			}
		}
	}
}

// checkSurrogates refuses a \uD800–\uDFFF escape that is not half of a
// high-low pair. It walks string literals only, honouring escapes.
func checkSurrogates(b []byte) error {
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !in {
			if c == '"' {
				in = true
			}
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 >= len(b) {
				return nil
			}
			if b[i+1] != 'u' {
				i++ // skip the escaped character
				continue
			}
			r, ok := hex4(b, i+2)
			if !ok {
				return nil // a syntax error: the decoder reports it
			}
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return Errorf(EMalformed, "the body has a lone UTF-16 surrogate escape")
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := -1, i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u'
				if ok {
					lo, ok = hex4(b, i+3)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return Errorf(EMalformed, "the body has a lone UTF-16 surrogate escape")
				}
				i += 6
			}
		}
	}
	return nil
}

func hex4(b []byte, at int) (int, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	r := 0
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// foldKey maps keys that encoding/json treats as one field name to one
// string: ASCII letters upper-cased, every other rune replaced by the
// smallest rune of its Unicode simple-fold orbit (so "K", "k" and the Kelvin
// sign fold alike, as bytes.EqualFold has them).
func foldKey(k string) string {
	b := make([]byte, 0, len(k))
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z':
			b = append(b, byte(r-'a'+'A'))
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		default:
			for {
				f := unicode.SimpleFold(r)
				if f <= r {
					r = f
					break
				}
				r = f
			}
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

func truncateKey(k string) string {
	if len(k) <= 40 {
		return k
	}
	for i := 40; i > 0; i-- {
		if utf8.RuneStart(k[i]) {
			return k[:i] + "…"
		}
	}
	return ""
}
