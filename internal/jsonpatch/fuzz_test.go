package jsonpatch

import (
	"encoding/json"
	"testing"
)

// FuzzApply: any document and patch either fail cleanly or give a value
// that encodes, and the patch Diff makes from the old to the new value
// gives the new value again.
func FuzzApply(f *testing.F) {
	f.Add(`{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`)
	f.Add(`{"foo":{"bar":"baz","waldo":"fred"},"qux":{}}`, `[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`)
	f.Add(`{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10},{"op":"copy","from":"/~01","path":"/x"}]`)
	f.Add(`{"a":[1,[2]]}`, `[{"op":"remove","path":"/a/1/0"},{"op":"replace","path":"","value":[]}]`)
	f.Add(`[]`, `[{"op":"add","path":"/-","value":{"a":1}},{"op":"move","from":"/0","path":"/0/a"}]`)
	f.Fuzz(func(t *testing.T, doc, patch string) {
		d, err := Unmarshal([]byte(doc))
		if err != nil {
			return
		}
		ops, err := Decode([]byte(patch))
		if err != nil {
			return
		}
		orig := Clone(d)
		out, err := Apply(Clone(d), ops)
		if err != nil {
			return
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		back, err := Decode(Marshal(Diff(orig, out)))
		if err != nil {
			t.Fatalf("diff does not decode: %v", err)
		}
		again, err := Apply(Clone(orig), back)
		if err != nil || !Equal(again, out) {
			t.Fatalf("diff %s does not rebuild the result: %v", Marshal(Diff(orig, out)), err)
		}
	})
}

// FuzzDecode: a decoded patch encodes and decodes to the same operations.
func FuzzDecode(f *testing.F) {
	f.Add(`[{"op":"add","path":"/a~1b","value":{"x":[1]}}]`)
	f.Add(`[{"op":"move","from":"","path":"/a"},{"op":"remove","path":"/-"}]`)
	f.Fuzz(func(t *testing.T, patch string) {
		ops, err := Decode([]byte(patch))
		if err != nil {
			return
		}
		again, err := Decode(Marshal(ops))
		if err != nil || len(again) != len(ops) {
			t.Fatalf("%s: re-decode: %v", Marshal(ops), err)
		}
		for i := range ops {
			a, b := ops[i], again[i]
			if a.Op != b.Op || a.Path != b.Path || a.From != b.From {
				t.Fatalf("operation %d changed: %+v → %+v", i, a, b)
			}
		}
	})
}
