package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentik/agentik"
)

// The configuration file (agentik serve --config FILE, or AGENTIK_CONFIG):
// process settings beside a list of agents (SPEC §9; docs/config.md has the
// whole schema). It is decoded strictly: an unknown key, a value of the
// wrong type, a missing required field or an invalid value is a FileError
// naming the file, the line and the field.

// file is the schema of the configuration file. The keys of SPEC §9's
// example are its stable core.
type file struct {
	Listen   string      `yaml:"listen"`
	Database string      `yaml:"database"`
	Auth     fileAuth    `yaml:"auth"`
	Log      fileLog     `yaml:"log"`
	HTTP     fileHTTP    `yaml:"http"`
	Agents   []fileAgent `yaml:"agents"`
}

type fileAuth struct {
	Tokens     []fileToken `yaml:"tokens"`
	TokensFile string      `yaml:"tokens_file"`
	Required   bool        `yaml:"required"`
}

type fileToken struct {
	Principal string   `yaml:"principal"`
	TokenEnv  string   `yaml:"token_env"`
	TokenFile string   `yaml:"token_file"`
	Token     string   `yaml:"token"` // inline: allowed, but warned about
	Agents    []string `yaml:"agents"`
	Admin     bool     `yaml:"admin"`
}

type fileLog struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

type fileHTTP struct {
	CORSOrigins  []string `yaml:"cors_origins"`
	BodyTimeout  duration `yaml:"body_timeout"`
	MaxBodyBytes int64    `yaml:"max_body_bytes"`
}

type fileAgent struct {
	ID               string     `yaml:"id"`
	Name             string     `yaml:"name"`
	Description      string     `yaml:"description"`
	SystemPrompt     string     `yaml:"system_prompt"`
	SystemPromptFile string     `yaml:"system_prompt_file"`
	Model            fileModel  `yaml:"model"`
	Tools            fileTools  `yaml:"tools"`
	Approval         yaml.Node  `yaml:"approval"` // glob → ask|allow|deny, in order
	IfBusy           string     `yaml:"if_busy"`
	Limits           fileLimits `yaml:"limits"`
}

type fileModel struct {
	Backend       string   `yaml:"backend"`
	BaseURL       string   `yaml:"base_url"`
	Model         string   `yaml:"model"`
	APIKeyEnv     string   `yaml:"api_key_env"`
	APIKeyFile    string   `yaml:"api_key_file"`
	APIKey        string   `yaml:"api_key"` // inline: allowed, but warned about
	ContextTokens int      `yaml:"context_tokens"`
	ImageInput    string   `yaml:"image_input"`
	Timeout       duration `yaml:"timeout"`
	MaxRetries    *int     `yaml:"max_retries"`
	SendReasoning bool     `yaml:"send_reasoning"`
}

type fileTools struct {
	Builtin    *[]string       `yaml:"builtin"`
	MCPConfig  string          `yaml:"mcp_config"`
	MCPServers yaml.Node       `yaml:"mcp_servers"` // checked by the mcp package, in mcp.json form
	A2AAgents  []fileA2ARemote `yaml:"a2a_agents"`
	Allow      []string        `yaml:"allow"`
	Deny       []string        `yaml:"deny"`
	Timeout    duration        `yaml:"timeout"`
}

type fileLimits struct {
	MaxToolRounds          int      `yaml:"max_tool_rounds"`
	MaxConcurrentTurns     *int     `yaml:"max_concurrent_turns"`
	MessagesPerMinute      *int     `yaml:"messages_per_minute"`
	ConversationsPerMinute *int     `yaml:"conversations_per_minute"`
	MaxImageBytes          int      `yaml:"max_image_bytes"`
	TemporalIdle           duration `yaml:"temporal_idle"`
}

// fileA2ARemote is a base URL, or {url, token_env | token_file}.
type fileA2ARemote struct {
	URL       string `yaml:"url"`
	TokenEnv  string `yaml:"token_env"`
	TokenFile string `yaml:"token_file"`
	line      int
}

