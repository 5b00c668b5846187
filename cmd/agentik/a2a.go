package main

import "context"

// setupA2AAgents adds the remote agents of AGENTIK_A2A_AGENTS as tools.
func (a *app) setupA2AAgents(ctx context.Context) error { return nil }

// mountA2A serves the A2A facade.
func (a *app) mountA2A(ctx context.Context) error { return nil }
