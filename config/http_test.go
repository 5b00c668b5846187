package config

import (
	"strings"
	"testing"
)

func TestParseOrigins(t *testing.T) {
	got, err := parseOrigins(" https://a.example.com, http://localhost:3000/ ,")
	if err != nil || len(got) != 2 || got[0] != "https://a.example.com" || got[1] != "http://localhost:3000" {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{"*", "a.example.com", "https://*.example.com", "ftp://a", "https://a/b", "https://"} {
		if _, err := parseOrigins(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseOrigins(f *testing.F) {
	for _, s := range []string{"https://a.example.com,http://localhost:3000", "*", "https://a/b", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		origins, err := parseOrigins(s)
		if err != nil {
			return
		}
		for _, o := range origins {
			if !validOrigin(o) || strings.ContainsAny(o, ", ") {
				t.Fatalf("%q accepted from %q", o, s)
			}
		}
	})
}
