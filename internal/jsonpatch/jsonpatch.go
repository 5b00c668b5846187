// Package jsonpatch applies JSON Patch documents (RFC 6902) to JSON values
// addressed by JSON Pointers (RFC 6901), and makes the patch between two
// values. A conversation's shared state (SPEC §19) is changed through it:
// by AG-UI clients, the native API's PATCH and the agent's update_state.
//
// Values are what encoding/json decodes with UseNumber: map[string]any,
// []any, json.Number, string, bool and nil. Numbers keep their text, so a
// patch never rounds one.
package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Op is one operation of a patch. Value is set (non-nil, possibly the
// JSON null) exactly when the operation carries a value.
type Op struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Error is a patch that is malformed or does not apply; its text says
// which operation and why, for a client or a model to read.
type Error struct {
	Index int // the operation, from 0; -1 for the patch as a whole
	Msg   string
	Err   error // ErrTooLarge, or nil
}

// Unwrap returns ErrTooLarge for a patch that would grow too large.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Index < 0 {
		return "json patch: " + e.Msg
	}
	return fmt.Sprintf("json patch operation %d: %s", e.Index, e.Msg)
}

func opErr(i int, format string, args ...any) error {
	return &Error{Index: i, Msg: fmt.Sprintf(format, args...)}
}

