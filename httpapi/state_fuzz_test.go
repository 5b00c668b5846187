package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/jsonpatch"
)

// FuzzDecodeState: a state body is refused as malformed or invalid, or
// is a JSON object.
func FuzzDecodeState(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}]}`, `[]`, `null`, `"x"`, `{"a":1}{}`, ``, `{"a":1e999}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q for %q", c, b)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(st, &m); err != nil || m == nil {
			t.Fatalf("accepted %q, which is no object: %v", b, err)
		}
	})
}

// FuzzDecodeStatePatch: a patch body is refused as malformed or invalid,
// or is a patch the jsonpatch package decodes.
func FuzzDecodeStatePatch(f *testing.F) {
	for _, s := range []string{`[]`, `[{"op":"add","path":"/a~1b","value":1}]`, `[{"op":"move","from":"","path":"/x"}]`,
		`[{"op":"add","path":"/a","value":1,"op":"remove"}]`, `{}`, `[1]`, `[{"op":"test"}]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeStatePatch(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q for %q", c, b)
			}
			return
		}
		if _, err := jsonpatch.Decode(p); err != nil {
			t.Fatalf("accepted %q, which does not decode: %v", b, err)
		}
	})
}
