package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
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
	// Schedules and webhooks of the agent (schedulefile.go).
	Schedules []fileSchedule `yaml:"schedules"`
	Webhooks  []fileWebhook  `yaml:"webhooks"`
	// Memory blocks and recall (memory.go).
	Memory fileMemory `yaml:"memory"`
	// State: what the model does with the conversation's shared state
	// (SPEC §19, docs/state.md).
	State fileState `yaml:"state"`
}

type fileState struct {
	Tool    bool `yaml:"tool"`    // offer update_state (and show the state)
	Context bool `yaml:"context"` // show the state in the model's context
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
	Path          string   `yaml:"path"`    // backend local: the GGUF file
	Threads       int      `yaml:"threads"` // backend local
	Slots         int      `yaml:"slots"`   // backend local
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
	l.resolve(c, &f)
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
