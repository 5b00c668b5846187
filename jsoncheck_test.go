package agentik

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckJSON(t *testing.T) {
	ok := []string{
		`{"a":1,"b":{"a":2,"b":[{"a":3},{"a":4}]}}`, `[]`, `{}`, `"x"`, `[{},{}]`,
		`{"s":"\ud83d\ude00 caf\u00e9 \\ud800 \"\u0000"}`, `{"a":[[[]]],"b":{}}`,
		strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth),
		`{"a":1`, // a syntax error is the decoder's to report
		`{"a":{"A":1},"A2":1}`, `{"é":1,"e":2}`,
	}
	for _, s := range ok {
		if err := CheckJSON([]byte(s)); err != nil {
			t.Errorf("%.60s: %v", s, err)
		}
	}
	bad := []string{
		"{\"a\":\"\xff\"}", "{\"\xc3\":1}",
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`{"content":[],"Content":[]}`, `{"threadId":"a","ThreadID":"b"}`, `{"k":1,"\u212a":2}`, `{"ss":1,"S\u017f":2}`, `[{"x":{"k":1,"k":1}}]`, `{"a":{},"b":[],"a":null}`,
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800x"`,
		strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1),
		`{"a":` + strings.Repeat(`{"b":`, MaxJSONDepth) + `1` + strings.Repeat("}", MaxJSONDepth+1),
	}
	for _, s := range bad {
		err := CheckJSON([]byte(s))
		if ErrorCode(err) != EMalformed || ErrorMessage(err) == "" {
			t.Errorf("%.60q: %v, want malformed", s, err)
		}
	}
	elems := func(n int, v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]" }
	for _, s := range []string{elems(MaxJSONArray, "1"), `{"a":` + elems(MaxJSONArray, `{"b":[1,2]}`) + `}`, "[" + elems(MaxJSONArray, "[]") + "]"} {
		if err := CheckJSON([]byte(s)); err != nil {
			t.Errorf("%d elements: %v", MaxJSONArray, err)
		}
	}
	for _, s := range []string{elems(MaxJSONArray+1, "1"), `{"a":[` + elems(MaxJSONArray+1, `{}`) + `]}`, elems(MaxJSONArray+1, `"x"`)} {
		if err := CheckJSON([]byte(s)); ErrorCode(err) != ETooLarge {
			t.Errorf("%d elements: %v, want too_large", MaxJSONArray+1, err)
		}
	}
}

// FuzzCheckJSON: never panics; whatever it accepts that encoding/json also
// accepts decodes the same way twice (no key decided by position).
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x"]}`, `{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[[[[]]]]`, `{"a":{"b":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if CheckJSON(b) != nil || !json.Valid(b) {
			return
		}
		// No two keys of one object fill the same struct field.
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) == nil {
			for k := range obj {
				for k2 := range obj {
					if k != k2 && strings.EqualFold(k, k2) {
						t.Fatalf("keys %q and %q name one struct field but were accepted", k, k2)
					}
				}
			}
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // numbers out of float64's range are the decoders' to refuse
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted but undecodable: %v", err)
		}
		if m, ok := v.(map[string]any); ok {
			var raw map[string]json.RawMessage
			json.Unmarshal(b, &raw)
			if len(raw) != len(m) {
				t.Fatal("key counts differ")
			}
		}
	})
}
