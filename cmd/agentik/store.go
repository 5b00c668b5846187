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

// storage is the open database: the Store Open returned (health, the
// adoption of conversations from before agents) and, per agent, the
// adapters its engine runs on: its view, the bus that fans its events out,
// its Coordinator and its limiter.
type storage struct {
	base  agentik.Store
	adopt func(ctx context.Context, agent string) (int64, error)
	// forAgent returns an agent's view, its bus and, for a store several
	// processes share, the Coordinator of its turns (nil: this process
	// alone uses the store).
	forAgent func(ctx context.Context, agent string) (agentik.Store, agentik.Bus, agentik.Coordinator, error)
	// busSequences says the buses number the store's agent events after
	// commit (engine.Options.BusSequencesAgentEvents): PostgreSQL's do.
	busSequences bool
	// limiter returns the limiter of an agent's per-principal limits: for
	// a store several processes share, one that holds them across the
	// processes.
	limiter func(agent string, l agentik.Limits) agentik.Limiter
	close   func() // closes every agent's bus, then the database
}

// openStore opens the configured store: SQLite with an in-process bus per
// agent by default; with AGENTIK_DATABASE_URL, PostgreSQL with a
// cross-process bus and turn coordination per agent, so that several
// agentik processes can serve one database.
func (a *app) openStore(ctx context.Context) (*storage, error) {
	if a.cfg.DatabaseURL != "" {
		return a.openPostgres(ctx)
	}
	store, err := sqlite.Open(ctx, a.cfg.DBPath)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", a.cfg.DBPath, err)
	}
	return &storage{
		base:  store,
		adopt: store.AdoptConversations,
		forAgent: func(_ context.Context, id string) (agentik.Store, agentik.Bus, agentik.Coordinator, error) {
			return store.ForAgent(id), bus.New(), nil, nil
		},
		limiter: localLimiter(engine.NewLedger()),
		close:   func() { store.Close() },
	}, nil
}

func (a *app) openPostgres(ctx context.Context) (*storage, error) {
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
			return nil, fmt.Errorf("open PostgreSQL database: %w", err)
		case <-time.After(delay):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL database: %w", err)
	}
	a.log.Info("using PostgreSQL", "schema", store.Schema())
	var closers []func()
	ledger := engine.NewLedger()
	st := &storage{
		base:  store,
		adopt: store.AdoptConversations,
		// Each agent has a Bus and a Coordinator of its own on its view
		// (two connections each): its agent events and open turns are its
		// own.
		forAgent: func(ctx context.Context, id string) (agentik.Store, agentik.Bus, agentik.Coordinator, error) {
			view := store.ForAgent(id)
			events, err := postgres.NewBus(ctx, view, postgres.BusOptions{Logger: a.log})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("open PostgreSQL database: %w", err)
			}
			coord := postgres.NewCoordinator(view, events, postgres.CoordinatorOptions{Logger: a.log, Process: processName()})
			closers = append(closers, func() { coord.Close(); events.Close() })
			return view, events, coord, nil
		},
		busSequences: true,
		limiter: func(agent string, l agentik.Limits) agentik.Limiter {
			return postgres.NewLimiter(store.ForAgent(agent), l, ledger.Limiter(l))
		},
	}
	st.close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		store.Close()
	}
	return st, nil
}

// localLimiter returns the in-process limiters of the agents' limits, all
// counting in ledger: a principal's limits hold across the agents.
func localLimiter(ledger *engine.Ledger) func(string, agentik.Limits) agentik.Limiter {
	return func(_ string, l agentik.Limits) agentik.Limiter { return ledger.Limiter(l) }
}
