package main

import (
	"context"
	"fmt"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/sqlite"
)

// openStore opens the configured store and the bus that fans its events out:
// SQLite with the in-process bus by default. The returned func closes both.
func (a *app) openStore(ctx context.Context) (agentik.Store, agentik.Bus, func(), error) {
	store, err := sqlite.Open(ctx, a.cfg.DBPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open database %s: %w", a.cfg.DBPath, err)
	}
	return store, bus.New(), func() { store.Close() }, nil
}
