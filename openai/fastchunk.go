package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// chunkScratch is the storage a stream's chunks are decoded into, one
// after the other: a chunk's choices and strings point into it until the
// next chunk is decoded. (Allocated per chunk, with the chunk itself, they
// were about 70 of the 790 objects a turn allocated.)
type chunkScratch struct {
	choices [1]wireChoice
	strs    [4]string
}

// fastChunk decodes the common chunk — text or reasoning deltas and finish
// reasons, no tool calls, usage or error — into s without encoding/json's
// reflection, which was the adapter's largest cost after the request. It
// reports ok only when it decoded raw exactly as json.Unmarshal into
// wireChunk would (FuzzFastChunk holds it to that); for anything else
// (tool calls, usage, an error, a key that differs from a field's name
// only in case, a duplicate field, an escape in a string it keeps, invalid
// JSON) it reports !ok and the caller decodes with encoding/json.
func fastChunk(raw []byte, s *chunkScratch) (c wireChunk, ok bool) {
	p := chunkParser{b: raw, choiceBuf: s.choices[:0], strs: s.strs[:0]}
	p.space()
	if !p.object(func(key []byte) bool {
		switch {
		case string(key) == "choices":
			return p.once(&p.seenChoices) && p.choices(&c)
		case string(key) == "usage":
			return p.null() // anything else there: encoding/json decodes it
		case string(key) == "error":
			if !p.null() {
				return false
			}
			c.Error = json.RawMessage("null") // what encoding/json keeps
			return true
		case isFold(key, "choices", "usage", "error"):
			return false
		}
		return p.skip(0)
	}) {
		return wireChunk{}, false
	}
	p.space()
	if p.i != len(p.b) {
		return wireChunk{}, false
	}
	return c, true
}

type chunkParser struct {
	b           []byte
	i           int
	seenChoices bool
	choiceBuf   []wireChoice // where the choices go (a chunkScratch's)
	strs        []string     // where the strings kept go (a chunkScratch's)
}

// isFold reports whether key matches one of names case-insensitively, as
// encoding/json matches keys to fields.
func isFold(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

func (p *chunkParser) once(seen *bool) bool {
	if *seen {
		return false // a duplicate: encoding/json's last-wins is not modelled
	}
	*seen = true
	return true
}

func (p *chunkParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *chunkParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *chunkParser) null() bool {
	p.space()
	return p.lit("null")
}

// object parses an object, calling field with each key, positioned at its
// value; field returns false to give up.
func (p *chunkParser) object(field func(key []byte) bool) bool {
	p.space()
	if !p.lit("{") {
		return false
	}
	p.space()
	if p.lit("}") {
		return true
	}
	for {
		p.space()
		key, ok := p.plainString()
		if !ok {
			return false
		}
		p.space()
		if !p.lit(":") || !field(key) {
			return false
		}
		p.space()
		if p.lit("}") {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

// array parses an array, calling elem positioned at each element.
func (p *chunkParser) array(elem func() bool) bool {
	p.space()
	if !p.lit("[") {
		return false
	}
	p.space()
	if p.lit("]") {
		return true
	}
	for {
		if !elem() {
			return false
		}
		p.space()
		if p.lit("]") {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

// plainString reads a string without escapes, of valid UTF-8; the bytes
// are raw's.
func (p *chunkParser) plainString() ([]byte, bool) {
	if !p.lit(`"`) {
		return nil, false
	}
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

// optString reads a string or null into *dst (nil for null).
func (p *chunkParser) optString(dst **string) bool {
	p.space()
	if p.lit("null") {
		*dst = nil
		return true
	}
	b, ok := p.plainString()
	if !ok {
		return false
	}
	// Past the scratch's capacity, append moves on to a new array: the
	// strings already kept stay where they are.
	p.strs = append(p.strs, internString(b))
	*dst = &p.strs[len(p.strs)-1]
	return true
}

// internString is string(b), without a copy for the finish reasons.
func internString(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	}
	return string(b)
}

func (p *chunkParser) choices(c *wireChunk) bool {
	p.space()
	if p.lit("null") {
		return true
	}
	c.Choices = p.choiceBuf[:0] // [] decodes to an empty slice, not nil
	return p.array(func() bool {
		var ch wireChoice
		var seenIndex, seenDelta, seenFinish bool
		if !p.object(func(key []byte) bool {
			switch string(key) {
			case "index":
				return p.once(&seenIndex) && p.smallInt(&ch.Index)
			case "delta":
				return p.once(&seenDelta) && p.delta(&ch.Delta)
			case "finish_reason":
				return p.once(&seenFinish) && p.optString(&ch.FinishReason)
			}
			if isFold(key, "index", "delta", "finish_reason") {
				return false
			}
			return p.skip(0)
		}) {
			return false
		}
		c.Choices = append(c.Choices, ch)
		return true
	})
}

func (p *chunkParser) delta(d *wireDelta) bool {
	p.space()
	if p.lit("null") {
		return true
	}
	var seenContent, seenRC, seenR bool
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			return p.once(&seenContent) && p.optString(&d.Content)
		case "reasoning_content":
			return p.once(&seenRC) && p.optString(&d.ReasoningContent)
		case "reasoning":
			return p.once(&seenR) && p.optString(&d.Reasoning)
		}
		if isFold(key, "content", "reasoning_content", "reasoning", "tool_calls") {
			return false // tool calls, or a case variant: encoding/json
		}
		return p.skip(0)
	})
}

// smallInt reads a non-negative integer of at most 9 digits, or null
// (which leaves *dst alone, as encoding/json does).
func (p *chunkParser) smallInt(dst *int) bool {
	p.space()
	if p.lit("null") {
		return true
	}
	start, n := p.i, 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + int(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > 9 || (digits > 1 && p.b[start] == '0') {
		return false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	*dst = n
	return true
}

// maxSkipDepth bounds the nesting of the values skipped; deeper input goes
// to encoding/json.
const maxSkipDepth = 32

// skip passes over one JSON value, checking it is valid.
func (p *chunkParser) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	p.space()
	if p.i >= len(p.b) {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(func([]byte) bool { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() bool { return p.skip(depth + 1) })
	case c == '"':
		return p.skipString()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	default:
		return p.skipNumber()
	}
}

// skipString passes over a string, escapes included, checking it is valid
// JSON (invalid UTF-8 is accepted, as encoding/json does).
func (p *chunkParser) skipString() bool {
	p.i++ // the opening quote
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return false
			}
			switch p.b[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if len(p.b)-p.i < 5 {
					return false
				}
				for _, h := range p.b[p.i+1 : p.i+5] {
					if !isHex(h) {
						return false
					}
				}
				p.i += 5
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber passes over a number of the JSON grammar.
func (p *chunkParser) skipNumber() bool {
	p.lit("-")
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	start := p.i
	n := digits()
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return false
	}
	if p.lit(".") && digits() == 0 {
		return false
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if !p.lit("+") {
			p.lit("-")
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
