package config

import (
	"os"
	"time"
)

// MCPConfig configures the MCP tool servers. The server list itself is in
// the file ConfigPath names (mcp.json, parsed by package mcp at start-up);
// these variables tune how the servers are supervised.
type MCPConfig struct {
	ConfigPath string // AGENTIK_MCP_CONFIG: path to mcp.json ("" = no MCP servers)
	// StartupWait: how long after start the first model call (and `agentik
	// tools`) waits for servers still connecting for the first time.
	StartupWait time.Duration // AGENTIK_MCP_STARTUP_WAIT
	// ConnectTimeout bounds one connection attempt (spawn or dial,
	// handshake, tool listing).
	ConnectTimeout time.Duration // AGENTIK_MCP_CONNECT_TIMEOUT
	// CloseTimeout: how long a stdio server may take to exit on shutdown
	// before its process group is killed.
	CloseTimeout time.Duration // AGENTIK_MCP_CLOSE_TIMEOUT
	// MaxBackoff caps the delay between reconnection attempts.
	MaxBackoff time.Duration // AGENTIK_MCP_MAX_BACKOFF
	// KeepAlive is the ping interval that detects a silent server.
	KeepAlive time.Duration // AGENTIK_MCP_KEEPALIVE
}

// Defaults of MCPConfig.
const (
	DefaultMCPStartupWait    = 10 * time.Second
	DefaultMCPConnectTimeout = 30 * time.Second
	DefaultMCPCloseTimeout   = 3 * time.Second
	DefaultMCPMaxBackoff     = time.Minute
	DefaultMCPKeepAlive      = 30 * time.Second
)

func (c *MCPConfig) read(r *reader) {
	*c = MCPConfig{
		StartupWait:    DefaultMCPStartupWait,
		ConnectTimeout: DefaultMCPConnectTimeout,
		CloseTimeout:   DefaultMCPCloseTimeout,
		MaxBackoff:     DefaultMCPMaxBackoff,
		KeepAlive:      DefaultMCPKeepAlive,
	}
	r.str("AGENTIK_MCP_CONFIG", &c.ConfigPath)
	if c.ConfigPath != "" {
		// The content is checked when the servers start (with errors that
		// name the field); here only that the file is there.
		if st, err := os.Stat(c.ConfigPath); err != nil {
			r.bad("AGENTIK_MCP_CONFIG", c.ConfigPath, "cannot be read: "+err.Error())
		} else if st.IsDir() {
			r.bad("AGENTIK_MCP_CONFIG", c.ConfigPath, "is a directory, want the mcp.json file")
		}
	}
	r.duration("AGENTIK_MCP_STARTUP_WAIT", &c.StartupWait)
	r.duration("AGENTIK_MCP_CONNECT_TIMEOUT", &c.ConnectTimeout)
	r.duration("AGENTIK_MCP_CLOSE_TIMEOUT", &c.CloseTimeout)
	r.duration("AGENTIK_MCP_MAX_BACKOFF", &c.MaxBackoff)
	r.duration("AGENTIK_MCP_KEEPALIVE", &c.KeepAlive)
}
