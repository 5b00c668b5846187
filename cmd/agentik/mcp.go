package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/mcp"
)

// setupMCP adds the MCP servers of AGENTIK_MCP_CONFIG to the registry. A
// bad file stops start-up with an error naming the field; servers that
// cannot start do not: they are retried in the background.
func (a *app) setupMCP(ctx context.Context) error {
	cfg := a.cfg.MCP
	if cfg.ConfigPath == "" {
		return nil
	}
	file, err := mcp.LoadConfig(cfg.ConfigPath, nil)
	if err != nil {
		return fmt.Errorf("AGENTIK_MCP_CONFIG: %w", err)
	}
	src := mcp.New(file, mcp.Options{
		Logger:         a.log,
		ClientVersion:  versionString(),
		ConnectTimeout: cfg.ConnectTimeout,
		StartupWait:    cfg.StartupWait,
		CloseTimeout:   cfg.CloseTimeout,
		MaxBackoff:     cfg.MaxBackoff,
		KeepAlive:      cfg.KeepAlive,
	})
	a.reg.AddSource("mcp", src)
	a.mcp = src
	a.onClose = append(a.onClose, func() {
		if err := src.Close(); err != nil {
			a.log.Warn("MCP shutdown", "err", err)
		}
	})
	a.log.Info("MCP servers configured", "file", cfg.ConfigPath, "servers", len(file.Servers))
	return nil
}

// toolsResponse is the body of GET /agentik/tools.
type toolsResponse struct {
	Tools   []agentik.ToolSpec `json:"tools"`
	Servers []mcp.ServerHealth `json:"servers"`
}

// mountTools serves GET /agentik/tools: every tool the model would see now
// (name, source, description, JSON Schema) and the health of each MCP
// server.
func (a *app) mountTools(ctx context.Context) error {
	a.mux.Handle("GET /agentik/tools", a.edge.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := toolsResponse{Tools: a.reg.Snapshot(r.Context()).Specs(), Servers: []mcp.ServerHealth{}}
		if resp.Tools == nil {
			resp.Tools = []agentik.ToolSpec{}
		}
		if a.mcp != nil {
			resp.Servers = a.mcp.Health()
		}
		edge.WriteJSON(w, http.StatusOK, resp)
	}), edge.Route{}))
	return nil
}

// writeToolHealth prints the health of each MCP server (agentik tools).
func (a *app) writeToolHealth(w io.Writer) {
	if a.mcp == nil {
		return
	}
	for _, h := range a.mcp.Health() {
		fmt.Fprintf(w, "mcp server %s (%s): %s, %d tools", h.Name, h.Transport, h.State, h.Tools)
		if h.Error != "" {
			fmt.Fprintf(w, ", error: %s", h.Error)
		}
		fmt.Fprintln(w)
	}
}
