package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/demollm"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/mcp"
	"github.com/agentik/agentik/memory"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/recall"
	"github.com/agentik/agentik/telemetry"
	"github.com/agentik/agentik/tools"
)

// agent is one agent of the process (SPEC §9): its engine, model and tools.
// a.agents lists them, the default first. The table of front doors
// (doors.go) builds each agent's doors; the doors and routes that serve
// every agent (IRC, GET /agents, the admin API) take that list.
type agent struct {
	ID      string
	Agent   agentik.Agent // the engine
	Default bool
	cfg     config.Agent
	app     *app

	eng   *engine.Engine
	store agentik.Store       // the agent's view of the database
	coord agentik.Coordinator // nil: this process alone uses the store
	llm   agentik.LLM
	reg   *tools.Registry
	mcp   *mcp.Source // nil without MCP servers

	schedules agentik.Schedules // its schedules API (schedules.go)
	webhooks  agentik.Webhooks  // its webhooks API (schedules.go)
	memory    *memory.Service   // its memory blocks; nil without (memory.go)
	recall    *recall.Recall    // conversation_search; nil with memory off (recall.go)
	indexer   *recall.Indexer   // embeds its messages; nil without memory.embeddings (recall.go)
}

// Allows reports whether principal may use the agent (auth.tokens[].agents).
func (ag *agent) Allows(principal string) bool { return ag.app.edge.Allows(principal, ag.ID) }

// agentByID returns the agent with this id, or nil.
func (a *app) agentByID(id string) *agent {
	for _, ag := range a.agents {
		if ag.ID == id {
			return ag
		}
	}
	return nil
}

// buildAgents opens the store and builds every agent of the configuration
// (only the one with id only, when only is not empty): its model, tools and
// engine on the agent's view of the store. Everything it opens is closed
// by a.close.
func (a *app) buildAgents(ctx context.Context, only string) error {
	st, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	a.store = st.base
	a.onClose = append(a.onClose, st.close)
	// Conversations of a database from before agents belong to the
	// default agent.
	def := a.cfg.DefaultAgent()
	if n, err := st.adopt(ctx, def.ID); err != nil {
		return fmt.Errorf("give the existing conversations to agent %s: %w", def.ID, err)
	} else if n > 0 {
		a.log.Info("existing conversations given to the default agent", "agent", def.ID, "conversations", n)
	}
	for _, c := range a.cfg.Agents {
		if only != "" && c.ID != only {
			continue
		}
		ag, err := a.buildAgent(ctx, c, st)
		if err != nil {
			return fmt.Errorf("agent %s: %w", c.ID, err)
		}
		a.agents = append(a.agents, ag)
	}
	if len(a.agents) == 0 {
		return fmt.Errorf("no agent %q in the configuration", only)
	}
	a.eng = a.agents[0].eng
	return nil
}

