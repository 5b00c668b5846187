package main

import (
	"context"
	"net/http"
	"time"

	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/ws"
)

// mountWS serves an agent's WebSocket chat protocol at GET {prefix}/ws (the
// default agent's also at /agentik/ws). On shutdown, idle connections get
// GRACEFUL_DISCONNECT at once and busy ones after their running turn's END
// (the engine's drain bounds that); at close the last connections are
// waited for, then dropped.
func (a *app) mountWS(mux *http.ServeMux, prefix string, ag *agent) {
	ag.once.ws.Do(func() {
		cfg := a.cfg.WS
		srv := ws.NewServer(ag.eng, ws.Options{
			IdleTimeout:     cfg.IdleTimeout,
			MaxMessageBytes: cfg.MaxMessageBytes,
			PingInterval:    cfg.PingInterval,
			PingTimeout:     cfg.PingTimeout,
			WriteTimeout:    cfg.WriteTimeout,
			IfBusy:          ifBusy(ag, cfg.IfBusy),
			OriginPatterns:  cfg.Origins,
			MaxConnections:  cfg.MaxConnections,
			Logger:          a.log,
		})
		ag.ws = srv
		a.onShutdown = append(a.onShutdown, func(context.Context) { srv.BeginShutdown() })
		a.onClose = append(a.onClose, func() {
			// Connections say goodbye when the engine's drain ends their
			// turns; give the close handshakes a moment before the process
			// exits.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		})
	})
	mux.Handle("GET "+a.paths(prefix).WS, a.edge.Guard(asFacade("ws", ag.ws), edge.Route{Access: edge.Stream, Agent: ag.ID}))
}