func (r *fileA2ARemote) UnmarshalYAML(n *yaml.Node) error {
	r.line = n.Line
	if n.Kind == yaml.ScalarNode {
		r.URL = n.Value
		return nil
	}
	type plain fileA2ARemote
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	p.line = n.Line
	*r = fileA2ARemote(p)
	return nil
}

// duration is a Go duration ("30s", "2m") in the file.
type duration struct {
	d   time.Duration
	set bool
}

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || err != nil || v <= 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a positive Go duration such as 30s or 2m, got %s", n.Line, shown(n))}}
	}
	d.d, d.set = v, true
	return nil
}

// FileError is one mistake in the configuration file.
type FileError struct {
	File    string
	Line    int    // 0 when the mistake has no line (a missing file)
	Field   string // the key's path, "agents[1].model.base_url"; "" for the document
	Problem string
}

func (e FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// maxFileBytes bounds the file: a configuration is a few kilobytes.
const maxFileBytes = 4 << 20

// Load reads the configuration from the environment (FromEnv) and, when
// path is not empty, from the file at path. The file describes the agents;
// process settings come from the file unless the environment sets them
// (AGENTIK_PORT and AGENTIK_HOST override listen, AGENTIK_DB_PATH and
// AGENTIK_DATABASE_URL override database, and so on), and the tokens of
// AGENTIK_AUTH_TOKENS are added to the file's. Without a file, Agents holds
// the one agent the environment describes. The error joins every mistake
// found: FieldErrors for variables, FileErrors for the file.
func Load(path string, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c, envErr := FromEnv(getenv)
	if path == "" {
		return c, envErr
	}
	c.Agents = nil
	b, err := os.ReadFile(path)
	if err != nil {
		return c, errors.Join(envErr, FileError{File: path, Problem: "cannot be read: " + unwrapPathError(err)})
	}
	if len(b) > maxFileBytes {
		return c, errors.Join(envErr, FileError{File: path, Problem: fmt.Sprintf("larger than %d bytes: is it the right file?", maxFileBytes)})
	}
	l := &loader{file: path, dir: filepath.Dir(path), getenv: getenv}
	l.apply(&c, b)
	c.File = path
	if l.more > 0 {
		l.errs = append(l.errs, FileError{File: path, Problem: fmt.Sprintf("and %d more mistakes", l.more)})
	}
	return c, errors.Join(envErr, errors.Join(l.errs...))
}

// Check validates the file at path as Load would, without starting
// anything; the environment is read as for Load.
func Check(path string, getenv func(string) string) (Config, error) { return Load(path, getenv) }

func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// loader decodes one file and collects its mistakes.
type loader struct {
	file, dir string
	getenv    func(string) string
	errs      []error
	more      int            // mistakes past maxMistakes, counted only
	lines     map[string]int // field path → line of its key (or item)
	valueAt   map[int]string // line → path of the value that starts there
	warnings  []string
	// expandFailed: a ${VAR} could not be expanded; decoding stops there.
	expandFailed bool
}

func (l *loader) bad(field, problem string) {
	l.badAt(l.line(field), field, problem)
}

func (l *loader) badAt(line int, field, problem string) {
	if len(l.errs) >= maxMistakes {
		l.more++
		return
	}
	l.errs = append(l.errs, FileError{File: l.file, Line: line, Field: field, Problem: problem})
}

// maxMistakes bounds the mistakes reported: a file of 100,000 wrong items
// is one mistake a person fixes once.
const maxMistakes = 100

// line returns the line of field, or of its nearest ancestor present in
// the file.
func (l *loader) line(field string) int {
	for p := field; p != ""; p = parent(p) {
		if n, ok := l.lines[p]; ok {
			return n
		}
	}
	return 0
}

func parent(p string) string {
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return ""
}

func (l *loader) apply(c *Config, data []byte) {
	// The shape first: the library builds the whole tree before anything
	// can look at it (shape.go).
	if e := shapeOf(data); e != nil {
		l.badAt(e.line, "", e.problem)
		return
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.badAt(0, "", "the file is empty: want at least one agent under agents:")
			return
		}
		l.syntax(err)
		return
	}
	if e := checkTree(&doc); e != nil {
		l.badAt(e.line, "", e.problem)
		return
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.badAt(extra.Line, "", "a second YAML document (---): the file holds one")
		return
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		l.badAt(root.Line, "", "want a mapping with agents: (and listen:, database:, auth:, …)")
		return
	}
	l.lines, l.valueAt = map[string]int{}, map[int]string{}
	l.index(root, "")
	l.expand(root, "")
	l.known(root, reflect.TypeOf(file{}), "")
	if len(l.errs) > 0 && l.expandFailed {
		return // an unset variable would show again as an empty value
	}
	var f file
	if err := root.Decode(&f); err != nil {
		l.decodeErr(err)
		return
	}
	l.resolve(c, &f, root)
}

