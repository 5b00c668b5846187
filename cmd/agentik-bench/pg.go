package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// pgSchemas gives every server of a --pg run a database of its own: a fresh
// schema in the given database, selected through search_path, dropped when
// the run ends. The figures then start from empty tables as with SQLite, and
// the bench never touches tables it did not create.
type pgSchemas struct {
	dsn       string
	created   []string
	databases []string // the cluster phase's, one per run
}

func (p *pgSchemas) fresh(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return "", fmt.Errorf("connect to --pg database: %w", err)
	}
	defer conn.Close(ctx)
	schema := "agentik_bench_" + strings.ReplaceAll(agentik.NewID(), "-", "")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	p.created = append(p.created, schema)
	return withSearchPath(p.dsn, schema)
}

// dropAll removes the schemas this run created.
func (p *pgSchemas) dropAll() error {
	if len(p.created) == 0 && len(p.databases) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return fmt.Errorf("drop bench schemas: %w", err)
	}
	defer conn.Close(ctx)
	for _, s := range p.created {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema %s: %w", s, err)
		}
	}
	p.created = nil
	for _, d := range p.databases {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+d+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", d, err)
		}
	}
	p.databases = nil
	return nil
}

// withSearchPath sets search_path in a URL or key=value DSN.
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("--pg: %w", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " search_path=" + schema, nil
}
