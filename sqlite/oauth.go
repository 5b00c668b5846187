package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentik/agentik/oauth"
)

// OAuth returns the store of the MCP endpoints' OAuth server (clients and
// hashed grants) on this database.
func (s *Store) OAuth() oauth.Store { return oauthStore{s} }

type oauthStore struct{ s *Store }

const grantColumns = `hash, kind, family, client_id, principal, resource, scope, redirect_uri, challenge, expires_at, used`

func (o oauthStore) PutClient(ctx context.Context, c oauth.Client) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	return o.s.write(ctx, "put oauth client", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES (?, ?, ?, ?)`,
			c.ID, c.Name, string(uris), c.CreatedAt.UnixMilli())
		return err
	})
}

func (o oauthStore) Client(ctx context.Context, id string) (oauth.Client, error) {
	c := oauth.Client{ID: id}
	var uris string
	var created int64
	err := o.s.read(ctx, "read oauth client", func(r *reader) error {
		return r.QueryRowContext(ctx, `SELECT name, redirect_uris, created_at FROM oauth_clients WHERE id = ?`, id).Scan(&c.Name, &uris, &created)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return c, oauth.ErrNotFound
	}
	if err != nil {
		return c, err
	}
	c.CreatedAt = time.UnixMilli(created).UTC()
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return c, fmt.Errorf("read oauth client: %w", err)
	}
	return c, nil
}

func (o oauthStore) PutGrant(ctx context.Context, g oauth.Grant) error {
	return o.s.write(ctx, "put oauth grant", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_grants (`+grantColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.Hash, g.Kind, g.Family, g.ClientID, g.Principal, g.Resource, g.Scope, g.RedirectURI, g.Challenge, g.ExpiresAt.UnixMilli(), g.Used)
		return err
	})
}

func scanGrant(row interface{ Scan(...any) error }) (oauth.Grant, error) {
	var g oauth.Grant
	var exp int64
	err := row.Scan(&g.Hash, &g.Kind, &g.Family, &g.ClientID, &g.Principal, &g.Resource, &g.Scope, &g.RedirectURI, &g.Challenge, &exp, &g.Used)
	g.ExpiresAt = time.UnixMilli(exp).UTC()
	return g, err
}

func (o oauthStore) Grant(ctx context.Context, hash string) (oauth.Grant, error) {
	var g oauth.Grant
	err := o.s.read(ctx, "read oauth grant", func(r *reader) error {
		var err error
		g, err = scanGrant(r.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM oauth_grants WHERE hash = ?`, hash))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return g, oauth.ErrNotFound
	}
	return g, err
}

func (o oauthStore) UseGrant(ctx context.Context, hash, kind string) (oauth.Grant, error) {
	var g oauth.Grant
	var used bool
	err := o.s.write(ctx, "use oauth grant", func(tx *wtx) error {
		var err error
		g, err = scanGrant(tx.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM oauth_grants WHERE hash = ? AND kind = ?`, hash, kind))
		if err != nil || g.Used {
			used = g.Used
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE oauth_grants SET used = 1 WHERE hash = ?`, hash)
		return err
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return g, oauth.ErrNotFound
	case err != nil:
		return g, err
	case used:
		return g, oauth.ErrUsed
	}
	g.Used = true
	return g, nil
}

func (o oauthStore) RevokeFamily(ctx context.Context, family string) error {
	return o.s.write(ctx, "revoke oauth grants", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM oauth_grants WHERE family = ?`, family)
		return err
	})
}

func (o oauthStore) DeleteExpired(ctx context.Context, now time.Time) error {
	return o.s.write(ctx, "delete expired oauth grants", func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM oauth_grants WHERE expires_at < ?`, now.UnixMilli())
		return err
	})
}
