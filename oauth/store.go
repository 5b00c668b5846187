package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// Client is a client registered by dynamic client registration (RFC 7591).
// Every client is public (token_endpoint_auth_method "none"): PKCE, not a
// secret, proves that the party redeeming a code is the one that asked.
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	CreatedAt    time.Time
}

// Kinds of Grant.
const (
	KindCode    = "code"
	KindAccess  = "access"
	KindRefresh = "refresh"
)

// Grant is one credential the server handed out: an authorization code, an
// access token or a refresh token, stored by the SHA-256 of its value
// (never the value). Family ties together the code and every token issued
// from it, so that a reused code or refresh token revokes them all.
type Grant struct {
	Hash      string
	Kind      string
	Family    string
	ClientID  string
	Principal string
	Resource  string
	Scope     string
	// RedirectURI and Challenge (the S256 code challenge) of a code.
	RedirectURI string
	Challenge   string
	ExpiresAt   time.Time
	// Used: a code redeemed or a refresh token rotated.
	Used bool
}

// ErrNotFound is a Store's answer for an unknown client or grant.
var ErrNotFound = errors.New("oauth: not found")

// ErrUsed is UseGrant's answer for a grant used before: the grant is
// returned with it, for its family to be revoked.
var ErrUsed = errors.New("oauth: used before")

// Store keeps clients and grants. sqlite.Store and postgres.Store
// implement it (OAuthStore), as does NewMemStore for tests. Safe for
// concurrent use.
type Store interface {
	PutClient(ctx context.Context, c Client) error
	// Client returns ErrNotFound for an unknown id.
	Client(ctx context.Context, id string) (Client, error)
	PutGrant(ctx context.Context, g Grant) error
	// Grant returns the grant of hash (ErrNotFound if none).
	Grant(ctx context.Context, hash string) (Grant, error)
	// UseGrant marks the unused grant of hash and kind used, atomically,
	// and returns it; a grant already used is returned with ErrUsed, an
	// unknown one gives ErrNotFound.
	UseGrant(ctx context.Context, hash, kind string) (Grant, error)
	// RevokeFamily deletes every grant of family.
	RevokeFamily(ctx context.Context, family string) error
	// DeleteExpired deletes the grants that expired before now.
	DeleteExpired(ctx context.Context, now time.Time) error
}

// Hash is the stored form of a credential: hex SHA-256. Credentials are 256
// random bits, so a fast hash is enough.
func Hash(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// newSecret returns prefix and 256 random bits, base64url.
func newSecret(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// memStore is an in-memory Store.
type memStore struct {
	mu      sync.Mutex
	clients map[string]Client
	grants  map[string]Grant
}

// NewMemStore returns a Store in memory (tests, and servers without a
// database).
func NewMemStore() Store {
	return &memStore{clients: map[string]Client{}, grants: map[string]Grant{}}
}

func (m *memStore) PutClient(_ context.Context, c Client) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.RedirectURIs = append([]string(nil), c.RedirectURIs...)
	m.clients[c.ID] = c
	return nil
}

func (m *memStore) Client(_ context.Context, id string) (Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[id]
	if !ok {
		return Client{}, ErrNotFound
	}
	return c, nil
}

func (m *memStore) PutGrant(_ context.Context, g Grant) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.grants[g.Hash] = g
	return nil
}

func (m *memStore) Grant(_ context.Context, hash string) (Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.grants[hash]
	if !ok {
		return Grant{}, ErrNotFound
	}
	return g, nil
}

func (m *memStore) UseGrant(_ context.Context, hash, kind string) (Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.grants[hash]
	if !ok || g.Kind != kind {
		return Grant{}, ErrNotFound
	}
	if g.Used {
		return g, ErrUsed
	}
	g.Used = true
	m.grants[hash] = g
	return g, nil
}

func (m *memStore) RevokeFamily(_ context.Context, family string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, g := range m.grants {
		if g.Family == family {
			delete(m.grants, h)
		}
	}
	return nil
}

func (m *memStore) DeleteExpired(_ context.Context, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, g := range m.grants {
		if g.ExpiresAt.Before(now) {
			delete(m.grants, h)
		}
	}
	return nil
}