// Decode parses a patch: a JSON array of operation objects, each with the
// members its op needs (RFC 6902 §4); members it does not know are
// ignored, as the RFC asks. Pointers are checked here, so a patch that
// decodes only fails to apply for what the document holds.
func Decode(patch []byte) ([]Op, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(patch, &raw); err != nil || raw == nil {
		return nil, &Error{Index: -1, Msg: "a patch must be a JSON array of operation objects"}
	}
	ops := make([]Op, 0, len(raw))
	for i, r := range raw {
		m, err := members(r)
		if err != nil {
			return nil, opErr(i, "%v", err)
		}
		var o Op
		if err := str(m, "op", &o.Op); err != nil {
			return nil, opErr(i, "%v", err)
		}
		if err := str(m, "path", &o.Path); err != nil {
			return nil, opErr(i, "%v", err)
		}
		if _, err := ParsePointer(o.Path); err != nil {
			return nil, opErr(i, "path: %v", err)
		}
		switch o.Op {
		case "add", "replace", "test":
			v, ok := m["value"]
			if !ok {
				return nil, opErr(i, "%s needs a value", o.Op)
			}
			o.Value = v
		case "move", "copy":
			if err := str(m, "from", &o.From); err != nil {
				return nil, opErr(i, "%v", err)
			}
			if _, err := ParsePointer(o.From); err != nil {
				return nil, opErr(i, "from: %v", err)
			}
		case "remove":
		default:
			return nil, opErr(i, "unknown op %q (add, remove, replace, move, copy or test)", o.Op)
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// members reads an operation object's members, refusing one named twice
// (RFC 6902 appendix A.13: such a patch is invalid, not "the last wins").
func members(raw json.RawMessage) (map[string]json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("an operation must be an object")
	}
	m := map[string]json.RawMessage{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, errors.New("an operation must be an object")
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, errors.New("an operation must be an object")
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("member %q appears twice", k)
		}
		m[k] = v
	}
	return m, nil
}

// str reads the required string member key of m into s.
func str(m map[string]json.RawMessage, key string, s *string) error {
	v, ok := m[key]
	if !ok {
		return fmt.Errorf("missing %q", key)
	}
	if err := json.Unmarshal(v, s); err != nil {
		return fmt.Errorf("%q must be a string", key)
	}
	return nil
}

// ParsePointer splits a JSON Pointer into its unescaped reference tokens
// ("" is the whole document: no tokens).
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("%q is not a JSON Pointer (it must be empty or start with /)", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if !strings.Contains(t, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			if t[j] != '~' {
				b.WriteByte(t[j])
				continue
			}
			if j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1') {
				return nil, fmt.Errorf("%q has a ~ that is not ~0 or ~1", p)
			}
			if t[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		toks[i] = b.String()
	}
	return toks, nil
}

// EscapeToken escapes one reference token for a pointer.
func EscapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// Unmarshal decodes a JSON value the way this package holds it.
func Unmarshal(b []byte) (any, error) {
	if !json.Valid(b) {
		return nil, errors.New("not a JSON value")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Apply applies the patch to doc and returns the new document. doc is
// changed in place where it can be (a caller that keeps the old value
// passes a copy: Clone); on an error the result is nil and doc may be
// partly changed, so a caller that must change nothing on error applies
// to a copy.
func Apply(doc any, ops []Op) (any, error) {
	return ApplyWithin(doc, ops, 0)
}

// ErrTooLarge is returned (wrapped in an *Error) by ApplyWithin for a
// patch whose copies would grow the document past its limit.
var ErrTooLarge = errors.New("the copies would make the document too large")

// ApplyWithin is Apply for a document whose JSON is at most limit bytes
// (0: no limit): copies double a document at each operation, so a short
// patch could otherwise build one too large to hold before its size is
// checked. The bytes every copy adds are counted (removals are not taken
// off), and the patch fails with ErrTooLarge once the document's could
// pass limit; values that add and replace bring are the patch's own bytes.
func ApplyWithin(doc any, ops []Op, limit int) (any, error) {
	budget := limit
	if budget > 0 {
		budget -= jsonSize(doc, budget+1)
	}
	for i, o := range ops {
		path, _ := ParsePointer(o.Path)
		var err error
		switch o.Op {
		case "add", "replace", "test":
			var v any
			if v, err = Unmarshal(o.Value); err != nil {
				return nil, opErr(i, "value is not JSON")
			}
			switch o.Op {
			case "add":
				doc, err = add(doc, path, v)
			case "replace":
				doc, err = replace(doc, path, v)
			default:
				err = test(doc, path, v)
			}
		case "remove":
			doc, _, err = remove(doc, path)
		case "move":
			from, _ := ParsePointer(o.From)
			doc, err = move(doc, from, path, o.From, o.Path)
		case "copy":
			from, _ := ParsePointer(o.From)
			var v any
			if v, err = get(doc, from); err == nil {
				if limit > 0 {
					if budget -= jsonSize(v, budget+1); budget < 0 {
						return nil, &Error{Index: i, Msg: ErrTooLarge.Error(), Err: ErrTooLarge}
					}
				}
				doc, err = add(doc, path, Clone(v))
			}
		default:
			err = fmt.Errorf("unknown op %q", o.Op)
		}
		if err != nil {
			return nil, opErr(i, "%s %s: %v", o.Op, quote(o.Path), err)
		}
	}
	return doc, nil
}

func quote(p string) string {
	if p == "" {
		return `""`
	}
	return p
}

func move(doc any, from, path []string, fromText, pathText string) (any, error) {
	if fromText == pathText {
		_, err := get(doc, from)
		return doc, err
	}
	if strings.HasPrefix(pathText, fromText+"/") {
		return nil, errors.New("a value cannot move into itself")
	}
	doc, v, err := remove(doc, from)
	if err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	return add(doc, path, v)
}

// get returns the value at path.
func get(doc any, path []string) (any, error) {
	cur := doc
	for _, t := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, fmt.Errorf("no member %q", t)
			}
			cur = v
		case []any:
			i, err := index(t, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q is not inside an object or array", t)
		}
	}
	return cur, nil
}

// index parses an array index token: digits without leading zeros, less
// than n (or equal to n, and "-" meaning n, when adding).
func index(t string, n int, adding bool) (int, error) {
	if t == "-" {
		if adding {
			return n, nil
		}
		return 0, errors.New(`"-" (past the end) names no element`)
	}
	if t == "" || (len(t) > 1 && t[0] == '0') || strings.TrimLeft(t, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an array index", t)
	}
	i, err := strconv.Atoi(t)
	if err != nil || i > n || (i == n && !adding) {
		return 0, fmt.Errorf("index %s is out of bounds (the array has %d elements)", t, n)
	}
	return i, nil
}

// parentOf returns the container that holds the last token of path.
func parentOf(doc any, path []string) (any, error) {
	return get(doc, path[:len(path)-1])
}

func add(doc any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	parent, err := parentOf(doc, path)
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
	case []any:
		i, err := index(last, len(c), true)
		if err != nil {
			return nil, err
		}
		grown := append(c, nil)
		copy(grown[i+1:], grown[i:])
		grown[i] = v
		return setAt(doc, path[:len(path)-1], grown)
	default:
		return nil, errors.New("the parent is not an object or array")
	}
	return doc, nil
}

// setAt puts v at path (which exists) and returns the document: arrays
// that grow or shrink are new slices their container must hold.
func setAt(doc any, path []string, v any) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	parent, err := parentOf(doc, path)
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
	case []any:
		i, err := index(last, len(c), false)
		if err != nil {
			return nil, err
		}
		c[i] = v
	}
	return doc, nil
}

