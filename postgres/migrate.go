package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations are append-only: a released file is never edited, a schema
// change is a new file with the next number.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaTooNew is returned by Open for a database written by a newer
// version of the program: running old code on it could corrupt it.
var ErrSchemaTooNew = errors.New("database schema is newer than this program knows; upgrade agentik")

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. File names
// are NNNN_description.sql; versions must be 1, 2, 3… without gaps.
func migrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, p := range paths {
		name := strings.TrimPrefix(p, "migrations/")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", name)
		}
		b, err := migrationFS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this program creates and understands.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate brings the schema to the newest known version. Several processes
// may start at once on a fresh database: a session advisory lock (keyed by
// the schema) lets one of them migrate while the others wait, then find
// nothing left to do. Each migration runs in its own transaction together
// with its schema_migrations row, so a failed one leaves the previous
// version intact.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
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
		return fmt.Errorf("schema version %d, this program knows up to %d: %w", current, len(ms), ErrSchemaTooNew)
	}
	for _, m := range ms[current:] {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, classify(err))
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			tx.Rollback(ctx) //nolint:errcheck // reporting the first error
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			tx.Rollback(ctx) //nolint:errcheck // reporting the first error
			return fmt.Errorf("migration %s: %w", m.name, classify(err))
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, classify(err))
		}
	}
	return nil
}
