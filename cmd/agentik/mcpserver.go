package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentik/agentik/mcp"
)

// buildMCPServer is ag's MCP server door: {path} (the default agent's also
// at AGENTIK_MCP_SERVER_PATH, default /mcp; GET, POST and DELETE of
// Streamable HTTP), behind the edge. On shutdown the running ask calls end
// with their turns (the engine's drain bounds that), then every session is
// closed so that no stream holds the HTTP server up.
func buildMCPServer(a *app, ag *agent) (*door, error) {
	c := a.cfg.MCPServer
	h := mcp.NewHandler(ag.eng, mcp.ServeOptions{
		Version:        versionString(),
		IfBusy:         ifBusy(ag, c.IfBusy),
		SessionTimeout: c.SessionTimeout,
		// An MCP request carries one message of text at most: its own
		// limit, not the one of the endpoints that take images.
		MaxBodyBytes:            min(c.MaxBodyBytes, a.cfg.MaxBodyBytes),
		MaxSessions:             c.MaxSessions,
		MaxSessionsPerPrincipal: c.MaxSessionsPerPrincipal,
		SessionsPerMinute:       c.SessionsPerMinute,
		SessionBurst:            c.SessionBurst,
		// Behind tokens a DNS-rebound page has none to send; an open
		// server on a loopback address must refuse foreign Host headers.
		LocalhostProtection: a.edge.Open(),
		Logger:              a.log,
	})
	return &door{
		mount: func(mux *http.ServeMux, _, path string) {
			mux.Handle(path, a.edge.Guard(h, a.mcpRoute(ag.ID)))
		},
		begin: h.BeginShutdown,
		end:   h.Close,
	}, nil
}

const mcpUsage = `usage: agentik mcp --url URL [--agent ID] [--token TOKEN]

Serve a running agentik's agent as an MCP server on stdin and stdout, for
MCP clients that only start processes (Claude Desktop, IDEs). Requests are
relayed to the server's MCP endpoint: URL/mcp, or URL/agents/ID/mcp with
--agent; a URL that already ends in /mcp is used as it is. The token comes
from --token or AGENTIK_TOKEN. Logs go to stderr.

flags:
`

// mcpBridge runs `agentik mcp`.
func mcpBridge(ctx context.Context, args []string, getenv func(string) string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage); fs.PrintDefaults() }
	rawURL := fs.String("url", "", "the running server, e.g. http://localhost:8080")
	agentID := fs.String("agent", "", "the agent's id (default: the server's default agent)")
	token := fs.String("token", "", "bearer token (prefer AGENTIK_TOKEN: a flag is visible to other users of the machine)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentik mcp: unexpected argument %q\n", fs.Arg(0))
		return exitConfig
	}
	endpoint, err := mcpEndpoint(*rawURL, *agentID)
	if err != nil {
		fmt.Fprintln(stderr, "agentik mcp:", err)
		return exitConfig
	}
	tok := *token
	if tok == "" {
		tok = getenv("AGENTIK_TOKEN")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := mcp.Bridge(ctx, stdin, stdout, mcp.BridgeOptions{URL: endpoint, Token: tok, Version: versionString(), Logger: log}); err != nil {
		fmt.Fprintln(stderr, "agentik mcp:", err)
		return exitFail
	}
	return exitOK
}

// mcpEndpoint is the MCP endpoint of --url and --agent.
func mcpEndpoint(rawURL, agentID string) (string, error) {
	u, err := url.Parse(rawURL)
	if rawURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--url %q: want the server's address, such as http://localhost:8080", rawURL)
	}
	path := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(path, "/mcp"):
		if agentID != "" {
			return "", fmt.Errorf("--agent %q: the --url %q already names an MCP endpoint", agentID, rawURL)
		}
	case agentID != "":
		if !validAgentID(agentID) {
			return "", fmt.Errorf("--agent %q: want an agent id (letters, digits, '-', '_', '.')", agentID)
		}
		path += "/agents/" + agentID + "/mcp"
	default:
		path += "/mcp"
	}
	u.Path = path
	return u.String(), nil
}

func validAgentID(s string) bool {
	if s == "" || len(s) > 64 || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
