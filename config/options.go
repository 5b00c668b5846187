package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The decoded file is applied to the Config by two tables: processOptions
// here, the process settings, and agentOptions (agentoptions.go), the
// settings of one agents: entry. A row names its key and says how the value
// is checked and where it goes; the rows run in order, so the mistakes of a
// file are reported in the order of the tables.

// processOption is one process setting of the file.
type processOption struct {
	key string // its path in the file, "http.body_timeout"
	// override are the variables that take its place: when one is set,
	// the file's value is neither checked nor used.
	override []string
	apply    func(l *loader, c *Config, f *file, key string)
}

// processOptions are the file's process settings, in the order they are
// checked.
var processOptions = []processOption{
	{"listen", nil, (*loader).listen}, // AGENTIK_PORT and AGENTIK_HOST override a part each
	{"database", []string{"AGENTIK_DB_PATH", "AGENTIK_DATABASE_URL"}, (*loader).database},
	{"log.level", []string{"AGENTIK_LOG_LEVEL"}, func(l *loader, c *Config, f *file, key string) {
		if f.Log.Level != "" {
			l.oneOf(key, f.Log.Level, &c.LogLevel, "debug", "info", "warn", "error")
		}
	}},
	{"log.format", []string{"AGENTIK_LOG_FORMAT"}, func(l *loader, c *Config, f *file, key string) {
		if f.Log.Format != "" {
			l.oneOf(key, f.Log.Format, &c.LogFormat, "text", "json")
		}
	}},
	{"http.cors_origins", []string{"AGENTIK_CORS_ORIGINS"}, func(l *loader, c *Config, f *file, key string) {
		if len(f.HTTP.CORSOrigins) > 0 {
			origins, err := parseOrigins(strings.Join(f.HTTP.CORSOrigins, ","))
			if err != nil {
				l.bad(key, err.Error())
			}
			c.HTTP.CORSOrigins = origins
		}
	}},
	{"http.body_timeout", []string{"AGENTIK_BODY_TIMEOUT"}, func(l *loader, c *Config, f *file, key string) {
		if f.HTTP.BodyTimeout.set {
			c.HTTP.BodyTimeout = f.HTTP.BodyTimeout.d
		}
	}},
	{"http.max_body_bytes", []string{"AGENTIK_MAX_BODY_BYTES"}, func(l *loader, c *Config, f *file, key string) {
		switch n := f.HTTP.MaxBodyBytes; {
		case n == 0:
		case n < 1024 || n > 1<<30:
			l.bad(key, "want an integer from 1024 to 1073741824")
		default:
			c.MaxBodyBytes = n
		}
	}},
	{"agents", nil, (*loader).agents},
	// The file's tokens, then AGENTIK_AUTH_TOKENS's (added by the caller
	// from c.Auth.Tokens).
	{"auth.tokens", nil, (*loader).tokens},
	{"auth.tokens_file", []string{"AGENTIK_AUTH_TOKENS_FILE"}, func(l *loader, c *Config, f *file, key string) {
		if f.Auth.TokensFile != "" {
			c.Auth.TokensFile = l.path(f.Auth.TokensFile)
		}
	}},
	{"auth.required", nil, func(l *loader, c *Config, f *file, key string) {
		if f.Auth.Required {
			c.Auth.Mode = "required"
		}
		if c.Auth.Mode == "required" && !c.Auth.Enabled() && len(c.Tokens) == 0 {
			l.bad(key, "needs tokens: auth.tokens, auth.tokens_file or AGENTIK_AUTH_TOKENS")
		}
	}},
}

