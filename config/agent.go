package config

import (
	_ "embed"

	"github.com/agentik/agentik"
	"strings"
	"time"
)

// Agent is one agent of the process, resolved: from an agents: entry of the
// configuration file, or — without a file — from the environment (AgentFromEnv
// describes today's single agent exactly as before).
type Agent struct {
	// ID is URL-safe and unique: the agent's paths are /agents/{id}/….
	ID          string
	Name        string
	Description string
	// Default: the first agent of the file; it also answers at the
	// historical paths (/agentik, /agui, /a2a, …).
	Default bool

	SystemPrompt     string
	SystemPromptFile string // where SystemPrompt was read from ("" when inline); re-read on SIGHUP

	// The model.
	Backend       string // BackendOpenAI, BackendDemo or BackendLocal
	BaseURL       string
	Model         string
	APIKey        string // secret
	MaxRetries    int
	LLMTimeout    time.Duration
	ContextTokens int    // 0: by model name
	ImageInput    string // auto, on, off
	SendReasoning bool
	// The local backend: its GGUF file, CPU threads and parallel calls
	// (0: the local package's defaults).
	ModelPath string
	Threads   int
	Slots     int
	LlamaLib  string // AGENTIK_LLAMA_LIB: one llama.cpp per process

	// Tools.
	Builtin       []string // built-in tools by name
	MCPConfig     string   // path to an mcp.json ("" none)
	MCPServers    []byte   // inline servers as an mcp.json document ({"mcpServers":{…}}), nil none
	A2AAgents     []Remote // remote A2A agents offered as tools
	Allow         []string // tool name patterns (path.Match); empty allows all
	Deny          []string
	ToolTimeout   time.Duration
	MaxToolRounds int

	// Approval is the tool approval policy (SPEC §10): its rules in the
	// file's order, tool-name glob → ask, allow or deny (the first match
	// decides); AGENTIK_TOOL_APPROVAL without a file.
	Approval agentik.ApprovalPolicy

	// IfBusy is the busy policy of this agent's facades that do not name
	// one per message (AG-UI, WebSocket, MCP); "" leaves each facade's own
	// default (AGENTIK_AGUI_IF_BUSY, …).
	IfBusy string

	// The conversation's shared state (SPEC §19, docs/state.md):
	// StateContext shows it to the model on every call, StateTool also
	// offers update_state. From the file's state: {tool, context}.
	StateContext bool
	StateTool    bool

	// Schedules and Webhooks from the file's entry (schedulefile.go).
	Schedules []ScheduleSpec
	Webhooks  []WebhookSpec

	// Memory is the agent's memory blocks and recall (SPEC §19, memory.go).
	Memory MemorySpec

	// Per-principal limits on this agent (see AuthConfig for their meaning).
	MaxConcurrentTurns     int
	MessagesPerMinute      int
	ConversationsPerMinute int
	MaxImageBytes          int
	TemporalIdle           time.Duration
}

// Remote is a remote A2A agent offered as a tool.
type Remote struct {
	URL   string
	Token string // bearer token, secret ("" none)
}

// BuiltinTools are the built-in tools an agent may name.
var BuiltinTools = []string{"current_time"}

// DefaultAgentID is the id of the one agent the environment describes.
const DefaultAgentID = "agentik"

// AgentFromEnv is the single agent today's environment variables describe.
func (c Config) AgentFromEnv() Agent {
	a := Agent{
		ID:            DefaultAgentID,
		Name:          "Agentik",
		Description:   "An Agentik agent",
		Default:       true,
		SystemPrompt:  c.SystemPrompt,
		Backend:       c.Backend,
		BaseURL:       c.OpenAIBaseURL,
		Model:         c.OpenAIModel,
		APIKey:        c.OpenAIAPIKey,
		MaxRetries:    c.LLMMaxRetries,
		LLMTimeout:    c.LLMTimeout,
		ContextTokens: c.ContextTokens,
		ImageInput:    c.ImageInput,
		SendReasoning: c.ReasoningToModel,
		ModelPath:     c.LocalModelPath,
		Threads:       c.LocalThreads,
		Slots:         c.LocalSlots,
		LlamaLib:      c.LlamaLib,
		Builtin:       append([]string(nil), BuiltinTools...),
		MCPConfig:     c.MCP.ConfigPath,
		ToolTimeout:   c.ToolTimeout,
		MaxToolRounds: c.MaxToolRounds,
		Approval:      c.ToolApproval,
		StateTool:     c.SharedState == "tool",
		StateContext:  c.SharedState == "tool" || c.SharedState == "context",

		MaxConcurrentTurns:     c.Auth.MaxConcurrentTurns,
		MessagesPerMinute:      c.Auth.MessagesPerMinute,
		ConversationsPerMinute: c.Auth.ConversationsPerMinute,
		MaxImageBytes:          c.MaxImageBytes,
		TemporalIdle:           c.TemporalIdle,

		Memory: c.Memory.spec(),
	}
	for i, u := range c.A2A.Agents {
		a.A2AAgents = append(a.A2AAgents, Remote{URL: u, Token: c.A2A.AgentToken(i)})
	}
	return a
}

// DefaultAgent returns the default agent (the first).
func (c Config) DefaultAgent() Agent {
	if len(c.Agents) == 0 {
		return c.AgentFromEnv()
	}
	return c.Agents[0]
}

// ImageInputFor resolves the agent's image_input for a model name.
func (a Agent) ImageInputFor(model string) bool {
	return Config{ImageInput: a.ImageInput}.ImageInputFor(model)
}

// ContextTokensFor resolves the agent's context budget for a model name.
func (a Agent) ContextTokensFor(model string) int {
	return Config{ContextTokens: a.ContextTokens}.ContextTokensFor(model)
}

// ValidAgentID reports whether id can name an agent: 1 to 64 lower-case
// letters, digits, '-' and '_', starting with a letter or digit — safe in a
// URL path, an IRC channel name and a file name.
func ValidAgentID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || r == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// redacted returns a copy of a safe to print.
func (a Agent) redacted() Agent {
	if a.APIKey != "" {
		a.APIKey = "[redacted]"
	}
	remotes := make([]Remote, len(a.A2AAgents))
	for i, r := range a.A2AAgents {
		remotes[i] = r
		if r.Token != "" {
			remotes[i].Token = "[redacted]"
		}
	}
	a.A2AAgents = remotes
	if a.Memory.Embeddings.APIKey != "" {
		a.Memory.Embeddings.APIKey = "[redacted]"
	}
	if a.MCPServers != nil {
		a.MCPServers = []byte(`"[redacted]"`) // may hold header secrets
	}
	return a
}

func validPattern(p string) bool {
	return p != "" && !strings.ContainsAny(p, "\x00\n")
}

// Example is a commented configuration file of two agents that starts as
// written: the offline demo model, no tokens, no file it does not create
// (agentik config example prints it).
//
//go:embed example.yaml
var Example string

// ExampleFull is the annotated configuration file of three agents, every
// setting shown (agentik config example --full prints it).
//
//go:embed example-full.yaml
var ExampleFull string
