package auth

import (
	"net/http/httptest"
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

func TestAuthenticate(t *testing.T) {
	tokens := NewTokens(map[string]string{"alice-secret-1": "alice"})
	cases := []struct {
		method, url, header, accept, upgrade string
		want                                 string
	}{
		{"GET", "/agentik/conversations", "Bearer alice-secret-1", "", "", "alice"},
		{"GET", "/agentik/conversations", "bearer alice-secret-1", "", "", "alice"},
		{"GET", "/agentik/conversations", "Basic alice-secret-1", "", "", ""},
		{"GET", "/agentik/conversations", "Bearer wrong-secret", "", "", ""},
		{"GET", "/agentik/conversations", "", "", "", ""},
		{"GET", "/agentik/conversations?access_token=alice-secret-1", "", "", "", ""}, // not a stream
		{"GET", "/agentik/conversations/x/events?access_token=alice-secret-1", "", "text/event-stream", "", "alice"},
		{"GET", "/agentik/ws?access_token=alice-secret-1", "", "", "websocket", "alice"},
		{"POST", "/agentik/conversations?access_token=alice-secret-1", "", "text/event-stream", "", ""},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if tc.upgrade != "" {
			r.Header.Set("Upgrade", tc.upgrade)
		}
		got, err := tokens.Authenticate(r)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s %s %q: got %q, %v", tc.method, tc.url, tc.header, got, err)
		}
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