// resolve checks the decoded file and applies it to c.
func (l *loader) resolve(c *Config, f *file) {
	for _, o := range processOptions {
		if !slices.ContainsFunc(o.override, l.set) {
			o.apply(l, c, f, o.key)
		}
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

// listen sets the port and the host the environment does not set.
func (l *loader) listen(c *Config, f *file, key string) {
	if f.Listen == "" {
		return
	}
	host, port, err := net.SplitHostPort(f.Listen)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n < 0 || n > 65535 {
		l.bad(key, fmt.Sprintf("want host:port or :port such as \":8080\", got %q", f.Listen))
		return
	}
	if !l.set("AGENTIK_PORT") {
		c.Port = n
	}
	if !l.set("AGENTIK_HOST") {
		c.Host = host
	}
}

// database is a SQLite file (relative to the file's directory) or a
// PostgreSQL URL.
func (l *loader) database(c *Config, f *file, key string) {
	switch d := f.Database; {
	case d == "":
	case strings.HasPrefix(d, "postgres://") || strings.HasPrefix(d, "postgresql://"):
		c.DatabaseURL = d
	case strings.Contains(d, "://"):
		l.bad(key, "want a SQLite file path or a postgres:// URL")
	default:
		c.DBPath = l.path(d)
	}
}

// agents resolves every agents: entry; the first is the default agent.
func (l *loader) agents(c *Config, f *file, key string) {
	if len(f.Agents) == 0 {
		l.bad(key, "want at least one agent (the first is the default agent)")
	}
	ids := map[string]int{}
	for i, fa := range f.Agents {
		p := fmt.Sprintf("%s[%d]", key, i)
		a := l.agent(c, p, fa)
		a.Default = i == 0
		if a.ID != "" {
			if j, dup := ids[a.ID]; dup {
				l.bad(p+".id", fmt.Sprintf("%q is also the id of %s[%d]", a.ID, key, j))
			}
			ids[a.ID] = i
		}
		c.Agents = append(c.Agents, a)
	}
}

// tokens checks the entries of auth.tokens and adds them to c.Tokens; the
// agents they name are c.Agents.
func (l *loader) tokens(c *Config, f *file, key string) {
	seen := map[string]int{}
	for i, ft := range f.Auth.Tokens {
		p := fmt.Sprintf("%s[%d]", key, i)
		t := TokenEntry{Principal: ft.Principal, Agents: ft.Agents, Env: ft.TokenEnv, File: l.path(ft.TokenFile), Admin: ft.Admin}
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
			l.warn(p+".token", "the token of principal "+ft.Principal+" is written in the file: prefer token_env or token_file")
		}
		if ft.TokenEnv != "" && l.getenv(ft.TokenEnv) == "" {
			l.bad(p+".token_env", ft.TokenEnv+" is not set")
		}
		for j, id := range ft.Agents {
			if !slices.ContainsFunc(c.Agents, func(a Agent) bool { return a.ID != "" && a.ID == id }) {
				l.bad(fmt.Sprintf("%s.agents[%d]", p, j), fmt.Sprintf("no agent has the id %q", id))
			}
		}
		if j, dup := seen[ft.Principal]; dup && ft.Principal != "" {
			l.bad(p+".principal", fmt.Sprintf("%q is also the principal of %s[%d]: give a principal one entry", ft.Principal, key, j))
		}
		seen[ft.Principal] = i
		c.Tokens = append(c.Tokens, t)
	}
}

// set reports whether the variable v is set (not empty).
func (l *loader) set(v string) bool { return l.getenv(v) != "" }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// oneOf sets *dst to v, the value of field, if it is one of allowed.
func (l *loader) oneOf(field, v string, dst *string, allowed ...string) {
	if slices.Contains(allowed, v) {
		*dst = v
		return
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

// fromEnv returns the variable v that field names; unset is a mistake.
func (l *loader) fromEnv(field, v string) string {
	s := l.getenv(v)
	if s == "" {
		l.bad(field, v+" is not set")
	}
	return s
}

// readFile returns the content of the file at path (resolved), trimmed,
// that field names; a file that cannot be read is a mistake.
func (l *loader) readFile(field, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		l.bad(field, "cannot be read: "+unwrapPathError(err))
	}
	return strings.TrimSpace(string(b))
}

// warn adds a warning about field (a secret written in the file).
func (l *loader) warn(field, what string) {
	l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: %s", l.file, l.line(field), what))
}
