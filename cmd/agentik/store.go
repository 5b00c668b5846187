package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/postgres"
	"github.com/agentik/agentik/sqlite"
)

// openStore opens the configured store and the bus that fans its events out:
// SQLite with the in-process bus by default; with AGENTIK_DATABASE_URL,
// PostgreSQL with the cross-process bus and turn coordination, so that
// several agentik processes can serve one database. The returned func
// closes them.
func (a *app) openStore(ctx context.Context) (agentik.Store, agentik.Bus, func(), error) {
	if a.cfg.DatabaseURL != "" {
		return a.openPostgres(ctx)
	}
	store, err := sqlite.Open(ctx, a.cfg.DBPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open database %s: %w", a.cfg.DBPath, err)
	}
	return store, bus.New(), func() { store.Close() }, nil
}

func (a *app) openPostgres(ctx context.Context) (agentik.Store, agentik.Bus, func(), error) {
	// Start-up waits a little for a database that is still coming up (a
	// container started next to this one), then gives up with the error.
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts := postgres.Options{MaxConns: int32(a.cfg.DBPoolSize), StatementTimeout: a.cfg.DBStatementTimeout}
	var store *postgres.Store
	var err error
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		store, err = postgres.Open(openCtx, a.cfg.DatabaseURL, opts)
		if err == nil || agentik.ErrorCode(err) != agentik.EUnavailable {
			break
		}
		a.log.Warn("database not reachable yet", "err", err, "retry_in", delay)
		select {
		case <-openCtx.Done():
			return nil, nil, nil, fmt.Errorf("open PostgreSQL database: %w", err)
		case <-time.After(delay):
		}
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open PostgreSQL database: %w", err)
	}
	events, err := postgres.NewBus(ctx, store, postgres.BusOptions{Logger: a.log})
	if err != nil {
		store.Close()
		return nil, nil, nil, fmt.Errorf("open PostgreSQL database: %w", err)
	}
	coord := postgres.NewCoordinator(store, events, postgres.CoordinatorOptions{Logger: a.log})
	a.log.Info("using PostgreSQL", "schema", store.Schema())
	// The engine finds the Coordinator on the bus (engine.ClusterBus).
	return store, clusterBus{events, coord}, func() { coord.Close(); events.Close(); store.Close() }, nil
}

// clusterBus hands the engine the Coordinator with the bus.
type clusterBus struct {
	*postgres.Bus
	coord *postgres.Coordinator
}

func (b clusterBus) Coordinator() engine.Coordinator { return b.coord }
