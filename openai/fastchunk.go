package openai

import (
	"bytes"
	"encoding/json"

	"github.com/agentik/agentik/internal/jsonscan"
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
	p := chunkParser{Scanner: jsonscan.Scanner{B: raw}, choiceBuf: s.choices[:0], strs: s.strs[:0]}
	p.Space()
	if !p.Object(func(key []byte) bool {
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
	p.Space()
	if p.I != len(p.B) {
		return wireChunk{}, false
	}
	return c, true
}

type chunkParser struct {
	jsonscan.Scanner
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

func (p *chunkParser) null() bool {
	p.Space()
	return p.Lit("null")
}

// optString reads a string or null into *dst (nil for null).
func (p *chunkParser) optString(dst **string) bool {
	p.Space()
	if p.Lit("null") {
		*dst = nil
		return true
	}
	b, ok := p.PlainString()
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
	p.Space()
	if p.Lit("null") {
		return true
	}
	c.Choices = p.choiceBuf[:0] // [] decodes to an empty slice, not nil
	return p.Array(func() bool {
		var ch wireChoice
		var seenIndex, seenDelta, seenFinish bool
		if !p.Object(func(key []byte) bool {
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
	p.Space()
	if p.Lit("null") {
		return true
	}
	var seenContent, seenRC, seenR bool
	return p.Object(func(key []byte) bool {
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
	p.Space()
	if p.Lit("null") {
		return true
	}
	start, n := p.I, 0
	for p.I < len(p.B) && p.B[p.I] >= '0' && p.B[p.I] <= '9' {
		n = n*10 + int(p.B[p.I]-'0')
		p.I++
	}
	digits := p.I - start
	if digits == 0 || digits > 9 || (digits > 1 && p.B[start] == '0') {
		return false
	}
	if p.I < len(p.B) {
		switch p.B[p.I] {
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
	p.Space()
	return p.Value(func(c byte) bool {
		if c == '{' {
			return p.Object(func([]byte) bool { return p.skip(depth + 1) })
		}
		return p.Array(func() bool { return p.skip(depth + 1) })
	})
}