// index records the line of every key and item, and for each line the
// path of the deepest key (or item) on it.
func (l *loader) index(n *yaml.Node, p string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := join(p, k.Value)
			if _, ok := l.lines[kp]; !ok {
				l.lines[kp] = k.Line
			}
			l.valueAt[k.Line] = kp
			l.index(v, kp)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			ip := fmt.Sprintf("%s[%d]", p, i)
			l.lines[ip] = v.Line
			if _, ok := l.valueAt[v.Line]; !ok {
				l.valueAt[v.Line] = ip
			}
			l.index(v, ip)
		}
	}
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntax reports a YAML syntax error with its line.
func (l *loader) syntax(err error) {
	for _, msg := range strings.Split(err.Error(), "\n") {
		if m := yamlLine.FindStringSubmatch(strings.TrimSpace(msg)); m != nil {
			n, _ := strconv.Atoi(m[1])
			l.badAt(n, "", "YAML: "+m[2])
			continue
		}
		l.badAt(0, "", "YAML: "+strings.TrimPrefix(msg, "yaml: "))
	}
}

var unmarshalMsg = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (.+)$")

// decodeErr reports the type errors of Decode with the field at their line.
func (l *loader) decodeErr(err error) {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		l.syntax(err)
		return
	}
	for _, msg := range te.Errors {
		m := yamlLine.FindStringSubmatch(msg)
		if m == nil {
			l.badAt(0, "", msg)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		problem := m[2]
		if u := unmarshalMsg.FindStringSubmatch(problem); u != nil {
			problem = "want " + goTypeName(u[3]) + ", got " + yamlKind(u[1], u[2])
		}
		l.badAt(n, l.valueAt[n], problem)
	}
}

func goTypeName(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "config."):
		return "a mapping"
	}
	return t
}

func yamlKind(tag, value string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	case "str":
		return strconv.Quote(value)
	}
	return value
}

func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return strconv.Quote(n.Value)
}

// known reports the keys of n that t does not have, recursively.
func (l *loader) known(n *yaml.Node, t reflect.Type, p string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(yaml.Node{}) || t == reflect.TypeOf(duration{}) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if t == reflect.TypeOf(fileA2ARemote{}) && n.Kind == yaml.ScalarNode {
				return
			}
			l.badAt(n.Line, p, "want a mapping, got "+shown(n))
			return
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			fields[tag] = f
			names = append(names, tag)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				l.badAt(k.Line, join(p, k.Value), "unknown key"+suggest(k.Value, names)+"; known here: "+strings.Join(names, ", "))
				continue
			}
			l.known(v, f.Type, join(p, k.Value))
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, v := range n.Content {
				l.known(v, t.Elem(), fmt.Sprintf("%s[%d]", p, i))
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				l.known(n.Content[i+1], t.Elem(), join(p, n.Content[i].Value))
			}
		}
	}
}

