package main

import (
	"fmt"
	"github.com/agentik/agentik"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/oauth"
)

// setupOAuth builds the OAuth authorization server of the MCP endpoints
// (package oauth) when the server has tokens and the MCP door is on: an
// MCP client without a token signs its person in through it. An open
// server needs none. AGENTIK_PUBLIC_URL fixes the base URL the metadata
// and the tokens' audience name (behind a proxy that rewrites Host);
// without it each request's Host says.
func (a *app) setupOAuth() error {
	if a.tokens == nil || !a.cfg.MCPServer.Enabled {
		return nil
	}
	withOAuth, ok := a.store.(interface{ OAuth() oauth.Store })
	if !ok {
		return nil
	}
	public := strings.TrimRight(a.getenv("AGENTIK_PUBLIC_URL"), "/")
	if public != "" {
		u, err := url.Parse(public)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return fmt.Errorf("AGENTIK_PUBLIC_URL %q: want the server's external base URL, such as https://agentik.example.com", public)
		}
	}
	a.oauth = oauth.New(oauth.Options{
		Store:     withOAuth.OAuth(),
		SignIn:    a.tokens.Lookup,
		Allows:    a.tokens.Allows,
		Resource:  a.mcpResource,
		PublicURL: public,
		Logger:    a.log,
	})
	return nil
}

// mcpResource returns the agent whose MCP endpoint is at path.
func (a *app) mcpResource(path string) (string, bool) {
	for i, ag := range a.agents {
		if (i == 0 && path == a.cfg.MCPServer.Path) || path == "/agents/"+ag.ID+"/mcp" {
			return ag.ID, true
		}
	}
	return "", false
}

// mountOAuth mounts the OAuth server's endpoints (the well-known metadata,
// /oauth/register, /oauth/authorize, /oauth/token, /oauth/revoke), open
// to anyone, when there is one.
func (a *app) mountOAuth(mux *http.ServeMux) {
	if a.oauth == nil {
		return
	}
	inner := http.NewServeMux()
	a.oauth.Mount(inner)
	h := a.public(inner)
	for _, p := range []string{oauth.PathResourceMetadata, oauth.PathResourceMetadata + "/", oauth.PathServerMetadata, "/oauth/"} {
		mux.Handle(p, h)
	}
}

// mcpRoute is the edge route of an agent's MCP endpoint: its static tokens
// and, with the OAuth server, the access tokens issued for it; a 401 names
// the endpoint's protected resource metadata, where an MCP client begins
// to sign in.
func (a *app) mcpRoute(agent string) edge.Route {
	rt := edge.Route{Agent: agent}
	if o := a.oauth; o != nil {
		rt.Bearer = o.Authenticate
		rt.Refuse = func(w http.ResponseWriter, r *http.Request, err error) {
			if edge.Status(agentik.ErrorCode(err)) == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", o.Challenge(r))
			}
			edge.WriteError(w, r, a.log, err)
		}
	}
	return rt
}
