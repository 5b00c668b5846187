package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentik/agentik"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzParseConfig: any file is parsed or refused with an error, never a
// panic, and an accepted server is always usable.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers":{"a":{"command":"npx","args":["-y","x"],"env":{"K":"${V:-d}"}}}}`,
		`{"servers":{"b":{"type":"http","url":"http://h/mcp","headers":{"A":"b"}}}}`,
		`{"mcpServers":{"c":{"url":"https://h/sse","type":"sse","timeout":"3s","allow":["x*"],"deny":["y"]}}}`,
		`{"mcpServers":{"d":{"serverUrl":"http://h","headers":["A: b"],"timeout":100}}}`,
		`{"mcpServers":{"e":{"command":"${X}"}}}`,
		`{"mcpServers":null}`, `[]`, `{`, `{"mcpServers":{"":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, getenv(map[string]string{"X": "x", "V": "v"}))
		if err != nil {
			if c != nil {
				t.Fatal("config and error")
			}
			return
		}
		for _, s := range c.Servers {
			switch s.Transport {
			case TransportStdio:
				if s.Command == "" {
					t.Fatalf("stdio without command: %+v", s)
				}
			case TransportHTTP, TransportSSE, TransportAuto:
				if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
					t.Fatalf("bad url accepted: %+v", s)
				}
			default:
				t.Fatalf("transport %q", s.Transport)
			}
			for k, v := range s.Headers {
				if !validHeaderName(k) || strings.ContainsAny(v, "\r\n") {
					t.Fatalf("bad header accepted: %q: %q", k, v)
				}
			}
			s.allowed("tool")
		}
	})
}

// FuzzNames: whatever the servers call their tools, the model gets valid,
// unique names.
func FuzzNames(f *testing.F) {
	f.Add("echo", "s1", "echo", "s2", "get.sum")
	f.Add(strings.Repeat("x", 100), "a", strings.Repeat("x", 101), "a", "")
	f.Add("a_b", "a", "b", "a", "a.b")
	f.Fuzz(func(t *testing.T, n1, s1, n2, s2, n3 string) {
		keys := []toolKey{{s1, n1}, {s2, n2}, {s1, n3}, {s2, n1}}
		seen := map[string]bool{}
		for _, n := range assignNames(keys) {
			if !validName.MatchString(n) {
				t.Fatalf("invalid name %q from %q", n, keys)
			}
			if seen[n] {
				t.Fatalf("duplicate %q from %q", n, keys)
			}
			seen[n] = true
		}
	})
}

// FuzzToResult: any tool result a server sends (decoded by the SDK) maps
// onto valid content for the model.
func FuzzToResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}`))
	f.Add([]byte(`{"content":[],"structuredContent":{"a":1},"isError":true}`))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"file:///a","mimeType":"image/gif","blob":"R0lGOA=="}},{"type":"resource_link","uri":"x:y","name":"n"}]}`))
	f.Add([]byte(`{"content":[{"type":"audio","mimeType":"audio/wav","data":"AAAA"},{"type":"text","text":""}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var res sdk.CallToolResult
		if err := json.Unmarshal(data, &res); err != nil {
			return
		}
		out := toResult(&res)
		if len(out.Content) == 0 || out.IsError != res.IsError {
			t.Fatalf("result %+v from %s", out, data)
		}
		for _, c := range out.Content {
			if c.Type == agentik.ContentText && !utf8.ValidString(c.Text) && utf8.Valid(data) {
				continue // invalid UTF-8 inside a valid document is passed through
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("invalid content %+v: %v (from %s)", c, err, data)
			}
		}
	})
}
