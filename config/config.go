// Package config reads Agentik's configuration from the environment into a
// typed Config: defaults, then environment, then Validate. Every invalid
// value is reported with the variable that holds it, and secrets are never
// printed.
package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik"
)

// LLM backends.
const (
	BackendOpenAI = "openai"
	BackendDemo   = "demo"
	BackendLocal  = "local" // a GGUF model in the process (SPEC §22, docs/local-model.md)
)

// Config is the whole runtime configuration.
type Config struct {
	Port         int    // AGENTIK_PORT
	Host         string // AGENTIK_HOST: interface to listen on ("" = all)
	DBPath       string // AGENTIK_DB_PATH
	DatabaseURL  string // AGENTIK_DATABASE_URL
	SystemPrompt string // AGENTIK_SYSTEM_PROMPT

	Backend       string // AGENTIK_LLM_BACKEND
	OpenAIBaseURL string // OPENAI_BASE_URL
	OpenAIAPIKey  string // OPENAI_API_KEY or OPENAI_API_KEY_FILE
	OpenAIModel   string // OPENAI_MODEL
	LLMMaxRetries int    // AGENTIK_LLM_MAX_RETRIES

	// The local backend (docs/local-model.md).
	LocalModelPath string // AGENTIK_LOCAL_MODEL_PATH: a GGUF file
	LocalThreads   int    // AGENTIK_LOCAL_THREADS (0: half the logical CPUs, at most 8)
	LocalSlots     int    // AGENTIK_LOCAL_SLOTS: calls the model runs at once (0: 1)
	LlamaLib       string // AGENTIK_LLAMA_LIB: the folder of llama.cpp's shared libraries

	ContextTokens int    // AGENTIK_CONTEXT_TOKENS (0 = per model name)
	ImageInput    string // AGENTIK_IMAGE_INPUT: auto, on, off
	MaxImageBytes int    // AGENTIK_MAX_IMAGE_BYTES: limit of one image a user sends
	MaxToolRounds int    // AGENTIK_MAX_TOOL_ROUNDS

	// ReasoningToModel sends stored reasoning back to the model
	// (AGENTIK_REASONING_TO_MODEL: on/off; DeepSeek thinking mode needs it).
	ReasoningToModel bool

	LLMTimeout   time.Duration // AGENTIK_LLM_TIMEOUT
	ToolTimeout  time.Duration // AGENTIK_TOOL_TIMEOUT
	DrainTimeout time.Duration // AGENTIK_DRAIN_TIMEOUT
	TemporalIdle time.Duration // AGENTIK_TEMPORAL_IDLE
	KeepAlive    time.Duration // AGENTIK_SSE_KEEPALIVE

	// Tool approval (SPEC §10, docs/approvals.md).
	ToolApproval agentik.ApprovalPolicy // AGENTIK_TOOL_APPROVAL: "send_*=ask,delete_*=deny"
	// SharedState is what the default agent's model does with the
	// conversation's shared state (docs/state.md): AGENTIK_STATE off (the
	// default), context (sees it) or tool (sees it, and update_state).
	SharedState     string
	ApprovalTimeout time.Duration // AGENTIK_APPROVAL_TIMEOUT (0: calls wait until answered)

	MaxBodyBytes int64  // AGENTIK_MAX_BODY_BYTES
	OnRestart    string // AGENTIK_ON_RESTART: resume or interrupt
	LogLevel     string // AGENTIK_LOG_LEVEL: debug, info, warn, error
	LogFormat    string // AGENTIK_LOG_FORMAT: text or json

	// PostgreSQL (AGENTIK_DATABASE_URL set): see docs/postgres.md. Zero
	// values take the postgres package's defaults.
	DBPoolSize         int           // AGENTIK_DB_POOL_SIZE
	DBStatementTimeout time.Duration // AGENTIK_DB_STATEMENT_TIMEOUT

	// File is the configuration file the agents come from ("" when the
	// environment alone describes the one agent). Agents holds every agent
	// of the process, the default first; Tokens the file's auth.tokens;
	// Warnings what start-up should log about the file (secrets written in
	// it). See file.go and agent.go.
	File     string
	Agents   []Agent
	Tokens   []TokenEntry
	Warnings []string

	// One struct per area, each declared and read in its own file.
	MCP       MCPConfig
	A2A       A2AConfig
	AGUI      AGUIConfig
	LangGraph LangGraphConfig
	WS        WSConfig
	IRC       IRCConfig
	Auth      AuthConfig

	MCPServer MCPServerConfig // the MCP server facade (MCP is the tool source)
	// OpenAICompat is the OpenAI-compatible front door (OpenAI* above
	// configure the model the agents use).
	OpenAICompat OpenAICompatConfig
	HTTP         HTTPConfig
	Obs          ObsConfig       // metrics and the admin API
	Schedules    SchedulesConfig // schedules and webhooks (schedules.go)
	Memory       MemoryConfig    // the environment's agent's memory (memory.go)
}

