package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsNeedNothing(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8080 || c.DBPath != "./agentik.db" || c.Backend != BackendDemo || c.MaxToolRounds != 16 ||
		c.LLMTimeout != 120*time.Second || c.ToolTimeout != 60*time.Second || c.MaxBodyBytes != 16<<20 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestOpenAIBackendChosenByEndpoint(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_MODEL": "llava"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Backend != BackendOpenAI || !c.ImageInputFor(c.OpenAIModel) {
		t.Fatalf("%+v", c)
	}
	c, err = FromEnv(env(map[string]string{"OPENAI_API_KEY": "sk-secret"}))
	if err != nil || c.OpenAIBaseURL != "https://api.openai.com/v1" {
		t.Fatalf("%+v %v", c, err)
	}
	if strings.Contains(strings.Join([]string{c.Redacted().OpenAIAPIKey}, ""), "sk-secret") {
		t.Fatal("key not redacted")
	}
}

func TestInvalidValuesAreNamed(t *testing.T) {
	_, err := FromEnv(env(map[string]string{
		"AGENTIK_PORT":            "eighty",
		"AGENTIK_LLM_TIMEOUT":     "-3s",
		"AGENTIK_LLM_BACKEND":     "magic",
		"AGENTIK_MAX_TOOL_ROUNDS": "0",
		"AGENTIK_IMAGE_INPUT":     "maybe",
		"AGENTIK_MAX_BODY_BYTES":  "1",
	}))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, v := range []string{"AGENTIK_PORT", "AGENTIK_LLM_TIMEOUT", "AGENTIK_LLM_BACKEND", "AGENTIK_MAX_TOOL_ROUNDS", "AGENTIK_IMAGE_INPUT", "AGENTIK_MAX_BODY_BYTES"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name %s: %v", v, err)
		}
	}
	var fe FieldError
	if !errors.As(err, &fe) {
		t.Fatal("not a FieldError")
	}
	_, err = FromEnv(env(map[string]string{"AGENTIK_LLM_BACKEND": "openai"}))
	if err == nil || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("openai without endpoint: %v", err)
	}
	_, err = FromEnv(env(map[string]string{"OPENAI_BASE_URL": "ftp://x", "OPENAI_API_KEY": "sk-very-secret"}))
	if err == nil || strings.Contains(err.Error(), "sk-very-secret") {
		t.Fatalf("bad url: %v", err)
	}
}
