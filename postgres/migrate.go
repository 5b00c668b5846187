package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations are append-only: a released file is never edited, a schema
// change is a new file with the next number.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaTooNew is returned by Open for a database written by a newer
// version of the program: running old code on it could corrupt it.
var ErrSchemaTooNew = storeutil.ErrSchemaTooNew

// SchemaVersion is the schema version this program creates and understands.
func SchemaVersion() int { return storeutil.SchemaVersion(migrationFS, "migrations") }

// migrate brings the schema to the newest known version. Several processes
// may start at once on a fresh database: a session advisory lock (keyed by
// the schema) lets one of them migrate while the others wait, then find
// nothing left to do. Each migration runs in its own transaction together
// with its schema_migrations row, so a failed one leaves the previous
// version intact.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", classify(err))
	}
	defer conn.Release()
	key := "agentik migrate " + schema
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", key); err != nil {
		return fmt.Errorf("migrate: %w", classify(err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext($1))", key) //nolint:errcheck // the session ends with the pool otherwise

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("migrate: %w", classify(err))
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", classify(err))
	}
	if current > len(ms) {
		return storeutil.TooNew(current, len(ms))
	}
	for _, m := range ms[current:] {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, classify(err))
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			tx.Rollback(ctx) //nolint:errcheck // reporting the first error
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			tx.Rollback(ctx) //nolint:errcheck // reporting the first error
			return fmt.Errorf("migration %s: %w", m.Name, classify(err))
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, classify(err))
		}
	}
	return nil
}