// Default returns the configuration used when no variable is set.
func Default() Config {
	return Config{
		Port:          8080,
		DBPath:        "./agentik.db",
		SystemPrompt:  "You are a helpful assistant. Answer concisely and use the tools you are given when they help.",
		OpenAIModel:   "gpt-4o-mini",
		LLMMaxRetries: 2,
		ImageInput:    "auto",
		MaxImageBytes: 10 << 20,
		MaxToolRounds: 16,
		LLMTimeout:    120 * time.Second,
		ToolTimeout:   60 * time.Second,
		DrainTimeout:  30 * time.Second,
		TemporalIdle:  30 * time.Minute,
		KeepAlive:     15 * time.Second,
		MaxBodyBytes:  16 << 20,
		OnRestart:     "resume",
		LogLevel:      "info",
		LogFormat:     "text",
	}
}

// FieldError is one invalid variable.
type FieldError struct {
	Var, Value, Problem string
}

func (e FieldError) Error() string {
	if e.Value == "" {
		return e.Var + ": " + e.Problem
	}
	return fmt.Sprintf("%s=%q: %s", e.Var, e.Value, e.Problem)
}

// reader reads typed values from the environment and collects one
// FieldError per bad variable. Each area of the configuration (config.go,
// and one file per facade or tool source) reads its own variables with it.
type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) bad(v, val, problem string) { r.errs = append(r.errs, FieldError{v, val, problem}) }

func (r *reader) str(v string, dst *string) {
	if s := r.getenv(v); s != "" {
		*dst = s
	}
}