// remove takes the value at path out and returns the document and it.
func remove(doc any, path []string) (any, any, error) {
	if len(path) == 0 {
		return nil, nil, errors.New("the whole document cannot be removed")
	}
	parent, err := parentOf(doc, path)
	if err != nil {
		return nil, nil, err
	}
	last := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		v, ok := c[last]
		if !ok {
			return nil, nil, fmt.Errorf("no member %q", last)
		}
		delete(c, last)
		return doc, v, nil
	case []any:
		i, err := index(last, len(c), false)
		if err != nil {
			return nil, nil, err
		}
		v := c[i]
		shrunk := append(c[:i:i], c[i+1:]...)
		doc, err = setAt(doc, path[:len(path)-1], shrunk)
		return doc, v, err
	default:
		return nil, nil, errors.New("the parent is not an object or array")
	}
}

func replace(doc any, path []string, v any) (any, error) {
	if _, err := get(doc, path); err != nil {
		return nil, err
	}
	return setAt(doc, path, v)
}

func test(doc any, path []string, v any) error {
	cur, err := get(doc, path)
	if err != nil {
		return err
	}
	if !Equal(cur, v) {
		return errors.New("the value differs")
	}
	return nil
}

// Equal reports whether two values are equal as RFC 6902's test compares
// them: numbers by their value, objects whatever their members' order.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(x, y)
	default:
		return a == b
	}
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && x.Cmp(y) == 0
}

// jsonSize is about the length of v's JSON (strings without their
// escapes), counted up to max and no further.
func jsonSize(v any, max int) int {
	switch x := v.(type) {
	case map[string]any:
		n := 2
		for k, e := range x {
			if n >= max {
				return n
			}
			n += len(k) + 4 + jsonSize(e, max-n)
		}
		return n
	case []any:
		n := 2
		for _, e := range x {
			if n >= max {
				return n
			}
			n += 1 + jsonSize(e, max-n)
		}
		return n
	case string:
		return len(x) + 2
	case json.Number:
		return len(x)
	case bool:
		return 5
	default:
		return 4
	}
}

// Clone returns a deep copy of v.
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Clone(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = Clone(e)
		}
		return s
	default:
		return v
	}
}

// Diff returns a patch that turns a into b: members added, removed or
// replaced, objects compared member by member, other values (arrays
// included) replaced whole when they differ.
func Diff(a, b any) []Op {
	return diff(nil, "", a, b)
}

func diff(ops []Op, at string, a, b any) []Op {
	x, ok1 := a.(map[string]any)
	y, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		if Equal(a, b) {
			return ops
		}
		return append(ops, Op{Op: "replace", Path: at, Value: mustJSON(b)})
	}
	for _, k := range sortedKeys(x) {
		if _, ok := y[k]; !ok {
			ops = append(ops, Op{Op: "remove", Path: at + "/" + EscapeToken(k)})
		}
	}
	for _, k := range sortedKeys(y) {
		p := at + "/" + EscapeToken(k)
		if old, ok := x[k]; ok {
			ops = diff(ops, p, old, y[k])
		} else {
			ops = append(ops, Op{Op: "add", Path: p, Value: mustJSON(y[k])})
		}
	}
	return ops
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mustJSON encodes a value of this package's kinds, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("jsonpatch: encode a decoded value: " + err.Error())
	}
	return b
}

// MarshalJSON writes the members the operation has: from only for move
// and copy (where "" is the whole document), value only when set.
func (o Op) MarshalJSON() ([]byte, error) {
	b, _ := appendMember([]byte("{"), "op", o.Op)
	b, _ = appendMember(b, "path", o.Path)
	if o.Op == "move" || o.Op == "copy" {
		b, _ = appendMember(b, "from", o.From)
	}
	if o.Value != nil {
		var buf bytes.Buffer
		if err := json.Compact(&buf, o.Value); err != nil {
			return nil, err
		}
		b = append(b, `,"value":`...)
		b = append(b, buf.Bytes()...)
	}
	return append(b, '}'), nil
}

func appendMember(b []byte, key, s string) ([]byte, error) {
	v, err := json.Marshal(s)
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return append(b, v...), err
}

// Marshal encodes a patch (an empty one is []).
func Marshal(ops []Op) []byte {
	if len(ops) == 0 {
		return []byte("[]")
	}
	return mustJSON(ops)
}
