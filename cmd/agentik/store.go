package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/postgres"
	"github.com/agentik/agentik/sqlite"
)

// storage is the configured store, the bus that fans its events out and,
// for a store several processes share, the Coordinator of their turns (nil:
// this process alone uses the store). close closes them.
type storage struct {
	store agentik.Store
	bus   agentik.Bus
	coord agentik.Coordinator
	close func()
}

// openStore opens SQLite with the in-process bus by default; with
// AGENTIK_DATABASE_URL, PostgreSQL with the cross-process bus and its turn
// Coordinator, so that several agentik processes can serve one database.
func (a *app) openStore(ctx context.Context) (storage, error) {
	if a.cfg.DatabaseURL != "" {
		return a.openPostgres(ctx)
	}
	store, err := sqlite.Open(ctx, a.cfg.DBPath)
	if err != nil {
		return storage{}, fmt.Errorf("open database %s: %w", a.cfg.DBPath, err)
	}
	return storage{store: store, bus: bus.New(), close: func() { store.Close() }}, nil
}

func (a *app) openPostgres(ctx context.Context) (storage, error) {
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
			return storage{}, fmt.Errorf("open PostgreSQL database: %w", err)
		case <-time.After(delay):
		}
	}
	if err != nil {
		return storage{}, fmt.Errorf("open PostgreSQL database: %w", err)
	}
	events, err := postgres.NewBus(ctx, store, postgres.BusOptions{Logger: a.log})
	if err != nil {
		store.Close()
		return storage{}, fmt.Errorf("open PostgreSQL database: %w", err)
	}
	coord := postgres.NewCoordinator(store, events, postgres.CoordinatorOptions{Logger: a.log})
	a.log.Info("using PostgreSQL", "schema", store.Schema())
	return storage{store: store, bus: events, coord: coord,
		close: func() { coord.Close(); events.Close(); store.Close() }}, nil
}
