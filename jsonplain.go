package agentik

import "github.com/agentik/agentik/internal/jsonscan"

// plainJSON reports whether b, whose UTF-8 and surrogate escapes were
// checked, is one JSON value that CheckJSON's token walk would find nothing
// wrong with, by a single pass that allocates nothing:
// valid JSON, objects of at most plainKeys keys that are ASCII without
// escapes and differ by more than case, nesting and arrays within
// MaxJSONDepth and MaxJSONArray. A request body nearly always is; for
// anything else it reports false and the token walk decides (it then
// names the problem, or leaves a syntax error to the decoder). The token
// walk cost a message's body 65 allocations (FuzzPlainJSON checks that
// whatever this pass takes, the walk accepts).
func plainJSON(b []byte) bool {
	p := plainScan{jsonscan.Scanner{B: b}}
	p.Space()
	if !p.value(0) {
		return false
	}
	p.Space()
	return p.I == len(b)
}

// plainKeys bounds the keys of an object the plain pass compares pairwise.
const plainKeys = 16

type plainScan struct{ jsonscan.Scanner }

// value passes over one value; depth is the number of containers open
// around it.
func (p *plainScan) value(depth int) bool {
	return p.Value(func(c byte) bool {
		if depth == MaxJSONDepth {
			return false
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		n := 0
		return p.Array(func() bool {
			n++
			p.Space()
			return n <= MaxJSONArray && p.value(depth+1)
		})
	})
}

// object passes over an object whose keys are ASCII and differ by more
// than case (encoding/json matches keys to fields without case).
func (p *plainScan) object(depth int) bool {
	var keys [plainKeys][]byte
	n := 0
	return p.Object(func(key []byte) bool {
		if n == plainKeys || !isASCII(key) {
			return false
		}
		for _, k := range keys[:n] {
			if equalASCIIFold(k, key) {
				return false
			}
		}
		keys[n] = key
		n++
		p.Space()
		return p.value(depth)
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// equalASCIIFold reports whether two ASCII keys are one field name to
// encoding/json: equal but for the case of their letters.
func equalASCIIFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x >= 'a' && x <= 'z' {
			x -= 'a' - 'A'
		}
		if y >= 'a' && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
