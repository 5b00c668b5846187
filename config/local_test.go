package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalModel: the local backend from the environment and from the
// file (path relative to the file, threads and slots; the process's
// library), and its mistakes named by their variable or key.
func TestLocalModel(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"AGENTIK_LLM_BACKEND": "local", "AGENTIK_LOCAL_MODEL_PATH": "/m/q.gguf",
		"AGENTIK_LOCAL_THREADS": "4", "AGENTIK_LOCAL_SLOTS": "2", "AGENTIK_LLAMA_LIB": "/opt/llama"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Agents[0]; a.Backend != BackendLocal || a.ModelPath != "/m/q.gguf" || a.Threads != 4 || a.Slots != 2 || a.LlamaLib != "/opt/llama" {
		t.Fatalf("agent from the environment: %+v", a)
	}
	for _, bad := range []struct{ env map[string]string }{
		{map[string]string{"AGENTIK_LLM_BACKEND": "local"}},
		{map[string]string{"AGENTIK_LLM_BACKEND": "local", "AGENTIK_LOCAL_MODEL_PATH": "m.gguf", "AGENTIK_LOCAL_THREADS": "0"}},
		{map[string]string{"AGENTIK_LLM_BACKEND": "llama"}},
	} {
		if _, err := FromEnv(env(bad.env)); err == nil {
			t.Errorf("%v accepted", bad.env)
		}
	}

	dir := t.TempDir()
	path := writeFile(t, dir, "agentik.yaml", "agents:\n  - id: a\n    model: {backend: local, path: models/q.gguf, threads: 3, slots: 2, context_tokens: 4096}\n  - id: b\n    model: {backend: local, path: /abs/q.gguf}\n")
	c, err = Load(path, env(map[string]string{"AGENTIK_LLAMA_LIB": "/opt/llama", "AGENTIK_LOCAL_THREADS": "6"}))
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Agents[0], c.Agents[1]
	if a.Backend != BackendLocal || a.ModelPath != filepath.Join(dir, "models/q.gguf") || a.Threads != 3 || a.Slots != 2 || a.ContextTokens != 4096 || a.LlamaLib != "/opt/llama" {
		t.Fatalf("agent a: %+v", a)
	}
	if b.ModelPath != "/abs/q.gguf" || b.Threads != 6 {
		t.Fatalf("agent b: %+v", b)
	}
	for _, bad := range []struct{ yaml, key string }{
		{"agents:\n  - id: a\n    model: {backend: local}\n", "model.path"},
		{"agents:\n  - id: a\n    model: {backend: openai, base_url: http://x/v1, path: q.gguf}\n", "model.path"},
		{"agents:\n  - id: a\n    model: {backend: local, path: q.gguf, threads: -1}\n", "model.threads"},
		{"agents:\n  - id: a\n    model: {backend: llama}\n", "model.backend"},
	} {
		_, err := Load(writeFile(t, dir, "agentik.yaml", bad.yaml), env(nil))
		var fe FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), bad.key) {
			t.Errorf("%q: %v, want an error at %s", bad.yaml, err, bad.key)
		}
	}
}
