package config

import (
	"fmt"
	"strings"

	"github.com/agentik/agentik"
)

// MemorySpec is an agent's memory (SPEC §19, docs/memory.md): whether it
// is on, whose blocks a conversation sees, the blocks that seed every
// principal's set, and an optional embeddings endpoint for semantic recall.
type MemorySpec struct {
	Enabled bool
	Scope   string // agentik.MemoryScopePrincipal (default) or MemoryScopeAgent
	// Blocks seed the set: a principal who never changed a block sees the
	// value given here; Description, Limit and ReadOnly always come from
	// here. Limit is resolved (DefaultMemoryLimit when left out).
	Blocks     []agentik.MemoryBlock
	Embeddings EmbeddingsSpec
}

// EmbeddingsSpec is an OpenAI-compatible /v1/embeddings endpoint
// (memory.embeddings); BaseURL "" when none is configured.
type EmbeddingsSpec struct {
	BaseURL string
	Model   string
	APIKey  string // secret, from api_key_env ("" none)
}

type fileMemory struct {
	Enabled    bool              `yaml:"enabled"`
	Scope      string            `yaml:"scope"`
	Blocks     []fileMemoryBlock `yaml:"blocks"`
	Embeddings fileEmbeddings    `yaml:"embeddings"`
}

type fileMemoryBlock struct {
	Label       string `yaml:"label"`
	Value       string `yaml:"value"`
	Description string `yaml:"description"`
	Limit       int    `yaml:"limit"`
	ReadOnly    bool   `yaml:"read_only"`
}

type fileEmbeddings struct {
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKeyEnv string `yaml:"api_key_env"`
}

// DefaultMemoryBlocks are the blocks of an agent that turns memory on
// without naming any (AGENTIK_MEMORY=on, or memory: {enabled: true}).
func DefaultMemoryBlocks() []agentik.MemoryBlock {
	return []agentik.MemoryBlock{
		{Label: "persona", Description: "Who you are and how you behave; keep it current.", Limit: agentik.DefaultMemoryLimit},
		{Label: "human", Description: "What you know about the person you talk with: name, preferences, facts worth remembering across conversations.", Limit: agentik.DefaultMemoryLimit},
	}
}

// memory checks and sets the entry's memory.
func (e *agentEntry) memory(key string) {
	f := e.f.Memory
	m := MemorySpec{Enabled: f.Enabled, Scope: f.Scope}
	switch f.Scope {
	case "":
		m.Scope = agentik.MemoryScopePrincipal
	case agentik.MemoryScopePrincipal, agentik.MemoryScopeAgent:
	default:
		e.bad(key+".scope", "want principal or agent")
	}
	seen := map[string]bool{}
	for i, b := range f.Blocks {
		p := fmt.Sprintf("%s.blocks[%d]", key, i)
		blk := agentik.MemoryBlock{Label: b.Label, Value: b.Value, Description: b.Description, Limit: b.Limit, ReadOnly: b.ReadOnly}
		if blk.Limit == 0 {
			blk.Limit = agentik.DefaultMemoryLimit
		}
		switch {
		case !agentik.ValidMemoryLabel(b.Label):
			e.bad(p+".label", "want 1 to 64 letters, digits, '_' and '-', starting with a letter")
		case seen[b.Label]:
			e.bad(p+".label", "another block has the label "+b.Label)
		case blk.Limit < 1 || blk.Limit > agentik.MaxMemoryLimit:
			e.bad(p+".limit", fmt.Sprintf("want an integer from 1 to %d (characters)", agentik.MaxMemoryLimit))
		case agentik.MemoryChars(b.Value) > blk.Limit:
			e.bad(p+".value", fmt.Sprintf("%d characters, over the block's limit of %d", agentik.MemoryChars(b.Value), blk.Limit))
		}
		seen[b.Label] = true
		m.Blocks = append(m.Blocks, blk)
	}
	if m.Enabled && len(f.Blocks) == 0 {
		m.Blocks = DefaultMemoryBlocks()
	}
	em := f.Embeddings
	m.Embeddings = EmbeddingsSpec{BaseURL: strings.TrimRight(em.BaseURL, "/"), Model: em.Model}
	switch {
	case em.BaseURL == "" && (em.Model != "" || em.APIKeyEnv != ""):
		e.bad(key+".embeddings.base_url", "required with model and api_key_env")
	case em.BaseURL != "" && !httpURL(em.BaseURL):
		e.bad(key+".embeddings.base_url", "want an http:// or https:// URL")
	case em.BaseURL != "" && em.Model == "":
		e.bad(key+".embeddings.model", "required with base_url")
	}
	if em.APIKeyEnv != "" {
		m.Embeddings.APIKey = e.l.fromEnv(e.p+"."+key+".embeddings.api_key_env", em.APIKeyEnv)
	}
	e.a.Memory = m
}

// MemoryConfig is the memory of the agent the environment describes (no
// configuration file): AGENTIK_MEMORY=on turns it on with the default
// blocks (persona, human).
type MemoryConfig struct {
	Enabled bool   // AGENTIK_MEMORY: on/off
	Scope   string // AGENTIK_MEMORY_SCOPE: principal (default) or agent
	// An embeddings endpoint for semantic recall (memory.embeddings).
	EmbeddingsBaseURL string // AGENTIK_MEMORY_EMBEDDINGS_URL
	EmbeddingsModel   string // AGENTIK_MEMORY_EMBEDDINGS_MODEL
	EmbeddingsAPIKey  string // AGENTIK_MEMORY_EMBEDDINGS_API_KEY
}

func (c *MemoryConfig) read(r *reader) {
	on := ""
	r.oneOf("AGENTIK_MEMORY", &on, "on", "off", "true", "false", "1", "0")
	c.Enabled = on == "on" || on == "true" || on == "1"
	c.Scope = agentik.MemoryScopePrincipal
	r.oneOf("AGENTIK_MEMORY_SCOPE", &c.Scope, agentik.MemoryScopePrincipal, agentik.MemoryScopeAgent)
	r.str("AGENTIK_MEMORY_EMBEDDINGS_URL", &c.EmbeddingsBaseURL)
	r.str("AGENTIK_MEMORY_EMBEDDINGS_MODEL", &c.EmbeddingsModel)
	r.str("AGENTIK_MEMORY_EMBEDDINGS_API_KEY", &c.EmbeddingsAPIKey)
	c.EmbeddingsBaseURL = strings.TrimRight(c.EmbeddingsBaseURL, "/")
	switch {
	case c.EmbeddingsBaseURL != "" && !httpURL(c.EmbeddingsBaseURL):
		r.bad("AGENTIK_MEMORY_EMBEDDINGS_URL", c.EmbeddingsBaseURL, "want an http:// or https:// URL")
	case c.EmbeddingsBaseURL != "" && c.EmbeddingsModel == "":
		r.bad("AGENTIK_MEMORY_EMBEDDINGS_MODEL", "", "required with AGENTIK_MEMORY_EMBEDDINGS_URL")
	}
}

// spec is the MemorySpec of the environment's agent.
func (c MemoryConfig) spec() MemorySpec {
	m := MemorySpec{Enabled: c.Enabled, Scope: c.Scope,
		Embeddings: EmbeddingsSpec{BaseURL: c.EmbeddingsBaseURL, Model: c.EmbeddingsModel, APIKey: c.EmbeddingsAPIKey}}
	if m.Scope == "" {
		m.Scope = agentik.MemoryScopePrincipal
	}
	if m.Enabled {
		m.Blocks = DefaultMemoryBlocks()
	}
	return m
}