func (r *reader) integer(v string, dst *int, min, max int) {
	s := r.getenv(v)
	if s == "" {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < min || n > max {
		r.bad(v, s, fmt.Sprintf("want an integer from %d to %d", min, max))
		return
	}
	*dst = n
}

func (r *reader) duration(v string, dst *time.Duration) {
	s := r.getenv(v)
	if s == "" {
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d <= 0 {
		r.bad(v, s, "want a positive Go duration such as 30s or 2m")
		return
	}
	*dst = d
}

func (r *reader) oneOf(v string, dst *string, allowed ...string) {
	s := strings.ToLower(strings.TrimSpace(r.getenv(v)))
	if s == "" {
		return
	}
	for _, a := range allowed {
		if s == a {
			*dst = s
			return
		}
	}
	r.bad(v, s, "want one of "+strings.Join(allowed, ", "))
}

// list reads a comma-separated list, trimming blanks.
func (r *reader) list(v string, dst *[]string) {
	s := r.getenv(v)
	if s == "" {
		return
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	*dst = out
}

// FromEnv reads the configuration from getenv (os.Getenv when nil) over the
// defaults and validates it. The error joins one FieldError per bad variable.
func FromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Default()
	r := &reader{getenv: getenv}
	bad, str, integer, duration, oneOf := r.bad, r.str, r.integer, r.duration, r.oneOf

	integer("AGENTIK_PORT", &c.Port, 0, 65535)
	str("AGENTIK_HOST", &c.Host)
	str("AGENTIK_DB_PATH", &c.DBPath)
	str("AGENTIK_DATABASE_URL", &c.DatabaseURL)
	if u := c.DatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		bad("AGENTIK_DATABASE_URL", "", "want a postgres:// or postgresql:// URL") // the value may hold a password
	}
	integer("AGENTIK_DB_POOL_SIZE", &c.DBPoolSize, 1, 1000)
	duration("AGENTIK_DB_STATEMENT_TIMEOUT", &c.DBStatementTimeout)
	str("AGENTIK_SYSTEM_PROMPT", &c.SystemPrompt)
	oneOf("AGENTIK_LLM_BACKEND", &c.Backend, BackendOpenAI, BackendDemo, BackendLocal)
	str("AGENTIK_LOCAL_MODEL_PATH", &c.LocalModelPath)
	integer("AGENTIK_LOCAL_THREADS", &c.LocalThreads, 1, 1024)
	integer("AGENTIK_LOCAL_SLOTS", &c.LocalSlots, 1, 64)
	str("AGENTIK_LLAMA_LIB", &c.LlamaLib)
	str("OPENAI_BASE_URL", &c.OpenAIBaseURL)
	str("OPENAI_API_KEY", &c.OpenAIAPIKey)
	if f := getenv("OPENAI_API_KEY_FILE"); f != "" && c.OpenAIAPIKey == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			bad("OPENAI_API_KEY_FILE", f, "cannot be read")
		} else {
			c.OpenAIAPIKey = strings.TrimSpace(string(b))
		}
	}
	str("OPENAI_MODEL", &c.OpenAIModel)
	integer("AGENTIK_LLM_MAX_RETRIES", &c.LLMMaxRetries, 0, 10)
	integer("AGENTIK_CONTEXT_TOKENS", &c.ContextTokens, 256, 100_000_000)
	oneOf("AGENTIK_IMAGE_INPUT", &c.ImageInput, "auto", "on", "off")
	oneOf("AGENTIK_STATE", &c.SharedState, "off", "context", "tool")
	integer("AGENTIK_MAX_IMAGE_BYTES", &c.MaxImageBytes, 1024, 1<<30)
	reasoning := ""
	oneOf("AGENTIK_REASONING_TO_MODEL", &reasoning, "on", "off", "true", "false", "1", "0")
	c.ReasoningToModel = reasoning == "on" || reasoning == "true" || reasoning == "1"
	integer("AGENTIK_MAX_TOOL_ROUNDS", &c.MaxToolRounds, 1, 1000)
	duration("AGENTIK_LLM_TIMEOUT", &c.LLMTimeout)
	duration("AGENTIK_TOOL_TIMEOUT", &c.ToolTimeout)
	duration("AGENTIK_DRAIN_TIMEOUT", &c.DrainTimeout)
	duration("AGENTIK_TEMPORAL_IDLE", &c.TemporalIdle)
	duration("AGENTIK_SSE_KEEPALIVE", &c.KeepAlive)
	if v := getenv("AGENTIK_TOOL_APPROVAL"); v != "" {
		p, err := agentik.ParseApprovalPolicy(v)
		if err != nil {
			bad("AGENTIK_TOOL_APPROVAL", v, agentik.ErrorMessage(err))
		}
		c.ToolApproval = p
	}
	if getenv("AGENTIK_APPROVAL_TIMEOUT") != "" {
		duration("AGENTIK_APPROVAL_TIMEOUT", &c.ApprovalTimeout)
	}
	if s := getenv("AGENTIK_MAX_BODY_BYTES"); s != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < 1024 || n > 1<<30 {
			bad("AGENTIK_MAX_BODY_BYTES", s, "want an integer from 1024 to 1073741824")
		} else {
			c.MaxBodyBytes = n
		}
	}
	oneOf("AGENTIK_ON_RESTART", &c.OnRestart, "resume", "interrupt")
	oneOf("AGENTIK_LOG_LEVEL", &c.LogLevel, "debug", "info", "warn", "error")
	oneOf("AGENTIK_LOG_FORMAT", &c.LogFormat, "text", "json")

	// Each area reads its own variables (one file per area).
	c.MCP.read(r)
	c.A2A.read(r)
	c.AGUI.read(r)
	c.LangGraph.read(r)
	c.WS.read(r)
	c.IRC.read(r)
	c.Auth.read(r)
	c.MCPServer.read(r)
	c.OpenAICompat.read(r)
	c.HTTP.read(r)
	c.Obs.read(r)
	c.Schedules.read(r)
	c.Memory.read(r)

	if c.Backend == "" {
		c.Backend = BackendDemo
		if c.OpenAIBaseURL != "" || c.OpenAIAPIKey != "" {
			c.Backend = BackendOpenAI
		}
	}
	if c.Backend == BackendOpenAI && c.OpenAIBaseURL == "" {
		if c.OpenAIAPIKey == "" {
			bad("OPENAI_BASE_URL", "", "the openai backend needs OPENAI_BASE_URL or OPENAI_API_KEY")
		} else {
			c.OpenAIBaseURL = "https://api.openai.com/v1"
		}
	}
	if c.Backend == BackendLocal && c.LocalModelPath == "" {
		bad("AGENTIK_LOCAL_MODEL_PATH", "", "the local backend needs a GGUF model file")
	}
	if c.OpenAIBaseURL != "" && !strings.HasPrefix(c.OpenAIBaseURL, "http://") && !strings.HasPrefix(c.OpenAIBaseURL, "https://") {
		bad("OPENAI_BASE_URL", c.OpenAIBaseURL, "want an http:// or https:// URL")
	}
	c.Agents = []Agent{c.AgentFromEnv()}
	return c, errors.Join(r.errs...)
}

