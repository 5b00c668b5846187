package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentik/agentik"
)

// agentEntry is one agents: entry being resolved: the rows of agentOptions
// read its file entry f and write its Agent a.
type agentEntry struct {
	l *loader
	p string // the entry's path, "agents[2]"
	f *fileAgent
	a *Agent
}

// bad reports a mistake at key, a path under the entry.
func (e *agentEntry) bad(key, problem string) { e.l.bad(e.p+"."+key, problem) }

// agentOption is one setting of an agents: entry: its key under the entry
// (where its mistakes are reported) and how it is checked and set.
type agentOption struct {
	key   string
	apply func(e *agentEntry, key string)
}

// agentOptions are the settings of an agents: entry, in the order they are
// checked. What the entry leaves out keeps the value agent starts from:
// the process's own (AGENTIK_LLM_TIMEOUT, …) or the built-in default.
var agentOptions = []agentOption{
	{"id", (*agentEntry).id},
	{"system_prompt", (*agentEntry).systemPrompt}, // or system_prompt_file
	{"model", (*agentEntry).apiKey},               // api_key_env, api_key_file or api_key
	{"model.backend", (*agentEntry).backend},
	{"model.base_url", (*agentEntry).baseURL},
	{"model.path", (*agentEntry).modelPath},
	{"model.threads", number(1, 1024, func(f *fileAgent, a *Agent) (int, *int) { return f.Model.Threads, &a.Threads })},
	{"model.slots", number(1, 64, func(f *fileAgent, a *Agent) (int, *int) { return f.Model.Slots, &a.Slots })},
	{"model.context_tokens", number(256, 100_000_000, func(f *fileAgent, a *Agent) (int, *int) { return f.Model.ContextTokens, &a.ContextTokens })},
	{"model.image_input", choice(func(f *fileAgent, a *Agent) (string, *string) { return f.Model.ImageInput, &a.ImageInput }, "auto", "on", "off")},
	{"model.timeout", lasting(func(f *fileAgent, a *Agent) (duration, *time.Duration) { return f.Model.Timeout, &a.LLMTimeout })},
	{"model.max_retries", optional(0, 10, "", func(f *fileAgent, a *Agent) (*int, *int) { return f.Model.MaxRetries, &a.MaxRetries })},
	{"tools.builtin", (*agentEntry).builtin},
	{"tools.mcp_config", (*agentEntry).mcpConfig},
	{"tools.mcp_servers", (*agentEntry).mcpServers},
	{"tools.a2a_agents", (*agentEntry).a2aAgents},
	{"tools.allow", patterns(func(f *fileAgent, a *Agent) ([]string, *[]string) { return f.Tools.Allow, &a.Allow })},
	{"tools.deny", patterns(func(f *fileAgent, a *Agent) ([]string, *[]string) { return f.Tools.Deny, &a.Deny })},
	{"tools.timeout", lasting(func(f *fileAgent, a *Agent) (duration, *time.Duration) { return f.Tools.Timeout, &a.ToolTimeout })},
	{"approval", (*agentEntry).approval},
	{"schedules", (*agentEntry).schedules}, // schedulefile.go
	{"webhooks", (*agentEntry).webhooks},
	{"memory", (*agentEntry).memory}, // memory.go
	{"state", func(e *agentEntry, _ string) {
		e.a.StateTool, e.a.StateContext = e.f.State.Tool, e.f.State.Tool || e.f.State.Context
	}},
	{"if_busy", choice(func(f *fileAgent, a *Agent) (string, *string) { return f.IfBusy, &a.IfBusy }, busyPolicies...)},
	{"limits.max_tool_rounds", number(1, 1000, func(f *fileAgent, a *Agent) (int, *int) { return f.Limits.MaxToolRounds, &a.MaxToolRounds })},
	{"limits.max_concurrent_turns", optional(0, 1_000_000, noLimit, func(f *fileAgent, a *Agent) (*int, *int) {
		return f.Limits.MaxConcurrentTurns, &a.MaxConcurrentTurns
	})},
	{"limits.messages_per_minute", optional(0, 1_000_000, noLimit, func(f *fileAgent, a *Agent) (*int, *int) {
		return f.Limits.MessagesPerMinute, &a.MessagesPerMinute
	})},
	{"limits.conversations_per_minute", optional(0, 1_000_000, noLimit, func(f *fileAgent, a *Agent) (*int, *int) {
		return f.Limits.ConversationsPerMinute, &a.ConversationsPerMinute
	})},
	{"limits.max_image_bytes", number(1024, 1<<30, func(f *fileAgent, a *Agent) (int, *int) { return f.Limits.MaxImageBytes, &a.MaxImageBytes })},
	{"limits.temporal_idle", lasting(func(f *fileAgent, a *Agent) (duration, *time.Duration) { return f.Limits.TemporalIdle, &a.TemporalIdle })},
}

