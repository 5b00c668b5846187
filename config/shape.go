package config

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The loader bounds the shape of the file before go.yaml.in/yaml/v3 builds
// its tree: the library builds the whole document in memory first (about a
// kilobyte per level of a deeply nested one, 200 bytes per value of a wide
// one), and the loader then walks it with a path per key, which costs the
// square of the depth. A configuration is a few kilobytes, a few levels
// deep; a file nested 9,999 deep used to cost 300 MiB before it was refused.
//
// shapeOf reads the text as the library's scanner does (its tokens,
// indentation stack, flow levels and simple keys, mirrored from
// scannerc.go), without building anything, and stops at the first line
// where the document would nest deeper than maxDepth collections or hold
// more than maxValues values. Where the library would stop at a syntax error,
// shapeOf stops too and lets the library report it. checkTree then bounds
// what the aliases would expand to (the "billion laughs") and the paths the
// loader gives every key, on the tree the library built.
const (
	maxDepth  = 64
	maxValues = 100_000
	// maxPathBytes bounds the sum of the lengths of every key's path
	// ("agents[0].tools.mcp_servers.fs"), which the loader indexes.
	maxPathBytes = maxFileBytes
)

// shapeError is a file whose shape is refused, at the line where it
// crossed the bound.
type shapeError struct {
	line    int
	problem string
}

