package mcp

import (
	"strings"
	"testing"
)

func TestRedactKeepsURLSecretsOut(t *testing.T) {
	s := &server{cfg: ServerConfig{URL: "https://user:pw@mcp.example/mcp?api_key=s3cret"}}
	got := s.redact(`Post "https://user:pw@mcp.example/mcp?api_key=s3cret": dial tcp: refused (api_key=s3cret)`)
	if strings.Contains(got, "s3cret") || strings.Contains(got, "pw@") || !strings.Contains(got, "https://mcp.example/mcp") {
		t.Fatalf("redacted: %s", got)
	}
	if (&server{}).redact("x") != "x" {
		t.Fatal("stdio servers' texts must pass unchanged")
	}
}