// agent resolves the agents: entry fa at path p: the values it starts
// from, then every row of agentOptions.
func (l *loader) agent(c *Config, p string, fa fileAgent) Agent {
	env := c.AgentFromEnv() // the process defaults the file does not set
	m := fa.Model
	a := Agent{
		ID: fa.ID, Name: cmp.Or(fa.Name, fa.ID), Description: fa.Description,
		Backend: m.Backend, BaseURL: strings.TrimRight(m.BaseURL, "/"), Model: cmp.Or(m.Model, Default().OpenAIModel),
		LLMTimeout: c.LLMTimeout, MaxRetries: c.LLMMaxRetries, ImageInput: "auto", SendReasoning: m.SendReasoning,
		Builtin: append([]string(nil), BuiltinTools...), ToolTimeout: c.ToolTimeout, MaxToolRounds: c.MaxToolRounds,
		MaxConcurrentTurns: env.MaxConcurrentTurns, MessagesPerMinute: env.MessagesPerMinute,
		ConversationsPerMinute: env.ConversationsPerMinute, MaxImageBytes: env.MaxImageBytes, TemporalIdle: env.TemporalIdle,
		IfBusy:  fa.IfBusy,
		Threads: env.Threads, Slots: env.Slots, LlamaLib: env.LlamaLib,
	}
	e := &agentEntry{l: l, p: p, f: &fa, a: &a}
	for _, o := range agentOptions {
		o.apply(e, o.key)
	}
	return a
}

// The kinds of simple rows: each reads its value in the file and the
// place it goes in the Agent through at.

// number is an integer from lo to hi; 0 (left out) keeps the default.
func number(lo, hi int, at func(*fileAgent, *Agent) (int, *int)) func(*agentEntry, string) {
	return func(e *agentEntry, key string) {
		v, dst := at(e.f, e.a)
		if v == 0 {
			return
		}
		if v < lo || v > hi {
			e.bad(key, fmt.Sprintf("want an integer from %d to %d", lo, hi))
		}
		*dst = v
	}
}

// noLimit is what 0 means to a per-principal limit, said in its mistakes.
const noLimit = " (no limit)"

// optional is an integer from lo (whose meaning, if any, is loNote) to hi
// that the file may leave out (nil), keeping the default.
func optional(lo, hi int, loNote string, at func(*fileAgent, *Agent) (*int, *int)) func(*agentEntry, string) {
	return func(e *agentEntry, key string) {
		v, dst := at(e.f, e.a)
		if v == nil {
			return
		}
		if *v < lo || *v > hi {
			e.bad(key, fmt.Sprintf("want an integer from %d%s to %d", lo, loNote, hi))
		}
		*dst = *v
	}
}

// choice is one of allowed; "" (left out) keeps the default.
func choice(at func(*fileAgent, *Agent) (string, *string), allowed ...string) func(*agentEntry, string) {
	return func(e *agentEntry, key string) {
		if v, dst := at(e.f, e.a); v != "" {
			e.l.oneOf(e.p+"."+key, v, dst, allowed...)
		}
	}
}

// lasting is a duration (checked as the file is decoded).
func lasting(at func(*fileAgent, *Agent) (duration, *time.Duration)) func(*agentEntry, string) {
	return func(e *agentEntry, _ string) {
		if v, dst := at(e.f, e.a); v.set {
			*dst = v.d
		}
	}
}

