package config

import (
	"strings"
	"testing"
)

// FuzzFromEnv feeds arbitrary environments (NAME=value lines) to FromEnv:
// it never panics, every refusal names the variable at fault, and an
// accepted configuration redacts its secrets.
func FuzzFromEnv(f *testing.F) {
	for _, s := range []string{
		"AGENTIK_PORT=8080\nAGENTIK_LLM_TIMEOUT=2m\nOPENAI_BASE_URL=http://127.0.0.1:11434/v1",
		"AGENTIK_PORT=http\nAGENTIK_LLM_TIMEOUT=soon",
		"AGENTIK_PORT=-1\nAGENTIK_MAX_BODY_BYTES=99999999999999999999999",
		"AGENTIK_DRAIN_TIMEOUT=-5s\nAGENTIK_IMAGE_INPUT=maybe\nAGENTIK_ON_RESTART=explode",
		"AGENTIK_AUTH_TOKENS=alice:short,bob\nAGENTIK_AUTH=required",
		"AGENTIK_A2A_AGENTS=ftp://x, http://ok/\nAGENTIK_A2A_AGENT_TOKENS=a,b,c",
		"AGENTIK_WS_ORIGINS=[\nAGENTIK_WS_MAX_MESSAGE_BYTES=0\nAGENTIK_WS_IF_BUSY=queue",
		"OPENAI_API_KEY=sk-secret-value\nAGENTIK_LLM_BACKEND=demo\nAGENTIK_CONTEXT_TOKENS=1e9",
		"AGENTIK_LOG_LEVEL=\x00\nAGENTIK_TEMPORAL_IDLE=1h1h1h\nAGENTIK_AGUI_PATH=../../x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, env string) {
		vars := map[string]string{}
		for _, line := range strings.Split(env, "\n") {
			k, v, ok := strings.Cut(line, "=")
			// Variables that name files are not fuzzed: they would read the
			// machine's files.
			if !ok || strings.HasSuffix(k, "_FILE") || k == "AGENTIK_MCP_CONFIG" {
				continue
			}
			vars[k] = v
		}
		c, err := FromEnv(func(k string) string { return vars[k] })
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "AGENTIK_") && !strings.Contains(msg, "OPENAI_") {
				t.Fatalf("error names no variable: %v", err)
			}
			return
		}
		r := c.Redacted()
		if key := vars["OPENAI_API_KEY"]; len(key) >= 8 && strings.Contains(r.OpenAIAPIKey, key) {
			t.Fatal("Redacted keeps the API key")
		}
	})
}
