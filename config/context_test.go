package config

import (
	"strings"
	"testing"
)

// Context management variables (docs/context.md).
func TestContextVariables(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxImageBytes != 10<<20 || c.ReasoningToModel || c.ContextTokensFor("llama3.2") != 32768 || c.ContextTokensFor("gpt-4o-mini") != 128_000 {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = FromEnv(env(map[string]string{"AGENTIK_MAX_IMAGE_BYTES": "2048", "AGENTIK_REASONING_TO_MODEL": "on", "AGENTIK_CONTEXT_TOKENS": "4096"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxImageBytes != 2048 || !c.ReasoningToModel || c.ContextTokensFor("gpt-4o") != 4096 {
		t.Fatalf("set: %+v", c)
	}
	for k, v := range map[string]string{"AGENTIK_MAX_IMAGE_BYTES": "12", "AGENTIK_REASONING_TO_MODEL": "maybe", "AGENTIK_CONTEXT_TOKENS": "10"} {
		_, err := FromEnv(env(map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