// patterns is a list of tool-name patterns (path.Match syntax).
func patterns(at func(*fileAgent, *Agent) ([]string, *[]string)) func(*agentEntry, string) {
	return func(e *agentEntry, key string) {
		pats, dst := at(e.f, e.a)
		for i, pat := range pats {
			if _, err := path.Match(pat, ""); err != nil || !validPattern(pat) {
				e.bad(fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("%q is not a valid pattern (path.Match syntax: *, ?, [a-z])", pat))
			}
		}
		*dst = pats
	}
}

// The rows of their own.

// id is required and URL-safe.
func (e *agentEntry) id(key string) {
	switch id := e.f.ID; {
	case id == "":
		e.bad(key, "required: a URL-safe id such as support (lower-case letters, digits, - and _)")
	case !ValidAgentID(id):
		e.bad(key, fmt.Sprintf("%q is not URL-safe: want 1 to 64 lower-case letters, digits, - and _, starting with a letter or digit", id))
	}
}

// systemPrompt is system_prompt, or the content of system_prompt_file
// (re-read on SIGHUP), or the default prompt.
func (e *agentEntry) systemPrompt(key string) {
	switch f := e.f; {
	case f.SystemPrompt != "" && f.SystemPromptFile != "":
		e.bad(key, "give system_prompt or system_prompt_file, not both")
	case f.SystemPromptFile != "":
		e.a.SystemPromptFile = e.l.path(f.SystemPromptFile)
		e.a.SystemPrompt = e.l.readFile(e.p+".system_prompt_file", e.a.SystemPromptFile)
	case f.SystemPrompt != "":
		e.a.SystemPrompt = f.SystemPrompt
	default:
		e.a.SystemPrompt = Default().SystemPrompt
	}
}

// apiKey is the model's key: from the variable api_key_env names, the file
// api_key_file names or, warned about, api_key itself; one of them at most.
func (e *agentEntry) apiKey(key string) {
	switch m := e.f.Model; {
	case btoi(m.APIKeyEnv != "")+btoi(m.APIKeyFile != "")+btoi(m.APIKey != "") > 1:
		e.bad(key, "give one of api_key_env, api_key_file and api_key")
	case m.APIKeyEnv != "":
		e.a.APIKey = e.l.fromEnv(e.p+"."+key+".api_key_env", m.APIKeyEnv)
	case m.APIKeyFile != "":
		e.a.APIKey = e.l.readFile(e.p+"."+key+".api_key_file", e.l.path(m.APIKeyFile))
	case m.APIKey != "":
		e.a.APIKey = m.APIKey
		e.l.warn(e.p+"."+key+".api_key", "the API key of agent "+e.f.ID+" is written in the file: prefer api_key_env or api_key_file")
	}
}

// backend is openai or demo; left out, openai when the model has an
// endpoint or a key.
func (e *agentEntry) backend(key string) {
	switch a := e.a; a.Backend {
	case "":
		a.Backend = BackendDemo
		if a.BaseURL != "" || a.APIKey != "" {
			a.Backend = BackendOpenAI
		}
	case BackendOpenAI, BackendDemo, BackendLocal:
	default:
		e.bad(key, fmt.Sprintf("want openai, demo or local, got %q", a.Backend))
	}
}

// modelPath is the local backend's GGUF file, relative to the
// configuration file's folder; the local backend needs one.
func (e *agentEntry) modelPath(key string) {
	a, m := e.a, e.f.Model
	if a.Backend != BackendLocal {
		if m.Path != "" || m.Threads != 0 || m.Slots != 0 {
			e.bad(key, "path, threads and slots are for the local backend (backend: local)")
		}
		return
	}
	if m.Path == "" {
		e.bad(key, "the local backend needs the path of a GGUF model file")
		return
	}
	a.ModelPath = e.l.path(m.Path)
}

// baseURL is an http(s) URL; the openai backend with a key and no
// base_url calls OpenAI.
func (e *agentEntry) baseURL(key string) {
	a := e.a
	if a.Backend == BackendOpenAI && a.BaseURL == "" {
		if a.APIKey == "" {
			e.bad(key, "the openai backend needs base_url or an API key")
		} else {
			a.BaseURL = "https://api.openai.com/v1"
		}
	}
	if a.BaseURL != "" && !httpURL(a.BaseURL) {
		e.bad(key, fmt.Sprintf("want an http:// or https:// URL, got %q", a.BaseURL))
	}
}