// suggest names a known key close to k (a typo), or nothing.
func suggest(k string, names []string) string {
	best, dist := "", 3
	for _, n := range names {
		if d := editDistance(k, n); d < dist {
			best, dist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// varRef is a ${NAME} or ${NAME:-default} reference.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${VAR} references in the scalar values of n from the
// environment ($${ stands for a literal ${). A reference to an unset
// variable without a default is a mistake. The inline MCP servers are left
// alone: the mcp package expands them as it expands mcp.json.
func (l *loader) expand(n *yaml.Node, p string) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		v, err := expandString(n.Value, l.getenv)
		if err != nil {
			l.badAt(n.Line, p, err.Error())
			l.expandFailed = true
			return
		}
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 && n.Tag == "!!str" {
			n.Tag = "" // resolved again from the expanded value: ${PORT} may be an integer
		}
		n.Value = v
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			kp := join(p, n.Content[i].Value)
			if strings.HasSuffix(kp, ".tools.mcp_servers") {
				continue
			}
			l.expand(n.Content[i+1], kp)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			l.expand(v, fmt.Sprintf("%s[%d]", p, i))
		}
	}
}

func expandString(s string, getenv func(string) string) (string, error) {
	const literal = "\x00lit\x00"
	s = strings.ReplaceAll(s, "$${", literal)
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
			err = fmt.Errorf("${%s} is not set (use ${%s:-default} for a default, $${ for a literal ${)", m[1], m[1])
		}
		return ""
	})
	if err != nil {
		return "", err
	}
	if strings.Contains(varRef.ReplaceAllString(s, ""), "${") {
		return "", errors.New("malformed variable reference: want ${NAME} or ${NAME:-default} ($${ for a literal ${)")
	}
	return strings.ReplaceAll(out, literal, "${"), nil
}

