package config

import "time"

// MCPServerConfig configures the MCP server facade: the agent served to MCP
// clients over Streamable HTTP (SPEC §14).
type MCPServerConfig struct {
	// FrontDoor: AGENTIK_MCP_SERVER (on or off), AGENTIK_MCP_SERVER_PATH
	// and AGENTIK_MCP_SERVER_IF_BUSY, the busy policy of an ask whose
	// conversation runs a turn.
	FrontDoor
	// SessionTimeout closes an idle session of a client on a protocol
	// revision before 2026-07-28 (the current revision has no sessions).
	SessionTimeout time.Duration // AGENTIK_MCP_SERVER_SESSION_TIMEOUT
	// MaxBodyBytes bounds one request body; an MCP request carries one
	// message of text at most, far below the server's AGENTIK_MAX_BODY_BYTES.
	MaxBodyBytes int64 // AGENTIK_MCP_SERVER_MAX_BODY_BYTES
	// MaxSessions and MaxSessionsPerPrincipal bound the open sessions of
	// the server and of one principal; beyond them initialize is refused.
	MaxSessions             int // AGENTIK_MCP_SERVER_MAX_SESSIONS
	MaxSessionsPerPrincipal int // AGENTIK_MCP_SERVER_MAX_SESSIONS_PER_PRINCIPAL
	// SessionsPerMinute and SessionBurst bound how fast one principal opens
	// sessions (a token bucket).
	SessionsPerMinute int // AGENTIK_MCP_SERVER_SESSIONS_PER_MINUTE
	SessionBurst      int // AGENTIK_MCP_SERVER_SESSION_BURST
}

// Defaults of MCPServerConfig.
const (
	DefaultMCPServerPath           = "/mcp"
	DefaultMCPServerIfBusy         = "enqueue"
	DefaultMCPServerSessionTimeout = 30 * time.Minute

	DefaultMCPServerMaxBodyBytes            = 4 << 20
	DefaultMCPServerMaxSessions             = 4096
	DefaultMCPServerMaxSessionsPerPrincipal = 64
	DefaultMCPServerSessionsPerMinute       = 120
	DefaultMCPServerSessionBurst            = 10
)

func (c *MCPServerConfig) read(r *reader) {
	*c = MCPServerConfig{SessionTimeout: DefaultMCPServerSessionTimeout,
		MaxBodyBytes: DefaultMCPServerMaxBodyBytes, MaxSessions: DefaultMCPServerMaxSessions, MaxSessionsPerPrincipal: DefaultMCPServerMaxSessionsPerPrincipal,
		SessionsPerMinute: DefaultMCPServerSessionsPerMinute, SessionBurst: DefaultMCPServerSessionBurst}
	c.FrontDoor = r.frontDoor("AGENTIK_MCP_SERVER", FrontDoor{Enabled: true, Path: DefaultMCPServerPath, IfBusy: DefaultMCPServerIfBusy})
	r.duration("AGENTIK_MCP_SERVER_SESSION_TIMEOUT", &c.SessionTimeout)
	body := int(c.MaxBodyBytes)
	r.integer("AGENTIK_MCP_SERVER_MAX_BODY_BYTES", &body, 1<<10, 1<<30)
	c.MaxBodyBytes = int64(body)
	r.integer("AGENTIK_MCP_SERVER_MAX_SESSIONS", &c.MaxSessions, 1, 1_000_000)
	r.integer("AGENTIK_MCP_SERVER_MAX_SESSIONS_PER_PRINCIPAL", &c.MaxSessionsPerPrincipal, 1, 1_000_000)
	r.integer("AGENTIK_MCP_SERVER_SESSIONS_PER_MINUTE", &c.SessionsPerMinute, 1, 1_000_000)
	r.integer("AGENTIK_MCP_SERVER_SESSION_BURST", &c.SessionBurst, 1, 1_000_000)
}
