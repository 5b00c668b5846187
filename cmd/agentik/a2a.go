package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/a2a"
	"github.com/agentik/agentik/edge"
)

// a2aDialTimeout bounds how long start-up waits for remote agent cards; an
// agent that does not answer in time is retried in the background.
const a2aDialTimeout = 10 * time.Second

// setupA2AAgents adds the remote agents of AGENTIK_A2A_AGENTS as tools.
func (a *app) setupA2AAgents(ctx context.Context) error {
	cfg := a.cfg.A2A
	if len(cfg.Agents) == 0 {
		return nil
	}
	remotes := make([]a2a.Remote, len(cfg.Agents))
	for i, u := range cfg.Agents {
		remotes[i] = a2a.Remote{URL: u, Token: cfg.AgentToken(i)}
	}
	dctx, cancel := context.WithTimeout(ctx, a2aDialTimeout)
	defer cancel()
	src := a2a.NewSource(dctx, a2a.SourceOptions{
		Agents:          remotes,
		Logger:          a.log,
		ConversationKey: agentik.ConversationFrom, // one remote context per local conversation
	})
	a.onClose = append(a.onClose, func() { src.Close() })
	a.reg.AddSource("a2a", src)
	return nil
}

// mountA2A serves the A2A facade: the card (public) and the JSON-RPC
// endpoint (behind the bearer tokens when they are configured), on the main
// port and, when AGENTIK_A2A_PORT is set, on a port of its own.
func (a *app) mountA2A(ctx context.Context) error {
	cfg := a.cfg.A2A
	if !cfg.Enabled {
		return nil
	}
	skills := make([]a2a.Skill, len(cfg.Skills))
	for i, s := range cfg.Skills {
		skills[i] = a2a.Skill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples}
	}
	srv := a2a.NewServer(a.eng, a2a.Options{
		Name:         cfg.Name,
		Description:  cfg.Description,
		URL:          cfg.PublicURL,
		Path:         cfg.Path,
		Skills:       skills,
		Bearer:       !a.edge.Open(),
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		Logger:       a.log,
	})
	route := func(mux *http.ServeMux) {
		mux.Handle("GET "+a2a.CardPath, srv.CardHandler())
		mux.Handle("GET "+a2a.LegacyCardPath, srv.CardHandler())
		mux.Handle(cfg.Path, a.edge.Guard(srv, edge.Route{Refuse: srv.Refuse}))
	}
	route(a.mux)
	if cfg.Port == 0 {
		return nil
	}
	mux := http.NewServeMux()
	route(mux)
	ln, err := net.Listen("tcp", net.JoinHostPort(a.cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("AGENTIK_A2A_PORT: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("a2a listener", "err", err)
		}
	}()
	a.log.Info("a2a listening", "addr", ln.Addr().String())
	// Closed last, like the main listener: its event streams end when the
	// engine shuts down.
	a.onClose = append(a.onClose, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		hs.Close()
		<-done
	})
	return nil
}