// resolve checks the decoded file and applies it to c.
func (l *loader) resolve(c *Config, f *file, root *yaml.Node) {
	set := func(v string) bool { return l.getenv(v) != "" }

	// Process settings; the environment overrides them.
	if f.Listen != "" {
		host, port, err := net.SplitHostPort(f.Listen)
		n, perr := strconv.Atoi(port)
		switch {
		case err != nil || perr != nil || n < 0 || n > 65535:
			l.bad("listen", fmt.Sprintf("want host:port or :port such as \":8080\", got %q", f.Listen))
		default:
			if !set("AGENTIK_PORT") {
				c.Port = n
			}
			if !set("AGENTIK_HOST") {
				c.Host = host
			}
		}
	}
	if f.Database != "" && !set("AGENTIK_DB_PATH") && !set("AGENTIK_DATABASE_URL") {
		if strings.HasPrefix(f.Database, "postgres://") || strings.HasPrefix(f.Database, "postgresql://") {
			c.DatabaseURL = f.Database
		} else if strings.Contains(f.Database, "://") {
			l.bad("database", "want a SQLite file path or a postgres:// URL")
		} else {
			c.DBPath = l.path(f.Database)
		}
	}
	if f.Log.Level != "" && !set("AGENTIK_LOG_LEVEL") {
		l.oneOf("log.level", f.Log.Level, &c.LogLevel, "debug", "info", "warn", "error")
	}
	if f.Log.Format != "" && !set("AGENTIK_LOG_FORMAT") {
		l.oneOf("log.format", f.Log.Format, &c.LogFormat, "text", "json")
	}
	if len(f.HTTP.CORSOrigins) > 0 && !set("AGENTIK_CORS_ORIGINS") {
		origins, err := parseOrigins(strings.Join(f.HTTP.CORSOrigins, ","))
		if err != nil {
			l.bad("http.cors_origins", err.Error())
		}
		c.HTTP.CORSOrigins = origins
	}
	if f.HTTP.BodyTimeout.set && !set("AGENTIK_BODY_TIMEOUT") {
		c.HTTP.BodyTimeout = f.HTTP.BodyTimeout.d
	}
	if f.HTTP.MaxBodyBytes != 0 && !set("AGENTIK_MAX_BODY_BYTES") {
		if f.HTTP.MaxBodyBytes < 1024 || f.HTTP.MaxBodyBytes > 1<<30 {
			l.bad("http.max_body_bytes", "want an integer from 1024 to 1073741824")
		} else {
			c.MaxBodyBytes = f.HTTP.MaxBodyBytes
		}
	}

	// Agents.
	if len(f.Agents) == 0 {
		l.bad("agents", "want at least one agent (the first is the default agent)")
	}
	ids := map[string]int{}
	for i, fa := range f.Agents {
		a := l.agent(c, fmt.Sprintf("agents[%d]", i), fa)
		a.Default = i == 0
		if a.ID != "" {
			if j, dup := ids[a.ID]; dup {
				l.bad(fmt.Sprintf("agents[%d].id", i), fmt.Sprintf("%q is also the id of agents[%d]", a.ID, j))
			}
			ids[a.ID] = i
		}
		c.Agents = append(c.Agents, a)
	}

	// Tokens: the file's, then AGENTIK_AUTH_TOKENS's (added by the caller
	// from c.Auth.Tokens).
	seen := map[string]int{}
	for i, ft := range f.Auth.Tokens {
		p := fmt.Sprintf("auth.tokens[%d]", i)
		t := TokenEntry{Principal: ft.Principal, Agents: ft.Agents, Env: ft.TokenEnv, File: l.pathOrEmpty(ft.TokenFile), Admin: ft.Admin}
		if ft.Principal == "" || strings.ContainsAny(ft.Principal, "\n,") {
			l.bad(p+".principal", "required: the name the token acts for (no comma or newline)")
		}
		switch n := btoi(ft.TokenEnv != "") + btoi(ft.TokenFile != "") + btoi(ft.Token != ""); {
		case n == 0:
			l.bad(p, "needs token_env or token_file (the token itself never belongs in the file)")
		case n > 1:
			l.bad(p, "give one of token_env, token_file and token")
		}
		if ft.Token != "" {
			t.Inline = ft.Token
			l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: the token of principal %s is written in the file: prefer token_env or token_file", l.file, l.line(p+".token"), ft.Principal))
		}
		if ft.TokenEnv != "" && l.getenv(ft.TokenEnv) == "" {
			l.bad(p+".token_env", ft.TokenEnv+" is not set")
		}
		for j, id := range ft.Agents {
			if _, ok := ids[id]; !ok {
				l.bad(fmt.Sprintf("%s.agents[%d]", p, j), fmt.Sprintf("no agent has the id %q", id))
			}
		}
		if j, dup := seen[ft.Principal]; dup && ft.Principal != "" {
			l.bad(p+".principal", fmt.Sprintf("%q is also the principal of auth.tokens[%d]: give a principal one entry", ft.Principal, j))
		}
		seen[ft.Principal] = i
		c.Tokens = append(c.Tokens, t)
	}
	if f.Auth.TokensFile != "" && !set("AGENTIK_AUTH_TOKENS_FILE") {
		c.Auth.TokensFile = l.path(f.Auth.TokensFile)
	}
	if f.Auth.Required {
		c.Auth.Mode = "required"
	}
	if c.Auth.Mode == "required" && !c.Auth.Enabled() && len(c.Tokens) == 0 {
		l.bad("auth.required", "needs tokens: auth.tokens, auth.tokens_file or AGENTIK_AUTH_TOKENS")
	}
	// Resolve the tokens now, so that a missing file stops start-up.
	for i, t := range c.Tokens {
		if t.Inline == "" && t.File == "" && (t.Env == "" || l.getenv(t.Env) == "") {
			continue // no source, or one reported above
		}
		if _, err := t.Value(l.getenv); err != nil {
			l.bad(fmt.Sprintf("auth.tokens[%d]", i), err.Error())
		}
	}
	c.Warnings = append(c.Warnings, l.warnings...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (l *loader) oneOf(field, v string, dst *string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			*dst = v
			return
		}
	}
	l.bad(field, fmt.Sprintf("want one of %s, got %q", strings.Join(allowed, ", "), v))
}

// path resolves a path of the file relative to the file's directory.
func (l *loader) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.dir, p)
}

func (l *loader) pathOrEmpty(p string) string { return l.path(p) }

