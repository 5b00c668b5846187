package mcp

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseConfigShapes(t *testing.T) {
	env := getenv(map[string]string{"TOKEN": "s3cret", "HOME": "/home/u"})
	c, err := ParseConfig([]byte(`{
	  "mcpServers": {
	    "zeta": {"command": "npx", "args": ["-y", "pkg", "${HOME}/x"], "env": {"KEY": "${TOKEN}"}, "cwd": "/tmp", "timeout": "5s", "allow": ["get-*"], "deny": ["get-env"]},
	    "remote": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "type": "streamableHttp"},
	    "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "timeout": 1500},
	    "auto": {"serverUrl": "http://127.0.0.1:9/mcp", "headers": ["X-A: 1", "X-B:two"]},
	    "gemini": {"httpUrl": "http://127.0.0.1:9/mcp", "includeTools": ["a"], "excludeTools": ["b"], "timeout_ms": 250},
	    "off": {"command": "x", "disabled": true, "unknownField": {"ignored": true}},
	    "dflt": {"command": "${MISSING:-fallback}", "type": "stdio"}
	  }
	}`), env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Servers {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "zeta,remote,legacy,auto,gemini,off,dflt" {
		t.Fatalf("order not kept: %s", got)
	}
	z := c.Servers[0]
	if z.Transport != TransportStdio || z.Command != "npx" || z.Args[2] != "/home/u/x" || z.Env["KEY"] != "s3cret" ||
		z.Cwd != "/tmp" || z.Timeout != 5*time.Second || !z.allowed("get-sum") || z.allowed("get-env") || z.allowed("echo") {
		t.Fatalf("stdio entry: %+v", z)
	}
	if r := c.Servers[1]; r.Transport != TransportHTTP || r.Headers["Authorization"] != "Bearer s3cret" {
		t.Fatalf("remote entry: %+v", r)
	}
	if l := c.Servers[2]; l.Transport != TransportSSE || l.Timeout != 1500*time.Millisecond {
		t.Fatalf("sse entry: %+v", l)
	}
	if a := c.Servers[3]; a.Transport != TransportAuto || a.URL != "http://127.0.0.1:9/mcp" || a.Headers["X-A"] != "1" || a.Headers["X-B"] != "two" {
		t.Fatalf("auto entry: %+v", a)
	}
	if g := c.Servers[4]; g.Transport != TransportHTTP || !g.allowed("a") || g.allowed("b") || g.allowed("c") || g.Timeout != 250*time.Millisecond {
		t.Fatalf("gemini entry: %+v", g)
	}
	if !c.Servers[5].Disabled || c.Servers[6].Command != "fallback" {
		t.Fatalf("%+v %+v", c.Servers[5], c.Servers[6])
	}
}

func TestParseConfigTypeSpellings(t *testing.T) {
	for typ, want := range map[string]string{"http": TransportHTTP, "streamable-http": TransportHTTP, "streamableHttp": TransportHTTP, "sse": TransportSSE, "SSE": TransportSSE} {
		c, err := ParseConfig([]byte(`{"mcpServers":{"s":{"url":"http://h/mcp","type":"`+typ+`"}}}`), getenv(nil))
		if err != nil || c.Servers[0].Transport != want {
			t.Errorf("type %q: %v %+v", typ, err, c)
		}
	}
}

func TestParseConfigVSCodeServersKey(t *testing.T) {
	c, err := ParseConfig([]byte(`{"inputs": [], "servers": {"fs": {"type": "stdio", "command": "node", "args": ["s.js"]}}}`), getenv(nil))
	if err != nil || len(c.Servers) != 1 || c.Servers[0].Command != "node" {
		t.Fatalf("%v %+v", err, c)
	}
	c, err = ParseConfig([]byte(`{}`), getenv(nil))
	if err != nil || len(c.Servers) != 0 {
		t.Fatalf("empty: %v %+v", err, c)
	}
}

func TestParseConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`[1,2]`, "not a JSON object"},
		{`{"mcpServers": {"a": {"command": "x"}`, "not a JSON object"},
		{`{"mcpServers": []}`, "mcpServers: want an object of servers"},
		{`{"mcpServers": {"a": "npx"}}`, `mcpServers.a: want an object`},
		{`{"mcpServers": {"a": {}}}`, `mcpServers.a: needs "command" (stdio) or "url" (HTTP)`},
		{`{"mcpServers": {"a": {"command": 42}}}`, "mcpServers.a.command: want a string"},
		{`{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, "mcpServers.a.args: want an array of strings"},
		{`{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, "mcpServers.a.env: want an object of strings"},
		{`{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, `mcpServers.a: has both "command" and "url"`},
		{`{"mcpServers": {"a": {"url": "ftp://h"}}}`, "mcpServers.a.url: want an http:// or https:// URL"},
		{`{"mcpServers": {"a": {"url": "http://h", "type": "websocket"}}}`, `mcpServers.a.type: unknown transport "websocket"`},
		{`{"mcpServers": {"a": {"url": "http://h", "type": "stdio"}}}`, `mcpServers.a.type: stdio needs a "command"`},
		{`{"mcpServers": {"a": {"command": "x", "type": "http"}}}`, `mcpServers.a.type: "http" needs a "url"`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, `mcpServers.a.timeout: want a positive Go duration`},
		{`{"mcpServers": {"a": {"command": "x", "timeout": -5}}}`, `mcpServers.a.timeout: want a positive number`},
		{`{"mcpServers": {"a": {"command": "x", "allow": ["[bad"]}}}`, `mcpServers.a.allow[0]: bad tool name pattern`},
		{`{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}`, `mcpServers.a.disabled: want true or false`},
		{`{"mcpServers": {"gh": {"url": "http://h", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}`, `mcpServers.gh.headers.Authorization: ${GH_TOKEN} is not set`},
		{`{"mcpServers": {"a": {"url": "http://h", "headers": {"Bad Name": "v"}}}}`, `mcpServers.a.headers.Bad Name: not a valid HTTP header name`},
		{`{"mcpServers": {"a": {"url": "http://h", "headers": ["novalue"]}}}`, `mcpServers.a.headers[0]: want "Name: value"`},
		{`{"mcpServers": {"a": {"command": "${OOPS"}}}`, `mcpServers.a.command: malformed variable reference`},
		{`{"mcpServers": {"a": {"command": "x"}}, "servers": {}}`, "both mcpServers and servers"},
		{`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `server "a" appears twice`},
	} {
		_, err := ParseConfig([]byte(tc.json), getenv(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\n got %v\nwant …%s…", tc.json, err, tc.want)
		}
	}
}

func TestExpandVarsNeverLeaksOtherValues(t *testing.T) {
	out, err := expandVars("a ${X} b ${Y:-} c $Z", getenv(map[string]string{"X": "1", "Z": "zzz"}))
	if err != nil || out != "a 1 b  c $Z" {
		t.Fatalf("%q %v", out, err)
	}
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("a", 80)
	keys := []toolKey{
		{"one", "echo"}, {"one", "get.sum"}, {"one", "get_sum"}, {"one", long}, {"one", long + "b"},
		{"two", "echo"}, {"two", "only-two"}, {"two", ""}, {"two", "ünïcode"},
		{"three", "one_echo"},
	}
	got := assignNames(keys)
	want := map[int]string{0: "one_echo", 1: "get_sum", 2: "get_sum_2", 5: "two_echo", 6: "only-two", 9: "one_echo_2"}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("%v → %q, want %q", keys[i], got[i], w)
		}
	}
	seen := map[string]bool{}
	for i, n := range got {
		if !validName.MatchString(n) {
			t.Errorf("%v → invalid %q", keys[i], n)
		}
		if seen[n] {
			t.Errorf("duplicate %q", n)
		}
		seen[n] = true
	}
	if got[3] == got[4] || len(got[3]) != 64 {
		t.Errorf("long names: %q %q", got[3], got[4])
	}
	// Stable: the same input gives the same names.
	if again := assignNames(keys); strings.Join(again, ",") != strings.Join(got, ",") {
		t.Error("not deterministic")
	}
}
