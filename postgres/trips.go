package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// trips counts what this store's connections ask of the database: round
// trips (a statement sent alone, a batch, a prepare, a copy — each waits
// for its answer once) and statements (a batch counts each of its own).
// Every connection of one Open (the pool, the Bus's, the Coordinator's
// lease sessions) shares it. It is what docs/postgres.md means by "round
// trips per turn": cmd/agentik exposes it as agentik_db_round_trips_total
// and agentik_db_statements_total, and the benchmark divides them by turns.
type trips struct {
	roundTrips atomic.Int64
	statements atomic.Int64
}

var (
	_ pgx.QueryTracer    = (*trips)(nil)
	_ pgx.BatchTracer    = (*trips)(nil)
	_ pgx.PrepareTracer  = (*trips)(nil)
	_ pgx.CopyFromTracer = (*trips)(nil)
)

func (t *trips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.roundTrips.Add(1)
	t.statements.Add(1)
	return ctx
}

func (*trips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *trips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.roundTrips.Add(1)
	return ctx
}

func (t *trips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.statements.Add(1)
}

func (*trips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (t *trips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	t.roundTrips.Add(1)
	return ctx
}

func (*trips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (t *trips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	t.roundTrips.Add(1)
	t.statements.Add(1)
	return ctx
}

func (*trips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// RoundTrips returns how many round trips and statements the connections
// of this store (every view of one Open) have made so far.
func (s *Store) RoundTrips() (roundTrips, statements int64) {
	return s.trips.roundTrips.Load(), s.trips.statements.Load()
}
