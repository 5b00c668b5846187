package main

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/ws"
)

// buildWS is ag's WebSocket chat door: GET {path} (the default agent's also
// at /agentik/ws). On shutdown, idle connections get GRACEFUL_DISCONNECT at
// once and busy ones after their running turn's END (the engine's drain
// bounds that); at close the last connections are waited for, then
// dropped.
func buildWS(a *app, ag *agent) (*door, error) {
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
	return &door{
		mount: func(mux *http.ServeMux, _, path string) {
			mux.Handle("GET "+path, a.edge.Guard(asFacade("ws", srv), edge.Route{Access: edge.Stream, Agent: ag.ID}))
		},
		begin: srv.BeginShutdown,
		// Connections say goodbye when the engine's drain ends their
		// turns; give the close handshakes a moment before the process
		// exits.
		end: func(ctx context.Context) { srv.Shutdown(ctx) },
	}, nil
}
