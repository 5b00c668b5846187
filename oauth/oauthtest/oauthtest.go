// Package oauthtest is the contract of an oauth.Store, run by each store's
// tests on a real database.
package oauthtest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik/oauth"
)

// Run checks the oauth.Store open returns (a fresh, empty one per call).
func Run(t *testing.T, open func(t *testing.T) oauth.Store) {
	t.Run("clients", func(t *testing.T) { clients(t, open(t)) })
	t.Run("grants", func(t *testing.T) { grants(t, open(t)) })
	t.Run("use once under contention", func(t *testing.T) { contention(t, open(t)) })
}

func clients(t *testing.T, s oauth.Store) {
	ctx := t.Context()
	if _, err := s.Client(ctx, "nope"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("unknown client: %v", err)
	}
	c := oauth.Client{ID: "c1", Name: "Inspector", RedirectURIs: []string{"http://127.0.0.1:6274/cb", "cursor://cb"}, CreatedAt: time.UnixMilli(1_700_000_000_123).UTC()}
	if err := s.PutClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := s.Client(ctx, "c1")
	if err != nil || got.Name != c.Name || !slices.Equal(got.RedirectURIs, c.RedirectURIs) || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Fatalf("client %+v, %v", got, err)
	}
}

func grant(hash, kind, family string, exp time.Time) oauth.Grant {
	return oauth.Grant{Hash: hash, Kind: kind, Family: family, ClientID: "c1", Principal: "alice", Resource: "http://h/mcp", Scope: "mcp",
		RedirectURI: "http://127.0.0.1/cb", Challenge: "ch", ExpiresAt: exp}
}

func grants(t *testing.T, s oauth.Store) {
	ctx := t.Context()
	exp := time.UnixMilli(1_900_000_000_000).UTC()
	for _, g := range []oauth.Grant{grant("code1", oauth.KindCode, "f1", exp), grant("at1", oauth.KindAccess, "f1", exp),
		grant("rt1", oauth.KindRefresh, "f1", exp), grant("at2", oauth.KindAccess, "f2", exp), grant("old", oauth.KindAccess, "f3", exp.Add(-time.Hour))} {
		if err := s.PutGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.Grant(ctx, "code1")
	if err != nil || g != grant("code1", oauth.KindCode, "f1", exp) {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if _, err := s.Grant(ctx, "nope"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("unknown grant: %v", err)
	}
	if _, err := s.UseGrant(ctx, "code1", oauth.KindRefresh); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("use as another kind: %v", err)
	}
	if g, err := s.UseGrant(ctx, "code1", oauth.KindCode); err != nil || !g.Used || g.Family != "f1" {
		t.Fatalf("first use %+v, %v", g, err)
	}
	if g, err := s.UseGrant(ctx, "code1", oauth.KindCode); !errors.Is(err, oauth.ErrUsed) || g.Family != "f1" {
		t.Fatalf("second use %+v, %v", g, err)
	}
	if err := s.RevokeFamily(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"code1", "at1", "rt1"} {
		if _, err := s.Grant(ctx, h); !errors.Is(err, oauth.ErrNotFound) {
			t.Fatalf("%s after its family's revocation: %v", h, err)
		}
	}
	if _, err := s.Grant(ctx, "at2"); err != nil {
		t.Fatalf("another family: %v", err)
	}
	if err := s.DeleteExpired(ctx, exp.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grant(ctx, "old"); !errors.Is(err, oauth.ErrNotFound) {
		t.Fatalf("expired grant kept: %v", err)
	}
	if _, err := s.Grant(ctx, "at2"); err != nil {
		t.Fatalf("unexpired grant deleted: %v", err)
	}
}

// contention: of several redemptions of one code at once, exactly one
// gets it.
func contention(t *testing.T, s oauth.Store) {
	ctx := t.Context()
	if err := s.PutGrant(ctx, grant("code", oauth.KindCode, "f", time.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.UseGrant(ctx, "code", oauth.KindCode) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, oauth.ErrUsed):
			t.Errorf("use: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d redemptions succeeded, want 1", ok)
	}
}
