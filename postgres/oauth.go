package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentik/agentik/oauth"
	"github.com/jackc/pgx/v5"
)

// OAuth returns the store of the MCP endpoints' OAuth server (clients and
// hashed grants) on this database, shared by every process that uses it.
func (s *Store) OAuth() oauth.Store { return oauthStore{s} }

type oauthStore struct{ s *Store }

const grantColumns = `hash, kind, family, client_id, principal, resource, scope, redirect_uri, challenge, expires_at, used`

func (o oauthStore) PutClient(ctx context.Context, c oauth.Client) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	return o.s.write(ctx, "put oauth client", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)`,
			c.ID, c.Name, string(uris), c.CreatedAt)
		return err
	})
}

func (o oauthStore) Client(ctx context.Context, id string) (oauth.Client, error) {
	c := oauth.Client{ID: id}
	var uris []byte
	err := o.s.read(ctx, "read oauth client", func(q querier) error {
		return q.QueryRow(ctx, `SELECT name, redirect_uris, created_at FROM oauth_clients WHERE id = $1`, id).Scan(&c.Name, &uris, &c.CreatedAt)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, oauth.ErrNotFound
	}
	if err != nil {
		return c, err
	}
	c.CreatedAt = c.CreatedAt.UTC()
	if err := json.Unmarshal(uris, &c.RedirectURIs); err != nil {
		return c, fmt.Errorf("read oauth client: %w", err)
	}
	return c, nil
}

func (o oauthStore) PutGrant(ctx context.Context, g oauth.Grant) error {
	return o.s.write(ctx, "put oauth grant", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO oauth_grants (`+grantColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			g.Hash, g.Kind, g.Family, g.ClientID, g.Principal, g.Resource, g.Scope, g.RedirectURI, g.Challenge, g.ExpiresAt, g.Used)
		return err
	})
}

func scanGrant(row pgx.Row) (oauth.Grant, error) {
	var g oauth.Grant
	err := row.Scan(&g.Hash, &g.Kind, &g.Family, &g.ClientID, &g.Principal, &g.Resource, &g.Scope, &g.RedirectURI, &g.Challenge, &g.ExpiresAt, &g.Used)
	g.ExpiresAt = g.ExpiresAt.UTC()
	return g, err
}

func (o oauthStore) Grant(ctx context.Context, hash string) (oauth.Grant, error) {
	var g oauth.Grant
	err := o.s.read(ctx, "read oauth grant", func(q querier) error {
		var err error
		g, err = scanGrant(q.QueryRow(ctx, `SELECT `+grantColumns+` FROM oauth_grants WHERE hash = $1`, hash))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return g, oauth.ErrNotFound
	}
	return g, err
}

// UseGrant marks the grant used in one statement, so that of two processes
// redeeming the same code at once exactly one gets it.
func (o oauthStore) UseGrant(ctx context.Context, hash, kind string) (oauth.Grant, error) {
	var g oauth.Grant
	var used bool
	err := o.s.write(ctx, "use oauth grant", func(tx pgx.Tx) error {
		var err error
		g, err = scanGrant(tx.QueryRow(ctx, `UPDATE oauth_grants SET used = true WHERE hash = $1 AND kind = $2 AND NOT used RETURNING `+grantColumns, hash, kind))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		g, err = scanGrant(tx.QueryRow(ctx, `SELECT `+grantColumns+` FROM oauth_grants WHERE hash = $1 AND kind = $2`, hash, kind))
		used = err == nil
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return g, oauth.ErrNotFound
	case err != nil:
		return g, err
	case used:
		return g, oauth.ErrUsed
	}
	return g, nil
}

func (o oauthStore) RevokeFamily(ctx context.Context, family string) error {
	return o.s.write(ctx, "revoke oauth grants", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM oauth_grants WHERE family = $1`, family)
		return err
	})
}

func (o oauthStore) DeleteExpired(ctx context.Context, now time.Time) error {
	return o.s.write(ctx, "delete expired oauth grants", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM oauth_grants WHERE expires_at < $1`, now)
		return err
	})
}
