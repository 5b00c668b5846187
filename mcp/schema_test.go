package mcp

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestServeSchemasSingleTyped lists the tools over real HTTP and checks
// that every schema in every tool's input and output schema has one type,
// a string, as Gemini function declarations and OpenAPI 3.0 demand (no
// `type: ["null","array"]`), and that the lists are still arrays.
func TestServeSchemasSingleTyped(t *testing.T) {
	e := newServeEnv(t)
	cs := e.connect("tok-alice", ProtocolCurrent)
	res, err := cs.ListTools(serveCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	arrays := 0
	for _, tl := range res.Tools {
		for kind, s := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			for _, bad := range multiTyped(v, tl.Name+" "+kind) {
				t.Errorf("%s", bad)
			}
			arrays += countType(v, "array")
		}
	}
	if arrays < 2 { // list_conversations' conversations, read_conversation's messages
		t.Errorf("%d array schemas, want the lists typed as arrays", arrays)
	}
}

// multiTyped walks a JSON schema and names every schema whose type is not
// a single string.
func multiTyped(v any, at string) []string {
	var bad []string
	eachSchema(v, at, func(s map[string]any, at string) {
		if ty, ok := s["type"]; ok {
			if _, ok := ty.(string); !ok {
				bad = append(bad, fmt.Sprintf("%s: type %v", at, ty))
			}
		}
	})
	return bad
}

func countType(v any, want string) int {
	n := 0
	eachSchema(v, "", func(s map[string]any, _ string) {
		if s["type"] == want {
			n++
		}
	})
	return n
}

// eachSchema calls f on the schema v and every schema under it.
func eachSchema(v any, at string, f func(map[string]any, string)) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	f(s, at)
	for _, k := range []string{"properties", "$defs", "definitions"} {
		if m, ok := s[k].(map[string]any); ok {
			for name, c := range m {
				eachSchema(c, at+"."+k+"."+name, f)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		eachSchema(s[k], at+"."+k, f)
	}
	for _, k := range []string{"anyOf", "allOf", "oneOf", "prefixItems"} {
		if l, ok := s[k].([]any); ok {
			for i, c := range l {
				eachSchema(c, fmt.Sprintf("%s.%s[%d]", at, k, i), f)
			}
		}
	}
}
