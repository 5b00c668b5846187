package recall

import (
	"testing"

	"github.com/agentik/agentik"
)

// FuzzDecodeArgs: the tool's arguments are a query and a limit in bounds,
// or an error the model sees.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"query":"a"}`, `{"query":"a","limit":5}`, `{"query":1}`, `{"limit":0,"query":"x"}`, `[]`, `null`, `{"query":"a","limit":1e99}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		req, err := decodeArgs(agentik.RawJSON(args))
		if err != nil {
			return
		}
		if req.Limit < 0 || req.Limit > agentik.MaxSearchLimit {
			t.Fatalf("%s: limit %d", args, req.Limit)
		}
	})
}
