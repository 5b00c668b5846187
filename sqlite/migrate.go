package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
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
	entries, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, path := range entries {
		name := strings.TrimPrefix(path, "migrations/")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", name)
		}
		b, err := migrationFS.ReadFile(path)
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

// migrate brings the database to the newest known schema. Each migration runs
// in its own write transaction together with its schema_migrations row, so a
// failed migration leaves the previous version intact. The version is read
// inside that transaction: two processes opening the same new file do not
// both apply a migration.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", unavailable(err))
	}
	for _, m := range ms {
		if err := applyMigration(ctx, db, m, len(ms)); err != nil {
			return err
		}
	}
	// A database with no pending migration still has to be checked.
	var current int
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", unavailable(err))
	}
	if current > len(ms) {
		return fmt.Errorf("schema version %d, this program knows up to %d: %w", current, len(ms), ErrSchemaTooNew)
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration, known int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", unavailable(err))
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", unavailable(err))
	}
	if current > known {
		return fmt.Errorf("schema version %d, this program knows up to %d: %w", current, known, ErrSchemaTooNew)
	}
	if current >= m.version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	if _, err := tx.ExecContext(ctx,
		"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, unavailable(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.name, unavailable(err))
	}
	return nil
}
