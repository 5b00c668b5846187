// Package console is the web console (SPEC §11): a page served at / and a
// few static assets under /console/, embedded in the binary. The page is
// plain HTML, CSS and hand-written JavaScript; it talks only to the public
// native API (REST, and SSE with ?access_token=), so whatever it does, any
// client can do. Nothing it loads comes from another origin, which the
// Content-Security-Policy enforces.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every console response: scripts,
// styles and connections only from the page's own origin, images also from
// data: and blob: URLs (inline images of the conversation and upload
// previews), no frames, no plugins, no inline script or style.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with its validator.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the console. Its zero value is not usable; New builds one.
type Handler struct {
	assets map[string]asset // by name under static/
}

// New loads the embedded assets.
func New() *Handler {
	h := &Handler{assets: map[string]asset{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.assets[strings.TrimPrefix(p, "static/")] = asset{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: embedded assets: " + err.Error()) // cannot happen: the files are compiled in
	}
	return h
}

// Files returns the names of the embedded assets (for size reports).
func (h *Handler) Files() map[string][]byte {
	out := make(map[string][]byte, len(h.assets))
	for n, a := range h.assets {
		out[n] = a.body
	}
	return out
}

// Mount registers the page at exactly "GET /", its icon at
// "GET /favicon.ico" (where browsers look for it on every load; the page
// names it too) and the assets at "GET /console/{file}", so no other route
// of mux is shadowed. wrap puts each handler behind the server's edge (it
// must not require a token: the page signs in itself).
func (h *Handler) Mount(mux *http.ServeMux, wrap func(http.Handler) http.Handler) {
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	mux.Handle("GET /{$}", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.serve(w, r, "index.html")
	})))
	mux.Handle("GET /favicon.ico", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.serve(w, r, "favicon.svg") // an SVG: what current browsers show, at the path they ask for
	})))
	mux.Handle("GET /console/{file}", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if name == "index.html" {
			name = ""
		}
		h.serve(w, r, name)
	})))
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, name string) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	a, ok := h.assets[name]
	if !ok {
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("404 not found\n"))
		return
	}
	// Revalidated on every load (no-cache), so a new binary's console is
	// picked up at once; unchanged files cost a 304.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	hd.Set("Content-Type", a.ctype)
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	http.ServeContent(w, r, "", timeZero, bytes.NewReader(a.body))
}

var timeZero = time.Time{}
