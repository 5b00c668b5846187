package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/a2a"
	"github.com/agentik/agentik/edge"
)

// a2aDialTimeout bounds how long start-up waits for remote agent cards; an
// agent that does not answer in time is retried in the background.
const a2aDialTimeout = 10 * time.Second

// setupA2AAgents adds an agent's remote A2A agents (AGENTIK_A2A_AGENTS, or
// tools.a2a_agents) to its registry as tools.
func (a *app) setupA2AAgents(ctx context.Context, ag *agent) error {
	if len(ag.cfg.A2AAgents) == 0 {
		return nil
	}
	remotes := make([]a2a.Remote, len(ag.cfg.A2AAgents))
	for i, r := range ag.cfg.A2AAgents {
		remotes[i] = a2a.Remote{URL: r.URL, Token: r.Token}
	}
	dctx, cancel := context.WithTimeout(ctx, a2aDialTimeout)
	defer cancel()
	src := a2a.NewSource(dctx, a2a.SourceOptions{
		Agents:          remotes,
		HTTPClient:      a.httpClient(),
		Logger:          a.log.With("agent", ag.ID),
		ConversationKey: agentik.ConversationFrom, // one remote context per local conversation
	})
	a.onClose = append(a.onClose, func() { src.Close() })
	ag.reg.AddSource("a2a", src)
	return nil
}

// buildA2A is ag's A2A door: its card (public) and its JSON-RPC endpoint
// (behind the edge). The default agent's, at today's paths, is also served
// on AGENTIK_A2A_PORT when that is set, and its card says what
// AGENTIK_A2A_NAME, _DESCRIPTION and _SKILLS say.
func buildA2A(a *app, ag *agent) (*door, error) {
	d := &door{mount: func(mux *http.ServeMux, prefix, path string) { a.mountA2A(mux, ag, prefix, path) }}
	cfg := a.cfg.A2A
	if ag != a.agents[0] || cfg.Port == 0 {
		return d, nil
	}
	own := http.NewServeMux()
	d.mount(own, "", cfg.Path)
	end, err := a.serveA2APort(own)
	d.end = end
	return d, err
}

// mountA2A serves ag's A2A facade at path, under prefix ("" for the
// default agent).
func (a *app) mountA2A(mux *http.ServeMux, ag *agent, prefix, path string) {
	cfg := a.cfg.A2A
	opts := a2a.Options{
		Path:         path,
		Bearer:       !a.edge.Open(),
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		Logger:       a.log,
	}
	if cfg.PublicURL != "" {
		// The public URL names the default endpoint; the agent's own is
		// beside it.
		opts.URL = strings.TrimSuffix(cfg.PublicURL, cfg.Path) + path
	}
	if prefix == "" {
		opts.Name, opts.Description = cfg.Name, cfg.Description
		for _, s := range cfg.Skills {
			opts.Skills = append(opts.Skills, a2a.Skill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples})
		}
	}
	srv := a2a.NewServer(ag.eng, opts)
	mux.Handle("GET "+prefix+a2a.CardPath, srv.CardHandler())
	mux.Handle("GET "+prefix+a2a.LegacyCardPath, srv.CardHandler())
	mux.Handle(path, a.edge.Guard(asFacade("a2a", srv), edge.Route{Agent: ag.ID, Refuse: srv.Refuse}))
}

// serveA2APort serves mux on AGENTIK_A2A_PORT from now on. end stops it at
// close, after the engines, like the main listener: its event streams end
// when the engines shut down.
func (a *app) serveA2APort(mux *http.ServeMux) (end func(context.Context), err error) {
	cfg := a.cfg.A2A
	ln, err := net.Listen("tcp", net.JoinHostPort(a.cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("AGENTIK_A2A_PORT: %w", err)
	}
	hs := &http.Server{Handler: a.edge.Handler(mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(edge.Listener(ln, idleTimeout)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("a2a listener", "err", err)
		}
	}()
	a.log.Info("a2a listening", "addr", ln.Addr().String())
	return func(ctx context.Context) {
		hs.Shutdown(ctx)
		hs.Close()
		<-done
	}, nil
}
