package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// TestMemoryFromFile: an agent's memory: entry is parsed into its
// MemorySpec — blocks with their defaults, the scope, the embeddings
// endpoint with its key from the environment (redacted when printed).
func TestMemoryFromFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "agentik.yaml", `agents:
  - id: a
    memory:
      enabled: true
      scope: agent
      blocks:
        - {label: persona, value: "I am A.", description: Who you are, read_only: true}
        - {label: human, limit: 200}
      embeddings: {base_url: "http://127.0.0.1:9/v1/", model: nomic, api_key_env: EMB_KEY}
  - id: b
    memory: {enabled: true}
  - id: c
`)
	c, err := Load(path, env(map[string]string{"EMB_KEY": "emb-secret-1"}))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agents[0].Memory
	want := []agentik.MemoryBlock{
		{Label: "persona", Value: "I am A.", Description: "Who you are", Limit: agentik.DefaultMemoryLimit, ReadOnly: true},
		{Label: "human", Limit: 200},
	}
	if !a.Enabled || a.Scope != agentik.MemoryScopeAgent || len(a.Blocks) != 2 || a.Blocks[0] != want[0] || a.Blocks[1] != want[1] {
		t.Fatalf("agent a: %+v", a)
	}
	if a.Embeddings != (EmbeddingsSpec{BaseURL: "http://127.0.0.1:9/v1", Model: "nomic", APIKey: "emb-secret-1"}) {
		t.Fatalf("embeddings: %+v", a.Embeddings)
	}
	if r := c.Redacted(); strings.Contains(r.Agents[0].Memory.Embeddings.APIKey, "emb-secret") {
		t.Fatal("the embeddings key is not redacted")
	}
	b := c.Agents[1].Memory
	if !b.Enabled || b.Scope != agentik.MemoryScopePrincipal || len(b.Blocks) != 2 || b.Blocks[0].Label != "persona" || b.Blocks[1].Label != "human" {
		t.Fatalf("agent b (default blocks): %+v", b)
	}
	if m := c.Agents[2].Memory; m.Enabled || len(m.Blocks) != 0 {
		t.Fatalf("agent c has memory: %+v", m)
	}
}

// TestMemoryFileErrors: every mistake of a memory: entry is a FileError at
// its line, naming the field.
func TestMemoryFileErrors(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("é", 11)
	cases := []struct{ name, yaml, field, problem string }{
		{"bad scope", "    memory: {enabled: true, scope: team}\n", "agents[0].memory.scope", "want principal or agent"},
		{"bad label", "    memory:\n      blocks:\n        - {label: \"my block\"}\n", "agents[0].memory.blocks[0].label", "letters, digits"},
		{"empty label", "    memory:\n      blocks:\n        - {value: x}\n", "agents[0].memory.blocks[0].label", "letters, digits"},
		{"duplicate label", "    memory:\n      blocks:\n        - {label: human}\n        - {label: human}\n", "agents[0].memory.blocks[1].label", "another block"},
		{"over limit", "    memory:\n      blocks:\n        - {label: human, limit: 10, value: " + long + "}\n", "agents[0].memory.blocks[0].value", "11 characters, over the block's limit of 10"},
		{"bad limit", "    memory:\n      blocks:\n        - {label: human, limit: -3}\n", "agents[0].memory.blocks[0].limit", "want an integer"},
		{"unknown key", "    memory:\n      blocks:\n        - {label: human, readonly: true}\n", "agents[0].memory.blocks[0].readonly", ""},
		{"bad url", "    memory: {embeddings: {base_url: \"ftp://x\", model: m}}\n", "agents[0].memory.embeddings.base_url", "http"},
		{"no model", "    memory: {embeddings: {base_url: \"http://x/v1\"}}\n", "agents[0].memory.embeddings.model", "required"},
		{"no base_url", "    memory: {embeddings: {model: m}}\n", "agents[0].memory.embeddings.base_url", "required"},
		{"unset key", "    memory: {embeddings: {base_url: \"http://x/v1\", model: m, api_key_env: NOT_SET_EMB}}\n", "agents[0].memory.embeddings.api_key_env", "NOT_SET_EMB is not set"},
		{"enabled not bool", "    memory: {enabled: maybe}\n", "agents[0].memory.enabled", "true or false"},
	}
	for _, tc := range cases {
		path := writeFile(t, dir, "agentik.yaml", "agents:\n  - id: a\n"+tc.yaml)
		_, err := Load(path, env(nil))
		var fe FileError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if fe.Field != tc.field || fe.Line < 3 || !strings.Contains(fe.Problem, tc.problem) {
			t.Errorf("%s: %+v", tc.name, fe)
		}
	}
}

// TestMemoryFromEnv: AGENTIK_MEMORY=on gives the environment's agent the
// default blocks; invalid values are named.
func TestMemoryFromEnv(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil || c.Agents[0].Memory.Enabled || len(c.Agents[0].Memory.Blocks) != 0 {
		t.Fatalf("off by default: %+v %v", c.Agents[0].Memory, err)
	}
	c, err = FromEnv(env(map[string]string{"AGENTIK_MEMORY": "on", "AGENTIK_MEMORY_SCOPE": "agent",
		"AGENTIK_MEMORY_EMBEDDINGS_URL": "http://e/v1", "AGENTIK_MEMORY_EMBEDDINGS_MODEL": "m", "AGENTIK_MEMORY_EMBEDDINGS_API_KEY": "emb-secret-2"}))
	if err != nil {
		t.Fatal(err)
	}
	m := c.DefaultAgent().Memory
	if !m.Enabled || m.Scope != agentik.MemoryScopeAgent || len(m.Blocks) != 2 || m.Embeddings.APIKey != "emb-secret-2" {
		t.Fatalf("%+v", m)
	}
	if strings.Contains(c.Redacted().Memory.EmbeddingsAPIKey+c.Redacted().Agents[0].Memory.Embeddings.APIKey, "emb-secret") {
		t.Fatal("not redacted")
	}
	for k, v := range map[string]string{"AGENTIK_MEMORY": "maybe", "AGENTIK_MEMORY_SCOPE": "team", "AGENTIK_MEMORY_EMBEDDINGS_URL": "x"} {
		_, err := FromEnv(env(map[string]string{k: v}))
		var fe FieldError
		if !errors.As(err, &fe) || fe.Var != k {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