// builtin names built-in tools; left out, all of them.
func (e *agentEntry) builtin(key string) {
	if e.f.Tools.Builtin == nil {
		return
	}
	e.a.Builtin = nil
	for i, name := range *e.f.Tools.Builtin {
		if !slices.Contains(BuiltinTools, name) {
			e.bad(fmt.Sprintf("%s[%d]", key, i), fmt.Sprintf("unknown built-in tool %q; known: %s", name, strings.Join(BuiltinTools, ", ")))
		}
		e.a.Builtin = append(e.a.Builtin, name)
	}
}

// mcpConfig is the path of an mcp.json, relative to the file; its content
// is checked when the servers start.
func (e *agentEntry) mcpConfig(key string) {
	if e.f.Tools.MCPConfig == "" {
		return
	}
	e.a.MCPConfig = e.l.path(e.f.Tools.MCPConfig)
	if st, err := os.Stat(e.a.MCPConfig); err != nil {
		e.bad(key, "cannot be read: "+unwrapPathError(err))
	} else if st.IsDir() {
		e.bad(key, "is a directory, want the mcp.json file")
	}
}

// mcpServers are inline MCP servers, kept as an mcp.json document for the
// mcp package (which checks and expands them as it does mcp.json).
func (e *agentEntry) mcpServers(key string) {
	n := e.f.Tools.MCPServers
	if n.Kind == 0 {
		return
	}
	if n.Kind != yaml.MappingNode {
		e.bad(key, "want a mapping of server name to {command, args, env} or {url, headers}")
		return
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		e.bad(key, "cannot be read: "+err.Error())
	} else if b, err := json.Marshal(map[string]any{"mcpServers": jsonable(v)}); err != nil {
		e.bad(key, "cannot be read: "+err.Error())
	} else {
		e.a.MCPServers = b
	}
}

// a2aAgents are remote A2A agents offered as tools, each a base URL with
// perhaps a token from token_env or token_file.
func (e *agentEntry) a2aAgents(key string) {
	for i, r := range e.f.Tools.A2AAgents {
		rp := fmt.Sprintf("%s.%s[%d]", e.p, key, i)
		if !httpURL(r.URL) {
			e.l.bad(rp, fmt.Sprintf("want an http:// or https:// base URL, got %q", r.URL))
		}
		rem := Remote{URL: r.URL}
		switch {
		case r.TokenEnv != "" && r.TokenFile != "":
			e.l.bad(rp, "give token_env or token_file, not both")
		case r.TokenEnv != "":
			rem.Token = e.l.fromEnv(rp+".token_env", r.TokenEnv)
		case r.TokenFile != "":
			rem.Token = e.l.readFile(rp+".token_file", e.l.path(r.TokenFile))
		}
		e.a.A2AAgents = append(e.a.A2AAgents, rem)
	}
}

// approval is the tool approval policy (SPEC §10): tool-name pattern →
// ask, allow or deny, in the file's order (the first match decides).
func (e *agentEntry) approval(key string) {
	n := e.f.Approval
	if n.Kind == 0 {
		return
	}
	ap := e.p + "." + key
	if n.Kind != yaml.MappingNode {
		e.bad(key, "want a mapping of tool-name pattern to ask, allow or deny")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		rp := ap + "." + k.Value
		if _, err := path.Match(k.Value, ""); err != nil || !validPattern(k.Value) {
			e.l.badAt(k.Line, rp, fmt.Sprintf("%q is not a valid tool-name pattern (path.Match syntax)", k.Value))
		}
		switch v.Value {
		case agentik.ApprovalAsk, agentik.ApprovalAllow, agentik.ApprovalDeny:
			if v.Kind == yaml.ScalarNode {
				break
			}
			fallthrough
		default:
			e.l.badAt(v.Line, rp, fmt.Sprintf("want ask, allow or deny, got %s", shown(v)))
		}
		e.a.Approval = append(e.a.Approval, agentik.ApprovalRule{Pattern: k.Value, Action: v.Value})
	}
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
