package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"time"
)

// Transports a server can be reached over.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // Streamable HTTP
	TransportSSE   = "sse"  // legacy HTTP+SSE (protocol 2024-11-05)
	// TransportAuto is a URL without a type: Streamable HTTP first, legacy
	// SSE when the server does not speak it.
	TransportAuto = "auto"
)

// Config is a parsed mcp.json: the servers in file order.
type Config struct {
	Servers []ServerConfig
}

// ServerConfig is one entry of mcp.json, with ${VAR} references expanded.
type ServerConfig struct {
	Name      string
	Transport string // TransportStdio, TransportHTTP, TransportSSE or TransportAuto

	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to the small inherited environment
	Cwd     string

	// HTTP
	URL     string
	Headers map[string]string

	// Timeout bounds one tool call of this server (0: only the engine's
	// AGENTIK_TOOL_TIMEOUT applies).
	Timeout time.Duration
	// Allow, when non-empty, keeps only the tools matching one of these
	// patterns (path.Match syntax: "get-*"); Deny then removes matches.
	Allow, Deny []string
	Disabled    bool
}

// allowed reports whether the allow/deny lists let an MCP tool through.
func (c *ServerConfig) allowed(tool string) bool {
	match := func(pats []string) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, tool); ok {
				return true
			}
		}
		return false
	}
	if len(c.Allow) > 0 && !match(c.Allow) {
		return false
	}
	return !match(c.Deny)
}

// maxConfigBytes bounds the file: a config is a few kilobytes, anything far
// larger is a wrong path.
const maxConfigBytes = 4 << 20

// LoadConfig reads and parses the file at path; see ParseConfig.
func LoadConfig(file string, getenv func(string) string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read MCP config: %w", err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("MCP config %s: larger than %d bytes", file, maxConfigBytes)
	}
	c, err := ParseConfig(b, getenv)
	if err != nil {
		return nil, fmt.Errorf("MCP config %s: %w", file, err)
	}
	return c, nil
}

// ParseConfig parses a Claude-Desktop-style mcp.json. The servers are under
// "mcpServers" (or VS Code's "servers"); each is either
//
//	{"command", "args", "env", "cwd"}            a stdio subprocess
//	{"url", "headers", "type"}                   a remote server
//
// plus the optional "timeout", "allow"/"deny" (aliases "includeTools",
// "excludeTools") and "disabled". "${VAR}" and "${VAR:-default}" in strings
// are expanded from getenv; a reference to an unset variable without a
// default is an error. Every error names the offending field
// ("mcpServers.github.headers.Authorization: …"). Unknown fields are ignored.
func ParseConfig(data []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", jsonErr(err))
	}
	key := "mcpServers"
	raw, ok := top[key]
	if vs, vsOK := top["servers"]; vsOK {
		if ok {
			return nil, fmt.Errorf("both mcpServers and servers are present: use one")
		}
		key, raw, ok = "servers", vs, true
	}
	if !ok || isNull(raw) {
		return &Config{}, nil // an empty file section: no servers
	}
	names, entries, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	c := &Config{}
	seen := make(map[string]bool)
	for i, name := range names {
		field := key + "." + name
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%s: a server name is empty", key)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: server %q appears twice", key, name)
		}
		seen[name] = true
		s, err := parseServer(field, name, entries[i], getenv)
		if err != nil {
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	return c, nil
}

func parseServer(field, name string, raw json.RawMessage, getenv func(string) string) (ServerConfig, error) {
	s := ServerConfig{Name: name}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return s, fmt.Errorf("%s: want an object with \"command\" or \"url\"", field)
	}
	p := fieldParser{field: field, m: m, getenv: getenv}
	p.str("command", &s.Command)
	p.strList("args", &s.Args)
	p.strMap("env", &s.Env)
	p.str("cwd", &s.Cwd)
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		if _, ok := m[k]; ok && s.URL == "" {
			p.str(k, &s.URL)
			if k == "httpUrl" {
				s.Transport = TransportHTTP // Gemini CLI: httpUrl is Streamable HTTP
			}
		}
	}
	p.headers("headers", &s.Headers)
	var typ string
	for _, k := range []string{"type", "transport", "transportType"} {
		if _, ok := m[k]; ok {
			p.str(k, &typ)
			if p.err == nil && typ != "" {
				t, ok := transportNames[strings.ToLower(typ)]
				if !ok {
					p.fail(k, fmt.Sprintf("unknown transport %q: want stdio, http, streamable-http, streamableHttp or sse", typ))
				}
				s.Transport = t
			}
			break
		}
	}
	p.timeout(&s.Timeout)
	p.patterns("allow", &s.Allow)
	if s.Allow == nil {
		p.patterns("includeTools", &s.Allow)
	}
	p.patterns("deny", &s.Deny)
	if s.Deny == nil {
		p.patterns("excludeTools", &s.Deny)
	}
	p.boolean("disabled", &s.Disabled)
	if p.err != nil {
		return s, p.err
	}

	switch {
	case s.Command != "" && s.URL != "":
		return s, fmt.Errorf("%s: has both \"command\" and \"url\": use one", field)
	case s.Command == "" && s.URL == "":
		return s, fmt.Errorf("%s: needs \"command\" (stdio) or \"url\" (HTTP)", field)
	case s.Command != "":
		if s.Transport != "" && s.Transport != TransportStdio {
			return s, fmt.Errorf("%s.type: %q needs a \"url\", not a \"command\"", field, typ)
		}
		s.Transport = TransportStdio
	default:
		if s.Transport == TransportStdio {
			return s, fmt.Errorf("%s.type: stdio needs a \"command\", not a \"url\"", field)
		}
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return s, fmt.Errorf("%s.url: want an http:// or https:// URL", field) // the URL may hold a secret: not echoed
		}
		if s.Transport == "" {
			s.Transport = TransportAuto
		}
	}
	return s, nil
}