func (a *app) buildAgent(ctx context.Context, c config.Agent, st *storage) (*agent, error) {
	ag := &agent{ID: c.ID, Default: c.Default, cfg: c, app: a}
	var err error
	if ag.llm, err = newLLM(c, a.log, a.tracing); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if c.Backend == config.BackendLocal && c.ContextTokens == 0 {
		c.ContextTokens = ag.llm.Info().ContextTokens // the context the model was given
		ag.cfg = c
	}
	store, events, coord, err := st.forAgent(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	if err := a.setupMemory(ag, store, events); err != nil {
		return nil, err
	}
	if err := a.setupTools(ctx, ag); err != nil {
		return nil, err
	}
	a.setupRecall(ag, store)
	cfg := a.cfg
	info := agentik.AgentInfo{ID: c.ID, Name: c.Name, Description: c.Description, Version: versionString()}
	ag.eng, err = engine.New(engine.Options{
		Store:                   a.timedStore(c.ID, store),
		Temporal:                memstore.New(),
		Bus:                     events,
		BusSequencesAgentEvents: st.busSequences,
		Cluster:                 coord,

		LLM:           ag.llm,
		Tools:         ag.reg,
		Info:          info,
		SystemPrompt:  c.SystemPrompt,
		MaxToolRounds: c.MaxToolRounds,
		ToolTimeout:   c.ToolTimeout,
		TemporalIdle:  c.TemporalIdle,
		OnRestart:     cfg.OnRestart,
		ImageInput:    ag.llm.Info().ImageInput,

		Context: ag.contextSources(),

		Approval:        c.Approval,
		ApprovalTimeout: cfg.ApprovalTimeout,
		Logger:          a.log.With("agent", c.ID),
		Observer:        ag.observer(),
		Tracer:          a.tracer(c, info),

		ContextTokens: c.ContextTokensFor(ag.llm.Info().Name),
		SendReasoning: c.SendReasoning,
		MaxImageBytes: c.MaxImageBytes,

		MaxTextBytes: cfg.Auth.MaxTextBytes,
		Limiter: st.limiter(c.ID, agentik.Limits{ConversationsPerMinute: c.ConversationsPerMinute, MessagesPerMinute: c.MessagesPerMinute,
			MaxConcurrentTurns: c.MaxConcurrentTurns, TemporalBytes: cfg.Auth.TemporalBytes, TemporalBytesTotal: cfg.Auth.TemporalBytesTotal}),
	})
	if err != nil {
		return nil, err
	}
	ag.Agent, ag.store, ag.coord = ag.eng, store, coord
	return ag, nil
}

// newLLM builds an agent's model backend. With tracing on, its requests
// carry the trace context and its responses name their id and model.
func newLLM(c config.Agent, log *slog.Logger, tracing *telemetry.Tracing) (agentik.LLM, error) {
	if c.Backend == config.BackendLocal {
		return openLocal(c)
	}
	if c.Backend == config.BackendDemo {
		log.Warn("no model endpoint configured: using the offline demo backend; set OPENAI_BASE_URL (and OPENAI_API_KEY, OPENAI_MODEL), or model.base_url in the configuration file, to use a real model", "agent", c.ID)
		demo := demollm.New()
		demo.WordDelay = demollm.PacedWordDelay // streaming visible in the console
		return demo, nil
	}
	retries := c.MaxRetries
	if retries == 0 {
		retries = -1 // openai.Options reads 0 as "the default"
	}
	return openai.New(openai.Options{
		BaseURL:       c.BaseURL,
		APIKey:        c.APIKey,
		Model:         c.Model,
		MaxRetries:    retries,
		Timeout:       c.LLMTimeout,
		ContextTokens: c.ContextTokensFor(c.Model),
		ImageInput:    c.ImageInputFor(c.Model),
		SendReasoning: c.SendReasoning,
		HTTPClient:    &http.Client{Transport: tracing.Transport(openai.NewTransport())}, // pooled for concurrent turns, with the trace context when tracing is on
		Identify:      tracing != nil,
	})
}

// setupTools builds an agent's registry: its built-in tools, then its MCP
// servers and remote A2A agents, behind its allow and deny lists.
func (a *app) setupTools(ctx context.Context, ag *agent) error {
	var builtin []agentik.Tool
	for _, name := range ag.cfg.Builtin {
		if name == "current_time" {
			builtin = append(builtin, tools.CurrentTime{})
		}
	}
	builtin = append(builtin, ag.memoryTools()...)
	if ag.cfg.StateTool {
		builtin = append(builtin, tools.UpdateState{})
	}
	ag.reg = tools.NewRegistry(builtin...)
	ag.reg.SetFilter(toolFilter(ag.cfg.Allow, ag.cfg.Deny))
	if err := a.setupMCP(ctx, ag); err != nil {
		return err
	}
	return a.setupA2AAgents(ctx, ag)
}

// toolFilter keeps the tools allow matches (all when it is empty) that deny
// does not (path.Match patterns, validated by config).
func toolFilter(allow, deny []string) func(string) bool {
	if len(allow) == 0 && len(deny) == 0 {
		return nil
	}
	match := func(pats []string, name string) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	return func(name string) bool {
		return (len(allow) == 0 || match(allow, name)) && !match(deny, name)
	}
}

// contextSources are what the agent adds to its model calls' system
// context (SPEC §19): its memory blocks, then the conversation's shared
// state when the agent shows it.
func (ag *agent) contextSources() []agentik.ContextSource {
	sources := ag.memoryContext()
	if ag.cfg.StateContext {
		sources = append(sources, tools.StateContext{})
	}
	return sources
}
