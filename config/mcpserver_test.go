package config

import (
	"strings"
	"testing"
	"time"
)

func TestMCPServerConfig(t *testing.T) {
	c, err := FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := (MCPServerConfig{Enabled: true, Path: "/mcp", IfBusy: "enqueue", SessionTimeout: 30 * time.Minute}); c.MCPServer != want {
		t.Fatalf("defaults %+v", c.MCPServer)
	}
	c, err = FromEnv(env(map[string]string{"AGENTIK_MCP_SERVER": "off", "AGENTIK_MCP_SERVER_PATH": "/tools/mcp",
		"AGENTIK_MCP_SERVER_IF_BUSY": "reject", "AGENTIK_MCP_SERVER_SESSION_TIMEOUT": "5m"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (MCPServerConfig{Path: "/tools/mcp", IfBusy: "reject", SessionTimeout: 5 * time.Minute}); c.MCPServer != want {
		t.Fatalf("set %+v", c.MCPServer)
	}
	_, err = FromEnv(env(map[string]string{"AGENTIK_MCP_SERVER": "maybe", "AGENTIK_MCP_SERVER_PATH": "mcp",
		"AGENTIK_MCP_SERVER_IF_BUSY": "wait", "AGENTIK_MCP_SERVER_SESSION_TIMEOUT": "0s"}))
	for _, v := range []string{"AGENTIK_MCP_SERVER=", "AGENTIK_MCP_SERVER_PATH", "AGENTIK_MCP_SERVER_IF_BUSY", "AGENTIK_MCP_SERVER_SESSION_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name %s: %v", v, err)
		}
	}
}