// agent resolves one agents: entry.
func (l *loader) agent(c *Config, p string, fa fileAgent) Agent {
	env := c.AgentFromEnv() // the process defaults the file does not set
	a := Agent{
		ID: fa.ID, Name: fa.Name, Description: fa.Description,
		LLMTimeout: c.LLMTimeout, MaxRetries: c.LLMMaxRetries, ImageInput: "auto",
		ToolTimeout: c.ToolTimeout, MaxToolRounds: c.MaxToolRounds,
		MaxConcurrentTurns: env.MaxConcurrentTurns, MessagesPerMinute: env.MessagesPerMinute,
		ConversationsPerMinute: env.ConversationsPerMinute, MaxImageBytes: env.MaxImageBytes, TemporalIdle: env.TemporalIdle,
		IfBusy: fa.IfBusy,
	}
	switch {
	case fa.ID == "":
		l.bad(p+".id", "required: a URL-safe id such as support (lower-case letters, digits, - and _)")
	case !ValidAgentID(fa.ID):
		l.bad(p+".id", fmt.Sprintf("%q is not URL-safe: want 1 to 64 lower-case letters, digits, - and _, starting with a letter or digit", fa.ID))
	}
	if a.Name == "" {
		a.Name = fa.ID
	}
	switch {
	case fa.SystemPrompt != "" && fa.SystemPromptFile != "":
		l.bad(p+".system_prompt", "give system_prompt or system_prompt_file, not both")
	case fa.SystemPromptFile != "":
		a.SystemPromptFile = l.path(fa.SystemPromptFile)
		b, err := os.ReadFile(a.SystemPromptFile)
		if err != nil {
			l.bad(p+".system_prompt_file", "cannot be read: "+unwrapPathError(err))
		}
		a.SystemPrompt = strings.TrimSpace(string(b))
	case fa.SystemPrompt != "":
		a.SystemPrompt = fa.SystemPrompt
	default:
		a.SystemPrompt = Default().SystemPrompt
	}

	// The model.
	m := fa.Model
	mp := p + ".model"
	a.Backend, a.BaseURL, a.Model = m.Backend, strings.TrimRight(m.BaseURL, "/"), m.Model
	if a.Model == "" {
		a.Model = Default().OpenAIModel
	}
	switch n := btoi(m.APIKeyEnv != "") + btoi(m.APIKeyFile != "") + btoi(m.APIKey != ""); {
	case n > 1:
		l.bad(mp, "give one of api_key_env, api_key_file and api_key")
	case m.APIKeyEnv != "":
		if a.APIKey = l.getenv(m.APIKeyEnv); a.APIKey == "" {
			l.bad(mp+".api_key_env", m.APIKeyEnv+" is not set")
		}
	case m.APIKeyFile != "":
		b, err := os.ReadFile(l.path(m.APIKeyFile))
		if err != nil {
			l.bad(mp+".api_key_file", "cannot be read: "+unwrapPathError(err))
		}
		a.APIKey = strings.TrimSpace(string(b))
	case m.APIKey != "":
		a.APIKey = m.APIKey
		l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: the API key of agent %s is written in the file: prefer api_key_env or api_key_file", l.file, l.line(mp+".api_key"), fa.ID))
	}
	switch a.Backend {
	case "":
		a.Backend = BackendDemo
		if a.BaseURL != "" || a.APIKey != "" {
			a.Backend = BackendOpenAI
		}
	case BackendOpenAI, BackendDemo:
	default:
		l.bad(mp+".backend", fmt.Sprintf("want openai or demo, got %q", a.Backend))
	}
	if a.Backend == BackendOpenAI && a.BaseURL == "" {
		if a.APIKey == "" {
			l.bad(mp+".base_url", "the openai backend needs base_url or an API key")
		} else {
			a.BaseURL = "https://api.openai.com/v1"
		}
	}
	if a.BaseURL != "" && !httpURL(a.BaseURL) {
		l.bad(mp+".base_url", fmt.Sprintf("want an http:// or https:// URL, got %q", a.BaseURL))
	}
	if m.ContextTokens != 0 && (m.ContextTokens < 256 || m.ContextTokens > 100_000_000) {
		l.bad(mp+".context_tokens", "want an integer from 256 to 100000000")
	}
	a.ContextTokens = m.ContextTokens
	if m.ImageInput != "" {
		l.oneOf(mp+".image_input", m.ImageInput, &a.ImageInput, "auto", "on", "off")
	}
	if m.Timeout.set {
		a.LLMTimeout = m.Timeout.d
	}
	if m.MaxRetries != nil {
		if *m.MaxRetries < 0 || *m.MaxRetries > 10 {
			l.bad(mp+".max_retries", "want an integer from 0 to 10")
		}
		a.MaxRetries = *m.MaxRetries
	}
	a.SendReasoning = m.SendReasoning

	// Tools.
	t := fa.Tools
	tp := p + ".tools"
	a.Builtin = append([]string(nil), BuiltinTools...)
	if t.Builtin != nil {
		a.Builtin = nil
		for i, name := range *t.Builtin {
			if !contains(BuiltinTools, name) {
				l.bad(fmt.Sprintf("%s.builtin[%d]", tp, i), fmt.Sprintf("unknown built-in tool %q; known: %s", name, strings.Join(BuiltinTools, ", ")))
			}
			a.Builtin = append(a.Builtin, name)
		}
	}
	if t.MCPConfig != "" {
		a.MCPConfig = l.path(t.MCPConfig)
		if st, err := os.Stat(a.MCPConfig); err != nil {
			l.bad(tp+".mcp_config", "cannot be read: "+unwrapPathError(err))
		} else if st.IsDir() {
			l.bad(tp+".mcp_config", "is a directory, want the mcp.json file")
		}
	}
	if t.MCPServers.Kind != 0 {
		if t.MCPServers.Kind != yaml.MappingNode {
			l.bad(tp+".mcp_servers", "want a mapping of server name to {command, args, env} or {url, headers}")
		} else {
			var v map[string]any
			if err := t.MCPServers.Decode(&v); err != nil {
				l.bad(tp+".mcp_servers", "cannot be read: "+err.Error())
			} else if b, err := json.Marshal(map[string]any{"mcpServers": jsonable(v)}); err != nil {
				l.bad(tp+".mcp_servers", "cannot be read: "+err.Error())
			} else {
				a.MCPServers = b
			}
		}
	}
	for i, r := range t.A2AAgents {
		rp := fmt.Sprintf("%s.a2a_agents[%d]", tp, i)
		if !httpURL(r.URL) {
			l.bad(rp, fmt.Sprintf("want an http:// or https:// base URL, got %q", r.URL))
		}
		rem := Remote{URL: r.URL}
		switch {
		case r.TokenEnv != "" && r.TokenFile != "":
			l.bad(rp, "give token_env or token_file, not both")
		case r.TokenEnv != "":
			if rem.Token = l.getenv(r.TokenEnv); rem.Token == "" {
				l.bad(rp+".token_env", r.TokenEnv+" is not set")
			}
		case r.TokenFile != "":
			b, err := os.ReadFile(l.path(r.TokenFile))
			if err != nil {
				l.bad(rp+".token_file", "cannot be read: "+unwrapPathError(err))
			}
			rem.Token = strings.TrimSpace(string(b))
		}
		a.A2AAgents = append(a.A2AAgents, rem)
	}
	for _, list := range []struct {
		name string
		pats []string
		dst  *[]string
	}{{"allow", t.Allow, &a.Allow}, {"deny", t.Deny, &a.Deny}} {
		for i, pat := range list.pats {
			if _, err := path.Match(pat, ""); err != nil || !validPattern(pat) {
				l.bad(fmt.Sprintf("%s.%s[%d]", tp, list.name, i), fmt.Sprintf("%q is not a valid pattern (path.Match syntax: *, ?, [a-z])", pat))
			}
		}
		*list.dst = list.pats
	}
	if t.Timeout.set {
		a.ToolTimeout = t.Timeout.d
	}

	// Approval (SPEC §10): the rules in the file's order, the first match
	// decides.
	if n := fa.Approval; n.Kind != 0 {
		ap := p + ".approval"
		if n.Kind != yaml.MappingNode {
			l.bad(ap, "want a mapping of tool-name pattern to ask, allow or deny")
		}
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			rp := ap + "." + k.Value
			if _, err := path.Match(k.Value, ""); err != nil || !validPattern(k.Value) {
				l.badAt(k.Line, rp, fmt.Sprintf("%q is not a valid tool-name pattern (path.Match syntax)", k.Value))
			}
			switch v.Value {
			case agentik.ApprovalAsk, agentik.ApprovalAllow, agentik.ApprovalDeny:
				if v.Kind == yaml.ScalarNode {
					break
				}
				fallthrough
			default:
				l.badAt(v.Line, rp, fmt.Sprintf("want ask, allow or deny, got %s", shown(v)))
			}
			a.Approval = append(a.Approval, agentik.ApprovalRule{Pattern: k.Value, Action: v.Value})
		}
	}
	if fa.IfBusy != "" {
		l.oneOf(p+".if_busy", fa.IfBusy, &a.IfBusy, "enqueue", "interrupt", "reject")
	}

	// Limits.
	lim := fa.Limits
	lp := p + ".limits"
	if lim.MaxToolRounds != 0 {
		if lim.MaxToolRounds < 1 || lim.MaxToolRounds > 1000 {
			l.bad(lp+".max_tool_rounds", "want an integer from 1 to 1000")
		}
		a.MaxToolRounds = lim.MaxToolRounds
	}
	for _, v := range []struct {
		name string
		src  *int
		dst  *int
	}{
		{"max_concurrent_turns", lim.MaxConcurrentTurns, &a.MaxConcurrentTurns},
		{"messages_per_minute", lim.MessagesPerMinute, &a.MessagesPerMinute},
		{"conversations_per_minute", lim.ConversationsPerMinute, &a.ConversationsPerMinute},
	} {
		if v.src == nil {
			continue
		}
		if *v.src < 0 || *v.src > 1_000_000 {
			l.bad(lp+"."+v.name, "want an integer from 0 (no limit) to 1000000")
		}
		*v.dst = *v.src
	}
	if lim.MaxImageBytes != 0 {
		if lim.MaxImageBytes < 1024 || lim.MaxImageBytes > 1<<30 {
			l.bad(lp+".max_image_bytes", "want an integer from 1024 to 1073741824")
		}
		a.MaxImageBytes = lim.MaxImageBytes
	}
	if lim.TemporalIdle.set {
		a.TemporalIdle = lim.TemporalIdle.d
	}
	return a
}

// jsonable turns what YAML decodes into any into what encoding/json takes
// (YAML mappings may have non-string keys).
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TokenEntry is one token of the file's auth.tokens.
type TokenEntry struct {
	Principal string
	Agents    []string // the only agents it may use; empty: all
	Env       string   // token_env
	File      string   // token_file
	Inline    string   // token (secret)
	// Admin: the principal may use the admin API and /metrics, as if it
	// were listed in AGENTIK_ADMINS.
	Admin bool
}

// Value reads the token (from the environment or its file, again at each
// SIGHUP).
func (t TokenEntry) Value(getenv func(string) string) (string, error) {
	var v string
	switch {
	case t.Inline != "":
		v = t.Inline
	case t.Env != "":
		v = getenv(t.Env)
		if v == "" {
			return "", fmt.Errorf("%s is not set", t.Env)
		}
	case t.File != "":
		b, err := os.ReadFile(t.File)
		if err != nil {
			return "", fmt.Errorf("token_file %s cannot be read: %s", t.File, unwrapPathError(err))
		}
		v = strings.TrimSpace(string(b))
	}
	if len(v) < 8 {
		return "", fmt.Errorf("the token of principal %s is shorter than 8 characters", t.Principal)
	}
	return v, nil
}
