package main

import (
	"context"
	"time"

	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/ws"
)

// mountWS serves the WebSocket chat protocol at GET /agentik/ws. On
// shutdown, idle connections get GRACEFUL_DISCONNECT at once and busy ones
// after their running turn's END (the engine's drain bounds that); at close
// the last connections are waited for, then dropped.
func (a *app) mountWS(ctx context.Context) error {
	cfg := a.cfg.WS
	srv := ws.NewServer(a.eng, ws.Options{
		IdleTimeout:     cfg.IdleTimeout,
		MaxMessageBytes: cfg.MaxMessageBytes,
		PingInterval:    cfg.PingInterval,
		PingTimeout:     cfg.PingTimeout,
		WriteTimeout:    cfg.WriteTimeout,
		IfBusy:          cfg.IfBusy,
		OriginPatterns:  cfg.Origins,
		MaxConnections:  cfg.MaxConnections,
		Logger:          a.log,
	})
	a.mux.Handle("GET /agentik/ws", a.edge.Guard(srv, edge.Route{Access: edge.Stream}))
	a.onShutdown = append(a.onShutdown, func(context.Context) { srv.BeginShutdown() })
	a.onClose = append(a.onClose, func() {
		// Connections say goodbye when the engine's drain ends their turns;
		// give the close handshakes a moment before the process exits.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return nil
}
