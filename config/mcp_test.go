package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMCPDefaultsAndVariables(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.MCP.ConfigPath != "" || c.MCP.StartupWait != DefaultMCPStartupWait || c.MCP.CloseTimeout != DefaultMCPCloseTimeout {
		t.Fatalf("defaults %+v", c.MCP)
	}
	file := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(file, []byte(`{}`), 0o600)
	c, err = FromEnv(env(map[string]string{"AGENTIK_MCP_CONFIG": file, "AGENTIK_MCP_CONNECT_TIMEOUT": "5s", "AGENTIK_MCP_MAX_BACKOFF": "10s"}))
	if err != nil || c.MCP.ConfigPath != file || c.MCP.ConnectTimeout != 5*time.Second || c.MCP.MaxBackoff != 10*time.Second {
		t.Fatalf("%+v %v", c.MCP, err)
	}
	_, err = FromEnv(env(map[string]string{"AGENTIK_MCP_CONFIG": "/nonexistent/mcp.json", "AGENTIK_MCP_KEEPALIVE": "often"}))
	if err == nil || !strings.Contains(err.Error(), "AGENTIK_MCP_CONFIG") || !strings.Contains(err.Error(), "AGENTIK_MCP_KEEPALIVE") {
		t.Fatalf("bad values not named: %v", err)
	}
	_, err = FromEnv(env(map[string]string{"AGENTIK_MCP_CONFIG": t.TempDir()}))
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory accepted: %v", err)
	}
}