// transportNames maps the "type" spellings in use to a transport.
var transportNames = map[string]string{
	"stdio":           TransportStdio,
	"http":            TransportHTTP,
	"streamable-http": TransportHTTP,
	"streamable_http": TransportHTTP,
	"streamablehttp":  TransportHTTP,
	"sse":             TransportSSE,
}

// fieldParser decodes the fields of one server entry, keeping the first
// error with the full field name.
type fieldParser struct {
	field  string
	m      map[string]json.RawMessage
	getenv func(string) string
	err    error
}

func (p *fieldParser) fail(key, problem string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s.%s: %s", p.field, key, problem)
	}
}

func (p *fieldParser) get(key string) (json.RawMessage, bool) {
	v, ok := p.m[key]
	if !ok || isNull(v) || p.err != nil {
		return nil, false
	}
	return v, true
}

func (p *fieldParser) expand(key, s string) string {
	out, err := expandVars(s, p.getenv)
	if err != nil {
		p.fail(key, err.Error())
	}
	return out
}

func (p *fieldParser) str(key string, dst *string) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.fail(key, "want a string")
		return
	}
	*dst = p.expand(key, s)
}

func (p *fieldParser) boolean(key string, dst *bool) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	if err := json.Unmarshal(v, dst); err != nil {
		p.fail(key, "want true or false")
	}
}

func (p *fieldParser) strList(key string, dst *[]string) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	var l []string
	if err := json.Unmarshal(v, &l); err != nil {
		p.fail(key, "want an array of strings")
		return
	}
	for i := range l {
		l[i] = p.expand(fmt.Sprintf("%s[%d]", key, i), l[i])
	}
	*dst = l
}

func (p *fieldParser) strMap(key string, dst *map[string]string) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	var m map[string]string
	if err := json.Unmarshal(v, &m); err != nil {
		p.fail(key, "want an object of strings")
		return
	}
	for k, s := range m {
		m[k] = p.expand(key+"."+k, s)
	}
	*dst = m
}

// headers accepts an object, or mcphost's array of "Name: value" strings.
func (p *fieldParser) headers(key string, dst *map[string]string) {
	v, ok := p.get(key)
	if !ok {
		return
	}
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		var l []string
		if err := json.Unmarshal(v, &l); err != nil {
			p.fail(key, `want an object of strings or an array of "Name: value" strings`)
			return
		}
		m := make(map[string]string, len(l))
		for i, h := range l {
			name, val, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(name) == "" {
				p.fail(fmt.Sprintf("%s[%d]", key, i), `want "Name: value"`)
				return
			}
			m[strings.TrimSpace(name)] = strings.TrimSpace(val)
		}
		p.m[key], _ = json.Marshal(m)
	}
	p.strMap(key, dst)
	for name, val := range *dst {
		if !validHeaderName(name) {
			p.fail(key+"."+name, "not a valid HTTP header name")
		}
		if strings.ContainsAny(val, "\r\n") {
			p.fail(key+"."+name, "a header value cannot contain a line break")
		}
	}
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// timeout reads "timeout" as a Go duration string ("30s") or a number of
// milliseconds (Gemini CLI), or "timeout_ms" (llama.cpp) as milliseconds.
func (p *fieldParser) timeout(dst *time.Duration) {
	for _, key := range []string{"timeout", "timeout_ms"} {
		v, ok := p.get(key)
		if !ok {
			continue
		}
		var ms float64
		if err := json.Unmarshal(v, &ms); err == nil {
			if ms <= 0 || ms > float64(24*time.Hour/time.Millisecond) {
				p.fail(key, "want a positive number of milliseconds up to a day")
				return
			}
			*dst = time.Duration(ms * float64(time.Millisecond))
			return
		}
		var s string
		if key == "timeout" && json.Unmarshal(v, &s) == nil {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d <= 0 || d > 24*time.Hour {
				p.fail(key, fmt.Sprintf("want a positive Go duration such as \"30s\" (or milliseconds as a number), got %q", s))
				return
			}
			*dst = d
			return
		}
		p.fail(key, "want a duration string such as \"30s\" or a number of milliseconds")
		return
	}
}

func (p *fieldParser) patterns(key string, dst *[]string) {
	p.strList(key, dst)
	for i, pat := range *dst {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			p.fail(fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("bad tool name pattern %q", pat))
		}
	}
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars replaces ${VAR} and ${VAR:-default}. A "${" that starts no
// valid reference, or a variable that is unset with no default, is an error:
// a secret silently replaced by nothing would surface much later as a
// confusing authentication failure.
func expandVars(s string, getenv func(string) string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var err error
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v := getenv(m[1]); v != "" {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		if err == nil {
			err = fmt.Errorf("${%s} is not set", m[1])
		}
		return ""
	})
	if err != nil {
		return "", err
	}
	if strings.Contains(varRef.ReplaceAllString(s, ""), "${") {
		// The value is not quoted: it may hold a literal secret.
		return "", fmt.Errorf("malformed variable reference: want ${NAME} or ${NAME:-default}")
	}
	return out, nil
}

// orderedObject decodes a JSON object keeping its key order: the order of
// servers decides which one keeps a clashing tool name.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, jsonErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("want an object of servers")
	}
	var names []string
	var vals []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, jsonErr(err)
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, jsonErr(err)
		}
		names = append(names, name)
		vals = append(vals, v)
	}
	return names, vals, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func jsonErr(err error) error {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	return err
}
