package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentik/agentik/auth"
	"github.com/agentik/agentik/edge"
)

// setupAuth builds the HTTP edge, with the tokens of AGENTIK_AUTH_TOKENS and
// AGENTIK_AUTH_TOKENS_FILE (reloaded on SIGHUP). Without tokens the server
// is open and says so loudly.
func (a *app) setupAuth(ctx context.Context) error {
	cfg := a.cfg.Auth
	if !cfg.Enabled() {
		a.log.Warn("AUTHENTICATION IS OFF: anyone who can reach this port can use the agent; set AGENTIK_AUTH_TOKENS or AGENTIK_AUTH_TOKENS_FILE (and AGENTIK_AUTH=required to refuse to start without them)")
		a.newEdge()
		return nil
	}
	load := func() (map[string]string, error) {
		pairs, err := auth.ParsePairs(cfg.Tokens)
		if err != nil {
			return nil, fmt.Errorf("AGENTIK_AUTH_TOKENS: %w", err)
		}
		if cfg.TokensFile != "" {
			filePairs, err := auth.ReadFile(cfg.TokensFile)
			if err != nil {
				return nil, fmt.Errorf("AGENTIK_AUTH_TOKENS_FILE: %w", err)
			}
			if err := auth.Merge(pairs, filePairs); err != nil {
				return nil, fmt.Errorf("AGENTIK_AUTH_TOKENS and AGENTIK_AUTH_TOKENS_FILE: %w", err)
			}
		}
		if len(pairs) == 0 {
			return nil, fmt.Errorf("no tokens configured")
		}
		return pairs, nil
	}
	pairs, err := load()
	if err != nil {
		return err
	}
	tokens := auth.NewTokens(pairs)
	a.tokens = tokens
	a.newEdge()
	a.log.Info("authentication on", "tokens", tokens.Len())

	if cfg.TokensFile != "" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-hup:
					pairs, err := load()
					if err != nil {
						a.log.Error("token reload failed; keeping the old tokens", "err", err)
						continue
					}
					tokens.Replace(pairs)
					a.log.Info("tokens reloaded", "tokens", tokens.Len())
				}
			}
		}()
		a.onClose = append(a.onClose, func() { signal.Stop(hup); close(done) })
	}
	return nil
}

// newEdge builds the HTTP edge on a.tokens.
func (a *app) newEdge() {
	opts := edge.Options{BodyTimeout: a.cfg.HTTP.BodyTimeout, CORSOrigins: a.cfg.HTTP.CORSOrigins, Logger: a.log}
	if a.tokens != nil {
		opts.Tokens = a.tokens
	}
	if a.metrics != nil {
		opts.Observe = a.metrics.HTTPRequest
	}
	a.edge = edge.New(opts)
}

// guard returns the httpapi-style guard of agent's routes: each route
// behind the edge with the access it declares.
func (a *app) guard(agent string) func(http.Handler, edge.Access) http.Handler {
	return func(h http.Handler, access edge.Access) http.Handler {
		return a.edge.Guard(h, edge.Route{Access: access, Agent: agent})
	}
}
