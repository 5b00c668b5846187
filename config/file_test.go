package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The SPEC §9 example, verbatim: its keys are the contract.
const specExample = `listen: ":8080"                 # optional; AGENTIK_PORT/AGENTIK_HOST override
database: ./agentik.db          # a path (SQLite) or postgres://… URL
auth:
  tokens:                       # optional; AGENTIK_AUTH_TOKENS adds to these
    - principal: alice
      token_env: ALICE_TOKEN    # or token_file: /run/secrets/alice
      agents: [support]         # optional: only these agents; default all
agents:
  - id: support                 # URL-safe, unique; the first one is the default agent
    name: Support
    description: Answers customers
    system_prompt: You are the support agent.
    model:
      base_url: https://api.openai.com/v1
      model: gpt-4o-mini
      api_key_env: OPENAI_API_KEY   # or api_key_file
    tools:
      builtin: [current_time]
      mcp_config: ./mcp.json        # and/or mcp_servers: {name: {command,args,env}|{url,headers}}
      a2a_agents: []                # base URLs
      allow: ["*"]
      deny: []
    approval:                       # §10
      "send_*": ask
`

func TestSpecExample(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "mcp.json", `{"mcpServers":{}}`)
	path := writeFile(t, dir, "agentik.yaml", specExample)
	c, err := Load(path, env(map[string]string{"ALICE_TOKEN": "alice-secret-1", "OPENAI_API_KEY": "sk-test"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8080 || c.DBPath != filepath.Join(dir, "agentik.db") || len(c.Agents) != 1 || len(c.Tokens) != 1 {
		t.Fatalf("%+v", c.Redacted())
	}
	a := c.Agents[0]
	if a.ID != "support" || a.Name != "Support" || a.Description != "Answers customers" || !a.Default ||
		a.SystemPrompt != "You are the support agent." || a.Backend != BackendOpenAI || a.BaseURL != "https://api.openai.com/v1" ||
		a.Model != "gpt-4o-mini" || a.APIKey != "sk-test" || a.MCPConfig != filepath.Join(dir, "mcp.json") ||
		len(a.Builtin) != 1 || a.Builtin[0] != "current_time" || len(a.Allow) != 1 || len(a.Approval) != 1 || a.Approval.Action("send_mail") != "ask" {
		t.Fatalf("%+v", a.redacted())
	}
	if tok, err := c.Tokens[0].Value(env(map[string]string{"ALICE_TOKEN": "alice-secret-1"})); err != nil || tok != "alice-secret-1" ||
		c.Tokens[0].Principal != "alice" || len(c.Tokens[0].Agents) != 1 {
		t.Fatalf("token %+v %v", c.Tokens[0], err)
	}
	if strings.Contains(strings.Join(append(c.Warnings, ""), ""), "sk-test") {
		t.Fatal("a warning shows the key")
	}
}

func TestFileOverridesAndExpansion(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "prompt.md", "  You help with code.\n")
	path := writeFile(t, dir, "agentik.yaml", `
listen: "127.0.0.1:${PORT}"
database: ${DB:-postgres://u@h/db}
log: {level: debug, format: json}
http: {cors_origins: ["https://app.example.com"], body_timeout: 5s}
agents:
  - id: coder
    system_prompt_file: prompt.md
    model: {base_url: "http://127.0.0.1:11434/v1", model: qwen, timeout: 3m, max_retries: 0, image_input: "off"}
    tools:
      builtin: []
      a2a_agents: ["http://a.example/", {url: "http://b.example", token_env: B_TOKEN}]
      mcp_servers:
        fs: {command: mcp-fs, args: ["${HOME_DIR}"]}
    if_busy: reject
    limits: {max_tool_rounds: 4, messages_per_minute: 0, temporal_idle: 1m}
  - id: second
    system_prompt: "costs $${AMOUNT}"
`)
	c, err := Load(path, env(map[string]string{"PORT": "9090", "B_TOKEN": "b-token", "AGENTIK_LOG_FORMAT": "text"}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agents[0]
	if c.Port != 9090 || c.Host != "127.0.0.1" || c.DatabaseURL != "postgres://u@h/db" || c.LogLevel != "debug" || c.LogFormat != "text" ||
		len(c.HTTP.CORSOrigins) != 1 || c.HTTP.BodyTimeout != 5*time.Second {
		t.Fatalf("process: %+v", c.Redacted())
	}
	if a.SystemPrompt != "You help with code." || a.SystemPromptFile == "" || a.Backend != BackendOpenAI || a.LLMTimeout != 3*time.Minute ||
		a.MaxRetries != 0 || a.ImageInput != "off" || len(a.Builtin) != 0 || len(a.A2AAgents) != 2 || a.A2AAgents[1].Token != "b-token" ||
		a.IfBusy != "reject" || a.MaxToolRounds != 4 || a.MessagesPerMinute != 0 || a.TemporalIdle != time.Minute {
		t.Fatalf("agent: %+v", a.redacted())
	}
	// The inline MCP servers are kept for the mcp package, unexpanded.
	if !strings.Contains(string(a.MCPServers), `"${HOME_DIR}"`) || !strings.Contains(string(a.MCPServers), `"mcpServers"`) {
		t.Fatalf("mcp_servers: %s", a.MCPServers)
	}
	if c.Agents[1].SystemPrompt != "costs ${AMOUNT}" || c.Agents[1].Default || c.Agents[1].Backend != BackendDemo {
		t.Fatalf("second: %+v", c.Agents[1])
	}
	// The environment overrides the file's process settings.
	c, err = Load(path, env(map[string]string{"PORT": "9090", "AGENTIK_PORT": "7070", "AGENTIK_DB_PATH": "x.db", "B_TOKEN": "b"}))
	if err != nil || c.Port != 7070 || c.DatabaseURL != "" || c.DBPath != "x.db" {
		t.Fatalf("overrides: %d %q %q %v", c.Port, c.DatabaseURL, c.DBPath, err)
	}
}

func TestWithoutFileOneAgentFromEnv(t *testing.T) {
	c, err := Load("", env(map[string]string{"AGENTIK_SYSTEM_PROMPT": "env prompt", "OPENAI_BASE_URL": "http://x/v1"}))
	if err != nil || len(c.Agents) != 1 {
		t.Fatal(err)
	}
	a := c.Agents[0]
	if a.ID != DefaultAgentID || !a.Default || a.SystemPrompt != "env prompt" || a.BaseURL != "http://x/v1" || a.Backend != BackendOpenAI {
		t.Fatalf("%+v", a)
	}
}

// TestFileErrors: every kind of mistake gives its message with the file,
// line and field (golden: testdata/file_errors.golden).
func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, yaml string }{
		{"empty", ``},
		{"syntax", "agents:\n  - id: a\n   name: b\n"},
		{"not a mapping", "- a\n- b\n"},
		{"two documents", "agents: [{id: a}]\n---\nagents: []\n"},
		{"no agents", "listen: \":8080\"\n"},
		{"unknown key", "agents:\n  - id: a\n    modle: {model: x}\n"},
		{"unknown top key", "listn: \":8080\"\nagents: [{id: a}]\n"},
		{"unknown nested key", "agents:\n  - id: a\n    model:\n      base_url: http://x/v1\n      api_key_envv: K\n"},
		{"wrong type", "agents:\n  - id: a\n    limits:\n      max_tool_rounds: many\n"},
		{"wrong type list", "agents:\n  - id: a\n    tools:\n      allow: \"*\"\n"},
		{"wrong type bool", "auth:\n  required: maybe\nagents: [{id: a}]\n"},
		{"bad duration", "agents:\n  - id: a\n    model: {timeout: soon}\n"},
		{"missing id", "agents:\n  - name: A\n"},
		{"bad id", "agents:\n  - id: Support Team\n"},
		{"duplicate id", "agents:\n  - id: a\n  - id: b\n  - id: a\n"},
		{"duplicate key", "agents:\n  - id: a\n    id: b\n"},
		{"bad listen", "listen: 8080\nagents: [{id: a}]\n"},
		{"bad database", "database: mysql://x\nagents: [{id: a}]\n"},
		{"unset variable", "agents:\n  - id: a\n    system_prompt: ${NOPE}\n"},
		{"malformed variable", "agents:\n  - id: a\n    system_prompt: \"${NOPE\"\n"},
		{"bad base_url", "agents:\n  - id: a\n    model: {base_url: ftp://x}\n"},
		{"two keys", "agents:\n  - id: a\n    model: {api_key_env: A, api_key_file: /k}\n"},
		{"unset key variable", "agents:\n  - id: a\n    model: {base_url: http://x/v1, api_key_env: NOT_SET_KEY}\n"},
		{"unknown builtin", "agents:\n  - id: a\n    tools: {builtin: [current_time, web_search]}\n"},
		{"bad a2a url", "agents:\n  - id: a\n    tools: {a2a_agents: [\"not a url\"]}\n"},
		{"bad pattern", "agents:\n  - id: a\n    tools: {deny: [\"[a-\"]}\n"},
		{"bad approval", "agents:\n  - id: a\n    approval:\n      \"send_*\": maybe\n"},
		{"bad if_busy", "agents:\n  - id: a\n    if_busy: wait\n"},
		{"bad limit", "agents:\n  - id: a\n    limits: {messages_per_minute: -1}\n"},
		{"missing prompt file", "agents:\n  - id: a\n    system_prompt_file: nowhere.md\n"},
		{"missing mcp config", "agents:\n  - id: a\n    tools: {mcp_config: nowhere.json}\n"},
		{"bad mcp_servers", "agents:\n  - id: a\n    tools: {mcp_servers: [a]}\n"},
		{"token without source", "auth:\n  tokens:\n    - principal: alice\nagents: [{id: a}]\n"},
		{"token unknown agent", "auth:\n  tokens:\n    - principal: alice\n      token_env: ALICE\n      agents: [b]\nagents: [{id: a}]\n"},
		{"token unset", "auth:\n  tokens:\n    - principal: alice\n      token_env: NOT_SET_TOKEN\nagents: [{id: a}]\n"},
		{"token short", "auth:\n  tokens:\n    - principal: alice\n      token: abc\nagents: [{id: a}]\n"},
		{"duplicate principal", "auth:\n  tokens:\n    - {principal: alice, token_env: ALICE}\n    - {principal: alice, token_env: ALICE}\nagents: [{id: a}]\n"},
		{"bad cors", "http: {cors_origins: [\"*\"]}\nagents: [{id: a}]\n"},
		{"bad log level", "log: {level: loud}\nagents: [{id: a}]\n"},
	}
	var out strings.Builder
	for _, tc := range cases {
		path := writeFile(t, dir, "agentik.yaml", tc.yaml)
		_, err := Load(path, env(map[string]string{"ALICE": "alice-secret-1"}))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		var fe FileError
		if !errors.As(err, &fe) {
			t.Errorf("%s: not a FileError: %v", tc.name, err)
		}
		out.WriteString("# " + tc.name + "\n")
		out.WriteString(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n")
	}
	// A file that is not there.
	_, err := Load(filepath.Join(dir, "missing.yaml"), env(nil))
	out.WriteString("# missing file\n" + strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n")

	golden := filepath.Join("testdata", "file_errors.golden")
	if *update {
		os.WriteFile(golden, []byte(out.String()), 0o644)
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if out.String() != string(want) {
		t.Fatalf("messages differ from %s (run with -update to accept):\n%s", golden, out.String())
	}
}

func FuzzLoadFile(f *testing.F) {
	f.Add(specExample)
	f.Add("agents:\n  - id: a\n    model: {timeout: 3s}\n    tools: {a2a_agents: [\"http://x\"]}\n")
	f.Add("agents: [{id: a, approval: {\"*\": ask}}]\n")
	f.Add("agents:\n  - id: a\n    memory: {enabled: true, blocks: [{label: human, limit: 3, value: abcd}], embeddings: {base_url: \"http://x\"}}\n")
	f.Add("agents: [[[[[[[[[[[[]]]]]]]]]]]]\n")
	f.Add(aliasBomb(3))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		path := filepath.Join(dir, "f.yaml")
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, env(nil))
		if err != nil {
			for _, e := range unjoin(err) {
				var fe FileError
				var ve FieldError
				if !errors.As(e, &fe) && !errors.As(e, &ve) {
					t.Fatalf("error of another kind: %T %v", e, e)
				}
			}
			return
		}
		if len(c.Agents) == 0 || !c.Agents[0].Default {
			t.Fatalf("accepted without a default agent: %+v", c.Agents)
		}
		for _, a := range c.Agents {
			if !ValidAgentID(a.ID) {
				t.Fatalf("accepted agent id %q", a.ID)
			}
		}
	})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// TestExampleLoads: the annotated example that agentik config example
// --full prints is valid.
func TestExampleLoads(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "prompts"), 0o755)
	writeFile(t, dir, "prompts/coder.md", "You write code.")
	path := writeFile(t, dir, "agentik.yaml", ExampleFull)
	c, err := Load(path, env(map[string]string{"ALICE_TOKEN": "alice-secret-1", "ROUTER_TOKEN": "router-secret-1", "OPS_TOKEN": "ops-secret-1", "OPENAI_API_KEY": "sk-x"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.AdminPrincipals(); !slices.Equal(a, []string{"ops"}) {
		t.Fatalf("admins %v", a)
	}
	c.Obs.Admins = []string{"root", "ops"} // AGENTIK_ADMINS adds to them
	if a := c.AdminPrincipals(); !slices.Equal(a, []string{"root", "ops"}) {
		t.Fatalf("admins with AGENTIK_ADMINS %v", a)
	}
	if len(c.Agents) != 3 || c.Agents[0].ID != "support" || c.Agents[1].SystemPrompt != "You write code." ||
		len(c.Agents[2].A2AAgents) != 2 || c.Agents[2].A2AAgents[0].Token != "router-secret-1" || len(c.Agents[0].MCPServers) == 0 {
		t.Fatalf("%+v", c.Redacted().Agents)
	}
}
