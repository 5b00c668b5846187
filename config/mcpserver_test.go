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
	if want := (MCPServerConfig{FrontDoor: FrontDoor{Enabled: true, Path: "/mcp", IfBusy: "enqueue"}, SessionTimeout: 30 * time.Minute,
		MaxBodyBytes: 4 << 20, MaxSessions: 4096, MaxSessionsPerPrincipal: 64, SessionsPerMinute: 120, SessionBurst: 10}); c.MCPServer != want {
		t.Fatalf("defaults %+v", c.MCPServer)
	}
	c, err = FromEnv(env(map[string]string{"AGENTIK_MCP_SERVER": "off", "AGENTIK_MCP_SERVER_PATH": "/tools/mcp",
		"AGENTIK_MCP_SERVER_IF_BUSY": "reject", "AGENTIK_MCP_SERVER_SESSION_TIMEOUT": "5m", "AGENTIK_MCP_SERVER_MAX_BODY_BYTES": "65536",
		"AGENTIK_MCP_SERVER_MAX_SESSIONS": "100", "AGENTIK_MCP_SERVER_MAX_SESSIONS_PER_PRINCIPAL": "5",
		"AGENTIK_MCP_SERVER_SESSIONS_PER_MINUTE": "30", "AGENTIK_MCP_SERVER_SESSION_BURST": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (MCPServerConfig{FrontDoor: FrontDoor{Path: "/tools/mcp", IfBusy: "reject"}, SessionTimeout: 5 * time.Minute,
		MaxBodyBytes: 65536, MaxSessions: 100, MaxSessionsPerPrincipal: 5, SessionsPerMinute: 30, SessionBurst: 3}); c.MCPServer != want {
		t.Fatalf("set %+v", c.MCPServer)
	}
	_, err = FromEnv(env(map[string]string{"AGENTIK_MCP_SERVER": "maybe", "AGENTIK_MCP_SERVER_PATH": "mcp",
		"AGENTIK_MCP_SERVER_IF_BUSY": "wait", "AGENTIK_MCP_SERVER_SESSION_TIMEOUT": "0s", "AGENTIK_MCP_SERVER_MAX_BODY_BYTES": "10",
		"AGENTIK_MCP_SERVER_MAX_SESSIONS": "0", "AGENTIK_MCP_SERVER_MAX_SESSIONS_PER_PRINCIPAL": "-1",
		"AGENTIK_MCP_SERVER_SESSIONS_PER_MINUTE": "many", "AGENTIK_MCP_SERVER_SESSION_BURST": "0"}))
	for _, v := range []string{"AGENTIK_MCP_SERVER=", "AGENTIK_MCP_SERVER_PATH", "AGENTIK_MCP_SERVER_IF_BUSY", "AGENTIK_MCP_SERVER_SESSION_TIMEOUT",
		"AGENTIK_MCP_SERVER_MAX_BODY_BYTES", "AGENTIK_MCP_SERVER_MAX_SESSIONS=", "AGENTIK_MCP_SERVER_MAX_SESSIONS_PER_PRINCIPAL",
		"AGENTIK_MCP_SERVER_SESSIONS_PER_MINUTE", "AGENTIK_MCP_SERVER_SESSION_BURST"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("error does not name %s: %v", v, err)
		}
	}
}
