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

// setupMCP adds an agent's MCP servers to its registry: those of its
// mcp.json (AGENTIK_MCP_CONFIG, or tools.mcp_config) and those written
// inline (tools.mcp_servers). A bad file stops start-up with an error
// naming the field; servers that cannot start do not: they are retried in
// the background.
func (a *app) setupMCP(ctx context.Context, ag *agent) error {
	c := ag.cfg
	if c.MCPConfig == "" && c.MCPServers == nil {
		return nil
	}
	file := &mcp.Config{}
	if c.MCPConfig != "" {
		f, err := mcp.LoadConfig(c.MCPConfig, a.getenv)
		if err != nil {
			return fmt.Errorf("MCP config (%s): %w", c.MCPConfig, err)
		}
		file.Servers = append(file.Servers, f.Servers...)
	}
	if c.MCPServers != nil {
		f, err := mcp.ParseConfig(c.MCPServers, a.getenv)
		if err != nil {
			return fmt.Errorf("tools.mcp_servers: %w", err)
		}
		file.Servers = append(file.Servers, f.Servers...)
	}
	cfg := a.cfg.MCP
	src := mcp.New(file, mcp.Options{
		Logger:         a.log.With("agent", ag.ID),
		ClientVersion:  versionString(),
		ConnectTimeout: cfg.ConnectTimeout,
		StartupWait:    cfg.StartupWait,
		CloseTimeout:   cfg.CloseTimeout,
		MaxBackoff:     cfg.MaxBackoff,
		KeepAlive:      cfg.KeepAlive,
		WrapTransport:  a.wrapTransport(),
	})
	ag.reg.AddSource("mcp", src)
	ag.mcp = src
	a.onClose = append(a.onClose, func() {
		if err := src.Close(); err != nil {
			a.log.Warn("MCP shutdown", "agent", ag.ID, "err", err)
		}
	})
	a.log.Info("MCP servers configured", "agent", ag.ID, "file", c.MCPConfig, "servers", len(file.Servers))
	return nil
}

// toolsResponse is the body of GET {API}/tools.
type toolsResponse struct {
	Tools   []agentik.ToolSpec `json:"tools"`
	Servers []mcp.ServerHealth `json:"servers"`
}

// mountTools serves GET {path}: every tool the agent's model would see now
// (name, source, description, JSON Schema) and the health of each of its
// MCP servers.
func (a *app) mountTools(mux *http.ServeMux, path string, ag *agent) {
	mux.Handle("GET "+path, a.edge.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := toolsResponse{Tools: ag.reg.Snapshot(r.Context()).Specs(), Servers: []mcp.ServerHealth{}}
		if resp.Tools == nil {
			resp.Tools = []agentik.ToolSpec{}
		}
		if ag.mcp != nil {
			resp.Servers = ag.mcp.Health()
		}
		edge.WriteJSON(w, http.StatusOK, resp)
	}), edge.Route{Agent: ag.ID}))
}

// writeToolHealth prints the health of each MCP server of ag (agentik tools).
func writeToolHealth(w io.Writer, ag *agent) {
	if ag.mcp == nil {
		return
	}
	for _, h := range ag.mcp.Health() {
		fmt.Fprintf(w, "mcp server %s (%s): %s, %d tools", h.Name, h.Transport, h.State, h.Tools)
		if h.Error != "" {
			fmt.Fprintf(w, ", error: %s", h.Error)
		}
		fmt.Fprintln(w)
	}
}