// ImageInputFor resolves the AGENTIK_IMAGE_INPUT setting for a model name.
func (c Config) ImageInputFor(model string) bool {
	switch c.ImageInput {
	case "on":
		return true
	case "off":
		return false
	}
	m := strings.ToLower(model)
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-5", "o3", "o4", "claude", "gemini", "llava", "-vl", "vision", "pixtral", "gemma3", "llama4", "minicpm-v"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// ContextTokensFor resolves the context budget for a model name.
func (c Config) ContextTokensFor(model string) int {
	if c.ContextTokens > 0 {
		return c.ContextTokens
	}
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "gpt-4.1"), strings.Contains(m, "gemini"):
		return 1_000_000
	case strings.Contains(m, "gpt-5"), strings.Contains(m, "claude"):
		return 200_000
	case strings.Contains(m, "gpt-4o"), strings.Contains(m, "o3"), strings.Contains(m, "o4"), strings.Contains(m, "deepseek"):
		return 128_000
	}
	return 32768
}

// Redacted returns a copy safe to print: secrets are replaced.
func (c Config) Redacted() Config {
	if c.OpenAIAPIKey != "" {
		c.OpenAIAPIKey = "[redacted]"
	}
	if c.DatabaseURL != "" {
		c.DatabaseURL = "[redacted]"
	}
	if c.Auth.Tokens != "" {
		c.Auth.Tokens = "[redacted]"
	}
	if c.Memory.EmbeddingsAPIKey != "" {
		c.Memory.EmbeddingsAPIKey = "[redacted]"
	}
	if len(c.A2A.AgentTokens) > 0 {
		tokens := make([]string, len(c.A2A.AgentTokens))
		for i, t := range c.A2A.AgentTokens {
			if t != "" {
				tokens[i] = "[redacted]"
			}
		}
		c.A2A.AgentTokens = tokens
	}
	agents := make([]Agent, len(c.Agents))
	for i, a := range c.Agents {
		agents[i] = a.redacted()
	}
	c.Agents = agents
	tokens := make([]TokenEntry, len(c.Tokens))
	for i, t := range c.Tokens {
		if t.Inline != "" {
			t.Inline = "[redacted]"
		}
		tokens[i] = t
	}
	c.Tokens = tokens
	return c
}
