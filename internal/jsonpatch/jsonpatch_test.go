package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// apply decodes doc and patch, applies it and returns the result's JSON.
func apply(t testing.TB, doc, patch string) (string, error) {
	t.Helper()
	d, err := Unmarshal([]byte(doc))
	if err != nil {
		t.Fatalf("document %s: %v", doc, err)
	}
	ops, err := Decode([]byte(patch))
	if err != nil {
		return "", err
	}
	out, err := Apply(d, ops)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

// canon re-encodes JSON text with sorted keys, as json.Marshal writes
// decoded values.
func canon(t testing.TB, s string) string {
	t.Helper()
	v, err := Unmarshal([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRFC6902Appendix runs the examples of RFC 6902 appendix A: the
// document, the patch, and the result or the failure.
func TestRFC6902Appendix(t *testing.T) {
	cases := []struct{ name, doc, patch, want, fails string }{
		{"A.1 add member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux"}]`, `{"baz":"qux","foo":"bar"}`, ""},
		{"A.2 add element", `{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"]}`, ""},
		{"A.3 remove member", `{"baz":"qux","foo":"bar"}`, `[{"op":"remove","path":"/baz"}]`, `{"foo":"bar"}`, ""},
		{"A.4 remove element", `{"foo":["bar","qux","baz"]}`, `[{"op":"remove","path":"/foo/1"}]`, `{"foo":["bar","baz"]}`, ""},
		{"A.5 replace", `{"baz":"qux","foo":"bar"}`, `[{"op":"replace","path":"/baz","value":"boo"}]`, `{"baz":"boo","foo":"bar"}`, ""},
		{"A.6 move member", `{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`,
			`[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`, `{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}`, ""},
		{"A.7 move element", `{"foo":["all","grass","cows","eat"]}`, `[{"op":"move","from":"/foo/1","path":"/foo/3"}]`,
			`{"foo":["all","cows","eat","grass"]}`, ""},
		{"A.8 test succeeds", `{"baz":"qux","foo":["a",2,"c"]}`,
			`[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]`, `{"baz":"qux","foo":["a",2,"c"]}`, ""},
		{"A.9 test fails", `{"baz":"qux"}`, `[{"op":"test","path":"/baz","value":"bar"}]`, "", "differs"},
		{"A.10 nested object", `{"foo":"bar"}`, `[{"op":"add","path":"/child","value":{"grandchild":{}}}]`, `{"foo":"bar","child":{"grandchild":{}}}`, ""},
		{"A.11 unknown members", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux","xyz":123}]`, `{"foo":"bar","baz":"qux"}`, ""},
		{"A.12 nonexistent target", `{"foo":"bar"}`, `[{"op":"add","path":"/baz/bat","value":"qux"}]`, "", "no member"},
		{"A.13 invalid patch", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux","op":"remove"}]`, "", "twice"},
		{"A.14 ~ escape ordering", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10}]`, `{"/":9,"~1":10}`, ""},
		{"A.15 string is no number", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":"10"}]`, "", "differs"},
		{"A.16 add array value", `{"foo":["bar"]}`, `[{"op":"add","path":"/foo/-","value":["abc","def"]}]`, `{"foo":["bar",["abc","def"]]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := apply(t, c.doc, c.patch)
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) {
					t.Fatalf("got %s, %v; want an error with %q", got, err, c.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := canon(t, c.want); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

// TestRFC6901Pointers reads the example document of RFC 6901 §5 with each
// of its pointers, through test operations.
func TestRFC6901Pointers(t *testing.T) {
	doc := `{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}`
	cases := map[string]string{
		"/foo": `["bar","baz"]`, "/foo/0": `"bar"`, "/": `0`, "/a~1b": `1`, "/c%d": `2`, "/e^f": `3`,
		"/g|h": `4`, `/i\\j`: `5`, `/k\"l`: `6`, "/ ": `7`, "/m~0n": `8`, "": doc,
	}
	for ptr, want := range cases {
		patch := `[{"op":"test","path":"` + ptr + `","value":` + want + `}]`
		if _, err := apply(t, doc, patch); err != nil {
			t.Errorf("%s: %v", ptr, err)
		}
		wrong := `[{"op":"test","path":"` + ptr + `","value":"nothing here"}]`
		if _, err := apply(t, doc, wrong); err == nil {
			t.Errorf("%s: a wrong value passed the test", ptr)
		}
	}
}

// TestOperations covers what the appendix does not: the whole document,
// "-" and index bounds, copies that are deep, moves into themselves,
// numbers compared by value, and malformed patches.
func TestOperations(t *testing.T) {
	cases := []struct{ name, doc, patch, want, fails string }{
		{"replace root", `{"a":1}`, `[{"op":"replace","path":"","value":{"b":2}}]`, `{"b":2}`, ""},
		{"add root", `{"a":1}`, `[{"op":"add","path":"","value":[1]}]`, `[1]`, ""},
		{"remove root", `{"a":1}`, `[{"op":"remove","path":""}]`, "", "whole document"},
		{"add past end", `{"a":[1]}`, `[{"op":"add","path":"/a/2","value":3}]`, "", "out of bounds"},
		{"add at end", `{"a":[1]}`, `[{"op":"add","path":"/a/1","value":3}]`, `{"a":[1,3]}`, ""},
		{"leading zero", `{"a":[1,2]}`, `[{"op":"remove","path":"/a/01"}]`, "", "not an array index"},
		{"remove dash", `{"a":[1]}`, `[{"op":"remove","path":"/a/-"}]`, "", "names no element"},
		{"replace missing", `{"a":1}`, `[{"op":"replace","path":"/b","value":2}]`, "", "no member"},
		{"remove missing", `{}`, `[{"op":"remove","path":"/b"}]`, "", "no member"},
		{"nested arrays", `{"a":[[1,2],[3]]}`, `[{"op":"add","path":"/a/0/-","value":9},{"op":"remove","path":"/a/1/0"}]`, `{"a":[[1,2,9],[]]}`, ""},
		{"copy is deep", `{"a":{"x":[1]}}`, `[{"op":"copy","from":"/a","path":"/b"},{"op":"add","path":"/b/x/-","value":2}]`, `{"a":{"x":[1]},"b":{"x":[1,2]}}`, ""},
		{"move into itself", `{"a":{"b":{}}}`, `[{"op":"move","from":"/a","path":"/a/b/c"}]`, "", "into itself"},
		{"move to itself", `{"a":1}`, `[{"op":"move","from":"/a","path":"/a"}]`, `{"a":1}`, ""},
		{"move to sibling prefix", `{"a":1,"ab":2}`, `[{"op":"move","from":"/a","path":"/ab"}]`, `{"ab":1}`, ""},
		{"numbers by value", `{"a":1.0,"b":[1e2]}`, `[{"op":"test","path":"/a","value":1},{"op":"test","path":"/b","value":[100]}]`, `{"a":1.0,"b":[1e2]}`, ""},
		{"objects in any order", `{"a":{"x":1,"y":2}}`, `[{"op":"test","path":"/a","value":{"y":2,"x":1}}]`, `{"a":{"x":1,"y":2}}`, ""},
		{"null value", `{"a":1}`, `[{"op":"replace","path":"/a","value":null}]`, `{"a":null}`, ""},
		{"into a scalar", `{"a":1}`, `[{"op":"add","path":"/a/b","value":2}]`, "", "not an object or array"},
		{"empty patch", `{"a":1}`, `[]`, `{"a":1}`, ""},
		{"not an array", `{}`, `{"op":"add"}`, "", "JSON array"},
		{"null patch", `{}`, `null`, "", "JSON array"},
		{"op not object", `{}`, `[1]`, "", "must be an object"},
		{"unknown op", `{}`, `[{"op":"merge","path":"/a"}]`, "", "unknown op"},
		{"no value", `{}`, `[{"op":"add","path":"/a"}]`, "", "needs a value"},
		{"no from", `{}`, `[{"op":"copy","path":"/a"}]`, "", `missing "from"`},
		{"no path", `{}`, `[{"op":"remove"}]`, "", `missing "path"`},
		{"path not string", `{}`, `[{"op":"remove","path":1}]`, "", "must be a string"},
		{"bad pointer", `{}`, `[{"op":"add","path":"a","value":1}]`, "", "not a JSON Pointer"},
		{"bad escape", `{}`, `[{"op":"add","path":"/a~2","value":1}]`, "", "~0 or ~1"},
		{"trailing tilde", `{}`, `[{"op":"add","path":"/a~","value":1}]`, "", "~0 or ~1"},
		{"failure keeps order", `{"a":1}`, `[{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":2}]`, "", "operation 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := apply(t, c.doc, c.patch)
			if c.fails != "" {
				if err == nil || !strings.Contains(err.Error(), c.fails) {
					t.Fatalf("got %s, %v; want an error with %q", got, err, c.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := canon(t, c.want); got != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

// TestDiff: the patch Diff makes turns a into b, and is empty for equal
// values.
func TestDiff(t *testing.T) {
	cases := [][2]string{
		{`{}`, `{}`},
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":1,"b":{"c":[1,2],"d":"x"}}`, `{"b":{"c":[1],"e":null},"f~/g":true}`},
		{`{"a":{"b":{"c":1}}}`, `{"a":[1]}`},
		{`[1,2]`, `{"a":1}`},
	}
	for _, c := range cases {
		a, _ := Unmarshal([]byte(c[0]))
		b, _ := Unmarshal([]byte(c[1]))
		ops := Diff(a, b)
		if Equal(a, b) != (len(ops) == 0) {
			t.Errorf("%s → %s: %s", c[0], c[1], Marshal(ops))
		}
		// The patch goes over the wire: decode what Marshal wrote.
		back, err := Decode(Marshal(ops))
		if err != nil {
			t.Fatalf("%s: %v", Marshal(ops), err)
		}
		got, err := Apply(Clone(a), back)
		if err != nil || !Equal(got, b) {
			t.Errorf("%s + %s = %v, %v; want %s", c[0], Marshal(ops), got, err, c[1])
		}
	}
}

// TestMarshalKeepsRootFrom: a move from the whole document keeps its
// empty from when encoded (omitting it would change the operation).
func TestMarshalKeepsRootFrom(t *testing.T) {
	ops := []Op{{Op: "copy", From: "", Path: "/a"}, {Op: "add", Path: "/b", Value: json.RawMessage(`null`)}}
	if got, want := string(Marshal(ops)), `[{"op":"copy","path":"/a","from":""},{"op":"add","path":"/b","value":null}]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestApplyWithinStopsDoublingCopies: a short patch of copies of the
// whole document, each doubling it, fails once the copies would pass the
// limit instead of building a document of 2^40 times its size.
func TestApplyWithinStopsDoublingCopies(t *testing.T) {
	var ops []string
	for i := range 40 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"","path":"/x%d"}`, i))
	}
	patch, err := Decode([]byte("[" + strings.Join(ops, ",") + "]"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := Unmarshal([]byte(`{"a":"` + strings.Repeat("y", 100) + `"}`))
	if _, err := ApplyWithin(doc, patch, 64<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want %v", err, ErrTooLarge)
	}
	// Within the limit, copies apply.
	doc, _ = Unmarshal([]byte(`{"a":"` + strings.Repeat("y", 100) + `"}`))
	out, err := ApplyWithin(doc, patch[:3], 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(out); len(b) < 800 || len(b) > 64<<10 {
		t.Fatalf("three doublings made %d bytes", len(b))
	}
}
