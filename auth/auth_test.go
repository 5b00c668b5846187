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