func shapeOf(b []byte) *shapeError {
	if bytes.HasPrefix(b, []byte{0xFE, 0xFF}) || bytes.HasPrefix(b, []byte{0xFF, 0xFE}) {
		return &shapeError{problem: "the file is UTF-16: save it as UTF-8"}
	}
	s := &shapeScanner{b: b, indent: -1, allowed: true}
	if bytes.HasPrefix(b, utf8BOM) {
		s.pos = len(utf8BOM) // the library's reader drops it
	}
	return s.run()
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

type shapeScanner struct {
	b   []byte
	pos int
	// line (from 1), column and index count characters as the library's
	// marks do: index is what bounds a simple key to 1024 characters.
	line, col, index int

	indent  int           // the library's parser.indent: -1, or the column of the innermost block collection
	indents []indentFrame // one per open block collection
	flows   []flowFrame   // one per open flow collection
	allowed bool          // the library's simple_key_allowed
	key     simpleKey     // the block context's possible simple key
	values  int           // an upper bound on the nodes of the tree so far
	deepest int           // an upper bound on its depth so far
	stopped bool          // the library would stop here with a syntax error
	bom     bool          // a byte-order mark starts a line
}

type indentFrame struct {
	col        int
	mapping    bool
	indentless bool // a sequence at the mapping's own column (key:\n- item) is one more level
}

type flowFrame struct {
	seq, pair bool // [a: b] is a single-pair mapping inside the sequence
	// entryDeepest is the depth the entry reached so far: when a ':'
	// turns the entry into a pair, its key (perhaps [[…]]) is one level
	// deeper than it was scanned at.
	entryDeepest int
}

type simpleKey struct {
	possible         bool
	line, index, col int
	deepest          int // as entryDeepest: [[x]]: y nests the key in a mapping only at the ':'
}

func (s *shapeScanner) depth() int {
	d := len(s.indents) + len(s.flows)
	for _, f := range s.indents {
		if f.indentless {
			d++
		}
	}
	for _, f := range s.flows {
		if f.pair {
			d++
		}
	}
	return d
}

func (s *shapeScanner) run() *shapeError {
	for !s.stopped {
		s.toNextToken()
		if s.bom {
			return &shapeError{line: s.line + 1, problem: "a byte-order mark (U+FEFF) starts the line: save the file as plain UTF-8"}
		}
		if s.stopped || s.end() {
			return nil
		}
		s.unroll(s.col)
		s.token()
		d := s.depth()
		s.deepest = max(s.deepest, d)
		if s.key.possible {
			s.key.deepest = max(s.key.deepest, d)
		}
		for i := range s.flows {
			s.flows[i].entryDeepest = max(s.flows[i].entryDeepest, d)
		}
		if s.deepest > maxDepth {
			return &shapeError{line: s.line + 1, problem: fmt.Sprintf("nested deeper than %d levels: a configuration needs a few", maxDepth)}
		}
		if s.values > maxValues {
			return &shapeError{line: s.line + 1, problem: fmt.Sprintf("more than %d keys, items and values: a configuration holds a few hundred", maxValues)}
		}
	}
	return nil
}

// at returns the byte at pos+i, 0 past the end (the library's reader ends
// the text with a NUL).
func (s *shapeScanner) at(i int) byte {
	if s.pos+i < len(s.b) {
		return s.b[s.pos+i]
	}
	return 0
}

func (s *shapeScanner) end() bool { return s.at(0) == 0 }

// breakAt reports whether a line break starts at pos+i: CR, LF, NEL, LS or
// PS, as the library counts them.
func (s *shapeScanner) breakAt(i int) bool {
	switch c := s.at(i); c {
	case '\r', '\n':
		return true
	case 0xC2:
		return s.at(i+1) == 0x85
	case 0xE2:
		return s.at(i+1) == 0x80 && (s.at(i+2) == 0xA8 || s.at(i+2) == 0xA9)
	}
	return false
}

func (s *shapeScanner) blankAt(i int) bool { return s.at(i) == ' ' || s.at(i) == '\t' }

func (s *shapeScanner) blankzAt(i int) bool {
	return s.blankAt(i) || s.breakAt(i) || s.at(i) == 0
}

// skip moves over one character.
func (s *shapeScanner) skip() {
	c := s.b[s.pos]
	w := 1
	switch {
	case c&0xE0 == 0xC0:
		w = 2
	case c&0xF0 == 0xE0:
		w = 3
	case c&0xF8 == 0xF0:
		w = 4
	}
	s.pos = min(s.pos+w, len(s.b))
	s.col++
	s.index++
}

// skipLine moves over one line break.
func (s *shapeScanner) skipLine() {
	if s.at(0) == '\r' && s.at(1) == '\n' {
		s.pos += 2
		s.index += 2
	} else {
		s.skip()
	}
	s.col = 0
	s.line++
}

// docIndicator reports whether --- or ... starts the line here.
func (s *shapeScanner) docIndicator() bool {
	c := s.at(0)
	return s.col == 0 && (c == '-' || c == '.') && s.at(1) == c && s.at(2) == c && s.blankzAt(3)
}

// toNextToken skips spaces, comments and line breaks
// (yaml_parser_scan_to_next_token).
func (s *shapeScanner) toNextToken() {
	for {
		if s.col == 0 && s.pos > 0 && bytes.HasPrefix(s.b[s.pos:], utf8BOM) {
			// The library skips a byte-order mark at the start of a line
			// by a test of its buffer that does not always look there:
			// nothing to mirror, and nothing a configuration needs.
			s.bom = true
			return
		}
		for s.at(0) == ' ' || (s.at(0) == '\t' && (len(s.flows) > 0 || !s.allowed)) {
			s.skip()
		}
		if s.at(0) == '#' {
			for !s.breakAt(0) && !s.end() {
				s.skip()
			}
		}
		if !s.breakAt(0) {
			return
		}
		s.skipLine()
		if len(s.flows) == 0 {
			s.allowed = true
		}
	}
}

func (s *shapeScanner) unroll(col int) {
	if len(s.flows) > 0 {
		return
	}
	for s.indent > col {
		s.indents = s.indents[:len(s.indents)-1]
		s.indent = -1
		if n := len(s.indents); n > 0 {
			s.indent = s.indents[n-1].col
		}
	}
}

// roll opens a block collection at col unless one is open there; it
// reports whether it did.
func (s *shapeScanner) roll(col int, mapping bool) bool {
	if len(s.flows) > 0 || s.indent >= col {
		return false
	}
	s.indents = append(s.indents, indentFrame{col: col, mapping: mapping})
	s.indent = col
	s.values++
	return true
}

// saveKey and removeKey track the block context's simple key only: in a
// flow collection the key's column moves no indentation.
func (s *shapeScanner) saveKey() {
	if len(s.flows) == 0 && s.allowed {
		s.key = simpleKey{possible: true, line: s.line, index: s.index, col: s.col, deepest: s.depth()}
	}
}

func (s *shapeScanner) removeKey() {
	if len(s.flows) == 0 {
		s.key.possible = false
	}
}

// pair marks the innermost flow sequence's entry as a single-pair mapping.
func (s *shapeScanner) pair() {
	if n := len(s.flows); n > 0 && s.flows[n-1].seq && !s.flows[n-1].pair {
		s.flows[n-1].pair = true
		s.deepest = max(s.deepest, s.flows[n-1].entryDeepest+1)
	}
}

// token moves over one token (yaml_parser_fetch_next_token): the
// indicators whose meaning depends on what follows them or on the context
// here, the others by their first character (tokenAt).
func (s *shapeScanner) token() {
	c, flow := s.at(0), len(s.flows) > 0
	switch {
	case s.col == 0 && c == '%':
		s.directive()
	case s.docIndicator():
		s.documentIndicator()
	case c == '-' && s.blankzAt(1):
		s.blockEntry(flow)
	case c == '?' && (flow || s.blankzAt(1)):
		s.keyIndicator(flow)
	case c == ':' && (flow || s.blankzAt(1)):
		s.valueIndicator(flow)
	case (c == '|' || c == '>') && !flow:
		s.removeKey()
		s.allowed = true
		s.blockScalar()
		s.values++
	default:
		s.tokenAt(c)
	}
}

// emptyValue counts, for a node that starts directly in a flow mapping,
// the empty value the library gives a key written without ':' ("{a}").
func (s *shapeScanner) emptyValue() {
	if n := len(s.flows); n > 0 && !s.flows[n-1].seq {
		s.values++
	}
}

// tokenAt moves over a token told by its first character c alone.
func (s *shapeScanner) tokenAt(c byte) {
	switch c {
	case '[', '{':
		s.saveKey()
		s.emptyValue()
		s.flows = append(s.flows, flowFrame{seq: c == '['})
		s.values++
		s.allowed = true
		s.skip()
	case ']', '}':
		s.removeKey()
		if n := len(s.flows); n > 0 {
			s.flows = s.flows[:n-1]
		}
		s.allowed = false
		s.skip()
	case ',':
		s.removeKey()
		if n := len(s.flows); n > 0 {
			s.flows[n-1].pair = false
			s.flows[n-1].entryDeepest = 0
		}
		s.allowed = true
		s.skip()
	case '*', '&':
		s.anchor()
	case '!':
		// A tag ends at a blank or the library stops: whatever it holds is
		// no structure.
		s.saveKey()
		s.allowed = false
		for !s.blankzAt(0) {
			s.skip()
		}
		s.values++ // the empty value a tag may stand for
		s.emptyValue()
	case '\'', '"':
		s.saveKey()
		s.allowed = false
		s.quoted(c)
		s.values++
		s.emptyValue()
	case '\t', '@', '`', '%', '|', '>': // '|' and '>' here: in a flow collection
		s.stopped = true // "found character that cannot start any token"
	default:
		s.saveKey()
		s.allowed = false
		s.emptyValue()
		s.plain()
		s.values++
	}
}

// directive moves over a %-directive line.
func (s *shapeScanner) directive() {
	s.unroll(-1)
	s.removeKey()
	s.allowed = false
	for !s.breakAt(0) && !s.end() {
		s.skip()
	}
}

// documentIndicator moves over --- or ....
func (s *shapeScanner) documentIndicator() {
	s.unroll(-1)
	s.removeKey()
	s.allowed = false
	s.skip()
	s.skip()
	s.skip()
	s.values++ // the document, perhaps empty
}

// blockEntry moves over a '-' that starts a sequence item.
func (s *shapeScanner) blockEntry(flow bool) {
	if !flow && !s.allowed {
		s.stopped = true // "block sequence entries are not allowed in this context"
		return
	}
	if !flow {
		if n := len(s.indents); n > 0 && s.indent == s.col && s.indents[n-1].mapping {
			s.indents[n-1].indentless = true
		}
		s.roll(s.col, false)
	}
	s.values++ // an item, perhaps empty
	s.allowed = true
	s.removeKey()
	s.skip()
}

// keyIndicator moves over a '?' that starts a complex key.
func (s *shapeScanner) keyIndicator(flow bool) {
	if !flow && !s.allowed {
		s.stopped = true // "mapping keys are not allowed in this context"
		return
	}
	s.roll(s.col, true)
	s.pair()
	s.values += 2 // a key and a value, perhaps empty
	s.allowed = !flow
	s.removeKey()
	s.skip()
}

// valueIndicator moves over a ':' that starts a mapping value: of the
// simple key before it on this line, or of an empty key.
func (s *shapeScanner) valueIndicator(flow bool) {
	if k := s.key; !flow && k.possible && k.line == s.line && k.index+1024 >= s.index {
		if s.roll(k.col, true) {
			s.deepest = max(s.deepest, k.deepest+1)
		}
		s.key.possible = false
		s.allowed = false
	} else {
		if !flow && !s.allowed {
			s.stopped = true // "mapping values are not allowed in this context"
			return
		}
		s.roll(s.col, true)
		s.allowed = !flow
	}
	s.pair()
	s.values += 2
	s.skip()
}

// anchor moves over an anchor (&name) or an alias (*name).
func (s *shapeScanner) anchor() {
	s.saveKey()
	s.allowed = false
	s.skip()
	for a := s.at(0); a >= '0' && a <= '9' || a >= 'A' && a <= 'Z' || a >= 'a' && a <= 'z' || a == '_' || a == '-'; a = s.at(0) {
		s.skip()
	}
	if !s.blankzAt(0) && !bytes.ContainsRune([]byte("?:,]}%@`"), rune(s.at(0))) {
		s.stopped = true
	}
	s.values++ // an alias, or the empty value an anchor may name
	s.emptyValue()
}

// plain moves over a plain scalar, which may go on over lines indented
// more than the block it is in (yaml_parser_scan_plain_scalar).
func (s *shapeScanner) plain() {
	indent := s.indent + 1
	flow := len(s.flows) > 0
	leadingBlanks := false
	for {
		if s.docIndicator() || s.at(0) == '#' {
			break
		}
		for !s.blankzAt(0) {
			c := s.at(0)
			if c == ':' && s.blankzAt(1) || flow && (c == ',' || c == '?' || c == '[' || c == ']' || c == '{' || c == '}') {
				break
			}
			leadingBlanks = false
			s.skip()
		}
		if !s.blankAt(0) && !s.breakAt(0) {
			break
		}
		for s.blankAt(0) || s.breakAt(0) {
			if s.blankAt(0) {
				if leadingBlanks && s.col < indent && s.at(0) == '\t' {
					s.stopped = true
					return
				}
				s.skip()
			} else {
				s.skipLine()
				leadingBlanks = true
			}
		}
		if !flow && s.col < indent {
			break
		}
	}
	if leadingBlanks {
		s.allowed = true
	}
}

// quoted moves over a single- or double-quoted scalar
// (yaml_parser_scan_flow_scalar).
func (s *shapeScanner) quoted(q byte) {
	s.skip()
	for {
		if s.docIndicator() || s.end() {
			s.stopped = true
			return
		}
		switch c := s.at(0); {
		case q == '\'' && c == '\'' && s.at(1) == '\'':
			s.skip()
			s.skip()
		case c == q:
			s.skip()
			return
		case q == '"' && c == '\\' && s.breakAt(1):
			s.skip()
			s.skipLine()
		case q == '"' && c == '\\':
			s.skip()
			if !s.end() {
				s.skip()
			}
		case s.breakAt(0):
			s.skipLine()
		default:
			s.skip()
		}
	}
}

// blockScalar moves over a literal (|) or folded (>) scalar: its header,
// then every line indented at least as much as its first
// (yaml_parser_scan_block_scalar).
func (s *shapeScanner) blockScalar() {
	s.skip()
	increment := 0
	for range 2 {
		switch c := s.at(0); {
		case c == '+' || c == '-':
			s.skip()
		case c >= '1' && c <= '9' && increment == 0:
			increment = int(c - '0')
			s.skip()
		case c == '0':
			s.stopped = true
			return
		}
	}
	for s.blankAt(0) {
		s.skip()
	}
	if s.at(0) == '#' {
		for !s.breakAt(0) && !s.end() {
			s.skip()
		}
	}
	if !s.breakAt(0) && !s.end() {
		s.stopped = true
		return
	}
	if s.breakAt(0) {
		s.skipLine()
	}
	indent := 0
	if increment > 0 {
		indent = increment
		if s.indent >= 0 {
			indent = s.indent + increment
		}
	}
	if !s.blockBreaks(&indent) {
		return
	}
	for s.col == indent && !s.end() {
		for !s.breakAt(0) && !s.end() {
			s.skip()
		}
		if s.breakAt(0) {
			s.skipLine()
		}
		if !s.blockBreaks(&indent) {
			return
		}
	}
}

// blockBreaks moves over the indentation and the empty lines of a block
// scalar, and sets its indentation from its first line when the header did
// not (yaml_parser_scan_block_scalar_breaks).
func (s *shapeScanner) blockBreaks(indent *int) bool {
	maxIndent := 0
	for {
		for (*indent == 0 || s.col < *indent) && s.at(0) == ' ' {
			s.skip()
		}
		maxIndent = max(maxIndent, s.col)
		if (*indent == 0 || s.col < *indent) && s.at(0) == '\t' {
			s.stopped = true
			return false
		}
		if !s.breakAt(0) {
			break
		}
		s.skipLine()
	}
	if *indent == 0 {
		*indent = max(maxIndent, s.indent+1, 1)
	}
	return true
}

// checkTree bounds, on the tree the library built, what the loader and the
// library's decoding will make of it: the depth, the number of values and
// the bytes of the scalars once every alias is replaced by what it names
// (ten aliases of ten aliases of … a few lines long grow as powers of ten),
// and the paths the loader gives every key.
func checkTree(root *yaml.Node) *shapeError {
	t := &treeCheck{memo: map[*yaml.Node]treeCost{}}
	t.cost(root, 0, 0)
	return t.err
}

type treeCheck struct {
	memo  map[*yaml.Node]treeCost // anchored nodes, as aliases find them
	total treeCost                // of the expanded document so far
	paths int
	err   *shapeError
}

type treeCost struct {
	values, bytes, height int
}

// cost returns the cost of n expanded; depth is the number of collections
// around it, pathLen the length of its path.
func (t *treeCheck) cost(n *yaml.Node, depth, pathLen int) treeCost {
	if t.err != nil {
		return treeCost{}
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		c, ok := t.memo[n.Alias]
		if !ok {
			// An alias inside what it names: the library refuses it when
			// it decodes; count it once.
			c = treeCost{values: 1}
		}
		t.add(n, c, depth)
		return c
	}
	if n.Anchor != "" {
		t.memo[n] = treeCost{values: 1} // until computed: see above
	}
	c := treeCost{values: 1, bytes: len(n.Value)}
	inner := depth
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		c.height = 1
		inner++
	}
	t.add(n, c, depth)
	height := 0
	for i, child := range n.Content {
		childPath := pathLen
		switch n.Kind {
		case yaml.MappingNode:
			if i%2 == 1 {
				childPath = pathLen + 1 + len(n.Content[i-1].Value)
				t.paths += childPath
			}
		case yaml.SequenceNode:
			childPath = pathLen + 2 + digits(i)
			t.paths += childPath
		}
		if t.paths > maxPathBytes && t.err == nil {
			t.err = &shapeError{line: child.Line, problem: fmt.Sprintf("the paths of its keys (agents[0].tools…) add up to more than %d bytes: keys too long or nested too deep", maxPathBytes)}
		}
		cc := t.cost(child, inner, childPath)
		c.values = min(c.values+cc.values, maxValues+1)
		c.bytes = min(c.bytes+cc.bytes, maxFileBytes+1)
		height = max(height, cc.height)
	}
	c.height += height
	if n.Anchor != "" {
		t.memo[n] = c
	}
	return c
}

func digits(i int) int {
	d := 1
	for ; i >= 10; i /= 10 {
		d++
	}
	return d
}

// add counts c, the cost of n alone or of what the alias n names, in the
// expanded document; depth is the number of collections around n.
func (t *treeCheck) add(n *yaml.Node, c treeCost, depth int) {
	t.total.values = min(t.total.values+c.values, maxValues+1)
	t.total.bytes = min(t.total.bytes+c.bytes, maxFileBytes+1)
	what := "the document"
	if n.Kind == yaml.AliasNode {
		what = "with its aliases (*" + n.Value + ") expanded, the document"
	}
	switch {
	case t.err != nil:
	case depth+c.height > maxDepth:
		t.err = &shapeError{line: n.Line, problem: fmt.Sprintf("%s nests deeper than %d levels", what, maxDepth)}
	case t.total.values > maxValues:
		t.err = &shapeError{line: n.Line, problem: fmt.Sprintf("%s holds more than %d keys, items and values", what, maxValues)}
	case t.total.bytes > maxFileBytes:
		t.err = &shapeError{line: n.Line, problem: fmt.Sprintf("%s is larger than %d bytes", what, maxFileBytes)}
	}
}
