package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentik/agentik/console"
	"github.com/agentik/agentik/internal/testenv"
)

// TestMarkdownInChromium loads the console's markdown.js, as the console
// serves it, into Debian's headless Chromium with the page in
// testdata/markdown, which renders ordinary Markdown and untrusted text
// against the outputs it always had, hostile input (10,000 nested quotes,
// 240 KB of "[a](", a large document mixing every construct with unclosed
// delimiters) against prose of the same size and at twice the size, and a
// streamed answer re-rendered at each chunk, then posts what it found. The
// time limits are ratios between renders of the same run, never wall-clock
// bounds: what a quadratic renderer cannot meet, and a busy machine can.
func TestMarkdownInChromium(t *testing.T) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		testenv.Missing(t, "Debian's chromium is needed for the Markdown browser test (apt-get install chromium)")
	}
	type result struct {
		Name, Detail string
		OK           bool
	}
	var got struct {
		Results []result
		Fatal   string
	}
	posted := make(chan []byte, 1)
	mux := http.NewServeMux()
	console.New().Mount(mux, nil)
	mux.Handle("GET /test/", http.StripPrefix("/test/", http.FileServer(http.Dir("testdata/markdown"))))
	mux.HandleFunc("POST /test/result", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case posted <- b:
		default:
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", console.CSP) // the test page too: what the console's page allows
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir="+t.TempDir(), srv.URL+"/test/index.html")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	select {
	case b := <-posted:
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("the page posted %q: %v", b, err)
		}
	case <-ctx.Done():
		t.Fatalf("the page posted no result in time; chromium said:\n%s", stderr.String())
	}
	if got.Fatal != "" {
		t.Fatalf("the test page failed: %s", got.Fatal)
	}
	// Each check the page runs; a page that stopped early must not pass.
	want := []string{"nested quotes", "link openers", "mixed document", "streaming renders what render does", "streaming costs the tail"}
	seen := map[string]bool{}
	for _, r := range got.Results {
		seen[r.Name] = true
		t.Run(r.Name, func(t *testing.T) {
			if !r.OK {
				t.Fatal(r.Detail)
			}
			t.Log(r.Detail)
		})
	}
	for _, n := range want {
		if !seen[n] {
			t.Errorf("the page did not report %q", n)
		}
	}
}
