package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/agentik/agentik/auth"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/edge"
)

// setupAuth builds the HTTP edge, with the tokens of AGENTIK_AUTH_TOKENS,
// AGENTIK_AUTH_TOKENS_FILE and the configuration file's auth.tokens (all
// re-read on SIGHUP, see reload.go). Without tokens the server is open and
// says so loudly.
func (a *app) setupAuth(ctx context.Context) error {
	if !authConfigured(a.cfg) {
		a.log.Warn("AUTHENTICATION IS OFF: anyone who can reach this port can use the agent; set AGENTIK_AUTH_TOKENS or AGENTIK_AUTH_TOKENS_FILE, or auth.tokens in the configuration file (and AGENTIK_AUTH=required to refuse to start without them)")
		a.newEdge()
		return nil
	}
	pairs, limits, err := tokenSet(a.cfg, a.getenv)
	if err != nil {
		return err
	}
	a.tokens = auth.NewTokens(nil)
	a.tokens.ReplaceLimited(pairs, limits)
	a.newEdge()
	a.log.Info("authentication on", "tokens", a.tokens.Len())
	return nil
}

// authConfigured reports whether any token is configured.
func authConfigured(cfg config.Config) bool { return cfg.Auth.Enabled() || len(cfg.Tokens) > 0 }

// tokenSet reads every token of cfg (token → principal) and the agents the
// file limits principals to. The errors name where a token comes from,
// never the token.
func tokenSet(cfg config.Config, getenv func(string) string) (map[string]string, map[string][]string, error) {
	pairs, err := auth.ParsePairs(cfg.Auth.Tokens)
	if err != nil {
		return nil, nil, fmt.Errorf("AGENTIK_AUTH_TOKENS: %w", err)
	}
	if cfg.Auth.TokensFile != "" {
		filePairs, err := auth.ReadFile(cfg.Auth.TokensFile)
		if err != nil {
			return nil, nil, fmt.Errorf("AGENTIK_AUTH_TOKENS_FILE: %w", err)
		}
		if err := auth.Merge(pairs, filePairs); err != nil {
			return nil, nil, fmt.Errorf("AGENTIK_AUTH_TOKENS and AGENTIK_AUTH_TOKENS_FILE: %w", err)
		}
	}
	limits := map[string][]string{}
	for i, t := range cfg.Tokens {
		tok, err := t.Value(getenvOr(getenv))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: auth.tokens[%d]: %w", cfg.File, i, err)
		}
		if err := auth.Merge(pairs, map[string]string{tok: t.Principal}); err != nil {
			return nil, nil, fmt.Errorf("%s: auth.tokens[%d]: %w", cfg.File, i, err)
		}
		if len(t.Agents) > 0 {
			limits[t.Principal] = t.Agents
		}
	}
	if len(pairs) == 0 {
		return nil, nil, fmt.Errorf("no tokens configured")
	}
	return pairs, limits, nil
}

// newEdge builds the HTTP edge on a.tokens.
func (a *app) newEdge() {
	opts := edge.Options{BodyTimeout: a.cfg.HTTP.BodyTimeout, CORSOrigins: a.cfg.HTTP.CORSOrigins, Logger: a.log}
	// The request log is an operator's record in JSON mode (info, read by
	// a log pipeline); in text mode, a terminal, it is debug.
	if a.cfg.LogFormat != "json" {
		opts.RequestLogLevel = slog.LevelDebug
	}
	if a.tokens != nil {
		opts.Tokens = a.tokens
	}
	if a.metrics != nil {
		opts.Observe = a.metrics.HTTPRequest
	}
	if a.tracing != nil {
		opts.Trace = a.tracing.Extract
	}
	a.edge = edge.New(opts)
}

// guard returns the httpapi-style guard of agent's routes: each route
// behind the edge with the access it declares, its event streams counted
// as facade "sse".
func (a *app) guard(agent string) func(http.Handler, edge.Access) http.Handler {
	return func(h http.Handler, access edge.Access) http.Handler {
		return a.edge.Guard(asFacade("sse", h), edge.Route{Access: access, Agent: agent})
	}
}

func getenvOr(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}
