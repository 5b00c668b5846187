package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/agentik/agentik/storeutil"
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

// migrate brings the database to the newest known schema. Each migration runs
// in its own write transaction together with its schema_migrations row, so a
// failed migration leaves the previous version intact. The version is read
// inside that transaction: two processes opening the same new file do not
// both apply a migration.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := storeutil.Migrations(migrationFS, "migrations")
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
		return storeutil.TooNew(current, len(ms))
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m storeutil.Migration, known int) error {
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
		return storeutil.TooNew(current, known)
	}
	if current >= m.Version {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx,
		"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, unavailable(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, unavailable(err))
	}
	return nil
}
