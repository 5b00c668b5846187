package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestQueryTokenOnlyOnStreams: ?access_token= is taken only on the event
// streams and the WebSocket upgrade, whatever Accept or Upgrade a request
// on another route claims (issue 24.8). The transcript is golden.
func TestQueryTokenOnlyOnStreams(t *testing.T) {
	p, alice, _ := authServer(t)
	ctx := context.Background()
	info, err := alice.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	q := "access_token=" + aliceToken
	cases := []struct {
		method, path string
		header       []string
	}{
		{"GET", "/agentik/tools?" + q, []string{"Accept", "text/event-stream"}},
		{"GET", "/agentik/tools?" + q, []string{"Upgrade", "websocket", "Connection", "Upgrade"}},
		{"GET", "/agentik/conversations?" + q, []string{"Accept", "text/event-stream"}},
		{"GET", "/agentik/conversations/" + id + "?" + q, []string{"Accept", "text/event-stream"}},
		{"GET", "/agentik/conversations/" + id + "/messages?" + q, []string{"Accept", "text/event-stream"}},
		{"GET", "/agentik?" + q, []string{"Upgrade", "websocket", "Connection", "Upgrade"}},
		{"POST", "/agentik/conversations?" + q, []string{"Accept", "text/event-stream"}},
		{"POST", "/agui?" + q, []string{"Accept", "text/event-stream"}},
		{"POST", "/a2a?" + q, []string{"Accept", "text/event-stream"}},
		{"GET", "/agentik/events?after=0&" + q, nil},
		{"GET", "/agentik/conversations/" + id + "/events?after=0&" + q, nil},
	}
	var out strings.Builder
	for _, tc := range cases {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var body io.Reader
		if tc.method == "POST" {
			body = strings.NewReader(`{}`)
		}
		req, _ := http.NewRequestWithContext(rctx, tc.method, p.url+tc.path, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		first := ""
		if resp.Header.Get("Content-Type") == "text/event-stream" {
			first = "(event stream)"
		} else {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			first = strings.TrimSpace(string(b))
		}
		resp.Body.Close()
		cancel()
		path := strings.ReplaceAll(strings.ReplaceAll(tc.path, id, "{id}"), aliceToken, "ALICE")
		fmt.Fprintf(&out, "%s %s %v\n  %d %s\n", tc.method, path, tc.header, resp.StatusCode, first)
	}
	golden(t, "query_token.golden", out.String())
}

// TestEdgeThroughTheBinary: an unauthenticated request whose body is slow
// is refused at once; an authenticated one whose body stalls is cut off
// after AGENTIK_BODY_TIMEOUT (issue 24.3); CORS answers the allowed origin
// on every browser-facing facade, preflight included (issue 14).
func TestEdgeThroughTheBinary(t *testing.T) {
	p, _, _ := authServer(t, "AGENTIK_BODY_TIMEOUT=500ms", "AGENTIK_CORS_ORIGINS=https://app.example.com, http://localhost:3000")
	addr := strings.TrimPrefix(p.url, "http://")
	raw := func(head, body string) (*http.Response, string, time.Duration) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		io.WriteString(c, head+body)
		c.SetReadDeadline(time.Now().Add(15 * time.Second)) // a bound, not a wait
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b), time.Since(start)
	}
	for _, path := range []string{"/agentik/conversations", "/agui", "/a2a", "/mcp"} {
		head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
		resp, body, d := raw(head, `{"a":`)
		if resp.StatusCode != 401 || d > 5*time.Second {
			t.Errorf("unauthenticated slow body on %s: %d after %s: %s", path, resp.StatusCode, d, body)
		}
		head = "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + aliceToken + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
		resp, body, d = raw(head, `{"a":`)
		want := http.StatusRequestTimeout // the MCP server too: it reads the body itself since issue 44
		if resp.StatusCode != want || d < 500*time.Millisecond || d > 10*time.Second {
			t.Errorf("authenticated stalled body on %s: %d after %s: %s", path, resp.StatusCode, d, body)
		}
	}

	// CORS on every browser-facing route, preflight included.
	for _, tc := range []struct{ method, path string }{
		{"POST", "/agui"}, {"POST", "/a2a"}, {"POST", "/agentik/conversations"}, {"GET", "/agentik/events"},
		{"GET", "/.well-known/agent-card.json"}, {"GET", "/agentik/tools"}, {"POST", "/mcp"},
	} {
		for _, origin := range []string{"https://app.example.com", "http://localhost:3000", "https://evil.example.com"} {
			req, _ := http.NewRequest("OPTIONS", p.url+tc.path, nil)
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", tc.method)
			req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			allowed := origin != "https://evil.example.com"
			got := resp.StatusCode == 204 && resp.Header.Get("Access-Control-Allow-Origin") == origin &&
				strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")
			if got != allowed || (!allowed && resp.Header.Get("Access-Control-Allow-Origin") != "") {
				t.Errorf("preflight %s %s from %s: %d %v", tc.method, tc.path, origin, resp.StatusCode, resp.Header)
			}
		}
	}
	req, _ := http.NewRequest("POST", p.url+"/agentik/conversations", strings.NewReader(`{}`))
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Location") {
		t.Fatalf("cross-origin create: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestBadCORSOriginStopsStartup(t *testing.T) {
	_, stderr, code := runCLI(t, []string{"AGENTIK_CORS_ORIGINS=https://*.example.com"}, "serve")
	if code != exitConfig || !strings.Contains(stderr, "AGENTIK_CORS_ORIGINS") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
