package config

import (
	"strings"
	"time"
)

// MCPServerConfig configures the MCP server facade: the agent served to MCP
// clients over Streamable HTTP (SPEC §14).
type MCPServerConfig struct {
	// Enabled mounts the facade; off removes the endpoint.
	Enabled bool // AGENTIK_MCP_SERVER: on or off
	// Path is where the facade is mounted.
	Path string // AGENTIK_MCP_SERVER_PATH
	// IfBusy is the busy policy of an ask whose conversation runs a turn.
	IfBusy string // AGENTIK_MCP_SERVER_IF_BUSY: enqueue, interrupt, reject
	// SessionTimeout closes an idle session of a client on a protocol
	// revision before 2026-07-28 (the current revision has no sessions).
	SessionTimeout time.Duration // AGENTIK_MCP_SERVER_SESSION_TIMEOUT
}

// Defaults of MCPServerConfig.
const (
	DefaultMCPServerPath           = "/mcp"
	DefaultMCPServerIfBusy         = "enqueue"
	DefaultMCPServerSessionTimeout = 30 * time.Minute
)

func (c *MCPServerConfig) read(r *reader) {
	*c = MCPServerConfig{Enabled: true, Path: DefaultMCPServerPath, IfBusy: DefaultMCPServerIfBusy, SessionTimeout: DefaultMCPServerSessionTimeout}
	enabled := "on"
	r.oneOf("AGENTIK_MCP_SERVER", &enabled, "on", "off")
	c.Enabled = enabled == "on"
	r.str("AGENTIK_MCP_SERVER_PATH", &c.Path)
	if p := c.Path; !strings.HasPrefix(p, "/") || p == "/" || strings.ContainsAny(p, " \t{}?#") {
		r.bad("AGENTIK_MCP_SERVER_PATH", p, "want an absolute path such as /mcp, without spaces, braces, ? or #")
	}
	r.oneOf("AGENTIK_MCP_SERVER_IF_BUSY", &c.IfBusy, "enqueue", "interrupt", "reject")
	r.duration("AGENTIK_MCP_SERVER_SESSION_TIMEOUT", &c.SessionTimeout)
}
