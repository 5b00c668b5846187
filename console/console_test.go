package console_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/agentik/agentik/console"
)

// maxGzipped is the budget of the whole console (issue 18): every asset
// gzipped, added up.
const maxGzipped = 300 << 10

func TestSizeBudget(t *testing.T) {
	total, raw := 0, 0
	for name, b := range console.New().Files() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		t.Logf("%-12s %6d bytes, %6d gzipped", name, len(b), buf.Len())
		total += buf.Len()
		raw += len(b)
	}
	t.Logf("console: %d bytes, %d gzipped (budget %d)", raw, total, maxGzipped)
	if total > maxGzipped || total == 0 {
		t.Fatalf("console is %d bytes gzipped, budget %d", total, maxGzipped)
	}
}

// TestNoUnsafeSinks keeps untrusted text away from HTML parsing and every
// request on the page's origin: the scripts never use innerHTML and kin,
// eval or string timers, and no asset names another origin.
func TestNoUnsafeSinks(t *testing.T) {
	bad := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\("|\bsrc="https?:|href="https?:|url\(https?:|@import`)
	for name, b := range console.New().Files() {
		if m := bad.Find(b); m != nil {
			t.Errorf("%s uses %q", name, m)
		}
	}
}

func TestRoutes(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/agentik/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api") })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "health") })
	console.New().Mount(mux, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := get("GET", "/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "/console/app.js") {
		t.Fatalf("GET /: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp != console.CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers %v", resp.Header)
	}
	// The icon: at /favicon.ico, where browsers ask for it on every load,
	// and named by the page.
	if !strings.Contains(body, `<link rel="icon" href="/favicon.ico" type="image/svg+xml">`) {
		t.Fatal("the page names no icon")
	}
	resp, icon := get("GET", "/favicon.ico")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(icon, "<svg") ||
		resp.Header.Get("Content-Security-Policy") != console.CSP {
		t.Fatalf("GET /favicon.ico: %d %q %.20q", resp.StatusCode, resp.Header.Get("Content-Type"), icon)
	}
	if r2, _ := get("GET", "/favicon.ico", "If-None-Match", resp.Header.Get("ETag")); r2.StatusCode != http.StatusNotModified {
		t.Fatalf("favicon revalidation: %d", r2.StatusCode)
	}
	for _, f := range []string{"app.js", "app.css", "markdown.js"} {
		resp, _ := get("GET", "/console/"+f)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("%s: %d", f, resp.StatusCode)
		}
		if r2, _ := get("GET", "/console/"+f, "If-None-Match", resp.Header.Get("ETag")); r2.StatusCode != http.StatusNotModified {
			t.Fatalf("%s revalidation: %d", f, r2.StatusCode)
		}
	}
	// The console shadows nothing: other routes keep their answers, and
	// only exact paths are the console's.
	for path, want := range map[string]string{"/agentik/conversations": "api", "/health": "health"} {
		if _, body := get("GET", path); body != want {
			t.Fatalf("%s answered %q", path, body)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/index.html"}, {"GET", "/console/"}, {"GET", "/console/nope.js"}, {"GET", "/console/../console.go"},
		{"GET", "/anything"}, {"POST", "/"}, {"GET", "/console/index.html"}, {"POST", "/favicon.ico"}, {"GET", "/favicon.ico/x"},
	} {
		if resp, _ := get(tc.method, tc.path); resp.StatusCode < 400 {
			t.Errorf("%s %s: %d", tc.method, tc.path, resp.StatusCode)
		}
	}
}
