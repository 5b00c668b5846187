package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/agentik/agentik"
)

// FuzzDecodeMemoryValue: any body of PUT {p}/memory/blocks/{label} decodes
// to the string its value field holds or is refused with a code of the
// vocabulary (400 or 422), never a panic.
func FuzzDecodeMemoryValue(f *testing.F) {
	for _, s := range []string{`{"value":"Alice likes tea."}`, `{"value":""}`, `{"value":5}`, `{"value":null}`, `{}`, `[]`, `{`,
		`{"value":"a","value":"b"}`, `{"value":"\u0000"}`, `"x"`, `{"value":"x"} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeMemoryValue(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid && c != agentik.ETooLarge {
				t.Fatalf("code %q: %v", c, err)
			}
			return
		}
		var again struct {
			Value *string `json:"value"`
		}
		if json.Unmarshal(b, &again) != nil || again.Value == nil || *again.Value != v {
			t.Fatalf("decoded %q from %q", v, b)
		}
	})
}
