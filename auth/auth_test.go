package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePairs(t *testing.T) {
	pairs, err := ParsePairs("alice:alice-token-1, bob:bob-token-22\n# comment\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 2 || pairs["alice-token-1"] != "alice" || pairs["bob-token-22"] != "bob" {
		t.Fatalf("%v", pairs)
	}
	for _, bad := range []string{"alice", ":tok-123456", "alice:", "alice:s3cr", "a:same-token-1,b:same-token-1"} {
		_, err := ParsePairs(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		for _, secret := range []string{"same-token-1", "s3cr", "tok-123456"} {
			if strings.Contains(bad, secret) && strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks the token: %v", err)
			}
		}
	}
}

func TestAllows(t *testing.T) {
	tokens := NewTokens(nil)
	tokens.ReplaceLimited(map[string]string{"alice-secret-1": "alice", "bob-secret-22": "bob"}, map[string][]string{"alice": {"support"}})
	for _, tc := range []struct {
		principal, agent string
		want             bool
	}{
		{"alice", "support", true}, {"alice", "coder", false}, {"bob", "coder", true}, {"bob", "support", true}, {"", "coder", true},
	} {
		if got := tokens.Allows(tc.principal, tc.agent); got != tc.want {
			t.Errorf("Allows(%q, %q) = %v", tc.principal, tc.agent, got)
		}
	}
	tokens.Replace(map[string]string{"alice-secret-1": "alice"})
	if !tokens.Allows("alice", "coder") {
		t.Error("a reload without limits keeps the old ones")
	}
}

func TestReloadFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("alice:first-token-1\n"), 0o600)
	pairs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tokens := NewTokens(pairs)
	if p, ok := tokens.Lookup("first-token-1"); !ok || p != "alice" {
		t.Fatal("first token")
	}
	os.WriteFile(path, []byte("alice:second-token-2\n"), 0o600)
	pairs, _ = ReadFile(path)
	tokens.Replace(pairs)
	if _, ok := tokens.Lookup("first-token-1"); ok {
		t.Fatal("old token still valid after reload")
	}
	if p, ok := tokens.Lookup("second-token-2"); !ok || p != "alice" {
		t.Fatal("new token")
	}
}

func TestWatchRevokes(t *testing.T) {
	tok := NewTokens(map[string]string{"alice-token-1": "alice", "bob-token-22": "bob"})
	tok.ReplaceLimited(map[string]string{"alice-token-1": "alice", "bob-token-22": "bob"}, map[string][]string{"bob": {"a", "b"}})
	revoked := map[string]int{}
	watch := func(name, token, principal, agent string) func() bool {
		return tok.Watch(token, principal, agent, func() { revoked[name]++ })
	}
	watch("alice", "alice-token-1", "alice", "")
	watch("bob-a", "bob-token-22", "bob", "a")
	watch("bob-b", "bob-token-22", "bob", "b")
	stopped := watch("stopped", "alice-token-1", "alice", "")
	watch("stale", "gone-token-333", "carol", "") // already invalid: revoked at once
	if revoked["stale"] != 1 || len(revoked) != 1 {
		t.Fatalf("after Watch: %v", revoked)
	}
	if !stopped() || stopped() {
		t.Fatal("stop: want true once, then false")
	}
	if n := tok.Watching(); n != 3 {
		t.Fatalf("watching %d, want 3", n)
	}
	// bob loses agent b; alice's token is given to mallory.
	tok.ReplaceLimited(map[string]string{"alice-token-1": "mallory", "bob-token-22": "bob"}, map[string][]string{"bob": {"a"}})
	if revoked["alice"] != 1 || revoked["bob-b"] != 1 || revoked["bob-a"] != 0 || revoked["stopped"] != 0 {
		t.Fatalf("after replace: %v", revoked)
	}
	// A second replace revokes nothing twice.
	tok.Replace(map[string]string{"x-token-4444": "x"})
	if revoked["alice"] != 1 || revoked["bob-b"] != 1 || revoked["bob-a"] != 1 || tok.Watching() != 0 {
		t.Fatalf("after second replace: %v, watching %d", revoked, tok.Watching())
	}
}
