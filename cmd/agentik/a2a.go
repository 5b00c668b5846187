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
		Bearer:       a.auth != nil,
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		Logger:       a.log,
	})
	route := func(mux *http.ServeMux) {
		mux.Handle("GET "+a2a.CardPath, srv.CardHandler())
		mux.Handle("GET "+a2a.LegacyCardPath, srv.CardHandler())
		mux.Handle(cfg.Path, a.a2aAuth(srv))
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

// a2aAuth puts the caller's principal into the request context; without
// configured tokens the server is open.
func (a *app) a2aAuth(next http.Handler) http.Handler {
	if a.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.auth(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentik"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-31401,"message":"missing or invalid bearer token"}}` + "\n"))
			return
		}
		next.ServeHTTP(w, r.WithContext(agentik.WithPrincipal(r.Context(), p)))
	})
}
