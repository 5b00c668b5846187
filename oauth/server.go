// Package oauth is Agentik's own small OAuth 2.1 authorization server for
// its MCP endpoints, as the MCP authorization specification asks of a
// protected MCP server: protected resource metadata (RFC 9728), authorization
// server metadata (RFC 8414), dynamic client registration (RFC 7591), the
// authorization code grant with PKCE (S256 only), refresh tokens with
// rotation and revocation (RFC 7009). A person signs in on the authorize
// page with their Agentik bearer token; the access tokens issued act for
// that token's principal, at one MCP endpoint (the resource, RFC 8707),
// for a short time. Every code and token is stored as its SHA-256 only.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Scope is the one scope the server grants: the use of an MCP endpoint.
const Scope = "mcp"

// Defaults of Options.
const (
	DefaultAccessTTL  = time.Hour
	DefaultRefreshTTL = 30 * 24 * time.Hour
	DefaultCodeTTL    = 2 * time.Minute
)

// Prefixes of the credentials handed out: an access token is told from a
// static Agentik token by its prefix before any lookup.
const (
	AccessPrefix  = "agentik_at_"
	RefreshPrefix = "agentik_rt_"
	CodePrefix    = "agentik_ac_"
)

// Options configure a Server.
type Options struct {
	Store Store
	// SignIn returns the principal of an Agentik bearer token (the
	// server's static tokens), the proof a person gives on the authorize
	// page.
	SignIn func(token string) (principal string, ok bool)
	// Allows reports whether principal may use agent; nil allows all.
	Allows func(principal, agent string) bool
	// Resource returns the agent served at an MCP endpoint's path
	// ("/mcp", "/agents/x/mcp"); ok is false for any other path.
	Resource func(path string) (agent string, ok bool)
	// PublicURL is the server's external base URL ("https://agentik.example");
	// "" derives it from each request (its Host, and https when the
	// connection is TLS or X-Forwarded-Proto says so).
	PublicURL string
	// AccessTTL, RefreshTTL and CodeTTL are the lifetimes of access tokens,
	// refresh tokens and codes (Default… when zero).
	AccessTTL, RefreshTTL, CodeTTL time.Duration
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// Server is the authorization server. Safe for concurrent use.
type Server struct {
	opts Options
	reg  *window // registrations per minute

	mu      sync.Mutex
	cleaned time.Time
}

// New returns a server.
func New(opts Options) *Server {
	if opts.AccessTTL <= 0 {
		opts.AccessTTL = DefaultAccessTTL
	}
	if opts.RefreshTTL <= 0 {
		opts.RefreshTTL = DefaultRefreshTTL
	}
	if opts.CodeTTL <= 0 {
		opts.CodeTTL = DefaultCodeTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Allows == nil {
		opts.Allows = func(string, string) bool { return true }
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	return &Server{opts: opts, reg: &window{limit: maxRegistrationsPerMinute}}
}

// Paths of the server's endpoints.
const (
	PathResourceMetadata = "/.well-known/oauth-protected-resource"
	PathServerMetadata   = "/.well-known/oauth-authorization-server"
	PathRegister         = "/oauth/register"
	PathAuthorize        = "/oauth/authorize"
	PathToken            = "/oauth/token"
	PathRevoke           = "/oauth/revoke"
)

// Mount registers the server's endpoints on mux. Each answers for itself;
// none takes a bearer token.
func (s *Server) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+PathResourceMetadata+"/", s.resourceMetadata)
	mux.HandleFunc("GET "+PathResourceMetadata, s.resourceMetadata)
	mux.HandleFunc("GET "+PathServerMetadata, s.serverMetadata)
	mux.HandleFunc("POST "+PathRegister, s.register)
	mux.HandleFunc("GET "+PathAuthorize, s.authorizePage)
	mux.HandleFunc("POST "+PathAuthorize, s.authorizeDecision)
	mux.HandleFunc("POST "+PathToken, s.token)
	mux.HandleFunc("POST "+PathRevoke, s.revoke)
}

// base is the server's external base URL for r.
func (s *Server) base(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Challenge is the WWW-Authenticate of a 401 at the MCP endpoint r asked
// for: it names the endpoint's protected resource metadata (RFC 9728 §5.1),
// where a client starts the authorization flow.
func (s *Server) Challenge(r *http.Request) string {
	return `Bearer realm="agentik", resource_metadata="` + s.base(r) + PathResourceMetadata + r.URL.Path + `", scope="` + Scope + `"`
}

// Authenticate returns the principal of an access token presented at the
// MCP endpoint r asked for: a token issued for that endpoint (its
// resource), not expired, not revoked. Anything else is not ok.
func (s *Server) Authenticate(r *http.Request, token string) (principal string, ok bool) {
	if !strings.HasPrefix(token, AccessPrefix) {
		return "", false
	}
	g, err := s.opts.Store.Grant(r.Context(), Hash(token))
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			s.opts.Logger.Warn("oauth: look up an access token", "err", err)
		}
		return "", false
	}
	if g.Kind != KindAccess || !s.opts.Now().Before(g.ExpiresAt) || g.Resource != s.base(r)+r.URL.Path {
		return "", false
	}
	return g.Principal, true
}

// resourceOf checks that raw names one of the server's MCP endpoints (at
// base) and returns its agent.
func (s *Server) resourceOf(base, raw string) (agent string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	b, _ := url.Parse(base)
	if b == nil || !strings.EqualFold(u.Scheme, b.Scheme) || !strings.EqualFold(u.Host, b.Host) {
		return "", false
	}
	return s.opts.Resource(u.Path)
}

// writeJSON answers v with status, never cached (RFC 6749 §5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"server_error"}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	w.Write(append(b, '\n')) //nolint:errcheck // the client went away
}

// oauthError is an error in OAuth's JSON form (RFC 6749 §5.2).
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, desc string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="agentik"`)
	}
	writeJSON(w, status, oauthError{Code: code, Description: desc})
}

// resourceMetadata serves RFC 9728 metadata of the MCP endpoint whose path
// follows the well-known prefix (the default one, /mcp, at the bare path).
func (s *Server) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, PathResourceMetadata)
	if path == "" {
		path = "/mcp"
	}
	agent, ok := s.opts.Resource(path)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no MCP endpoint at "+path)
		return
	}
	base := s.base(r)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 base + path,
		"authorization_servers":    []string{base},
		"scopes_supported":         []string{Scope},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Agentik agent " + agent,
	})
}

// serverMetadata serves RFC 8414 metadata.
func (s *Server) serverMetadata(w http.ResponseWriter, r *http.Request) {
	base := s.base(r)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         base,
		"authorization_endpoint":                         base + PathAuthorize,
		"token_endpoint":                                 base + PathToken,
		"registration_endpoint":                          base + PathRegister,
		"revocation_endpoint":                            base + PathRevoke,
		"scopes_supported":                               []string{Scope},
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
	})
}

// cleanup deletes expired grants, at most every ten minutes.
func (s *Server) cleanup(ctx context.Context) {
	now := s.opts.Now()
	s.mu.Lock()
	due := now.Sub(s.cleaned) > 10*time.Minute
	if due {
		s.cleaned = now
	}
	s.mu.Unlock()
	if due {
		if err := s.opts.Store.DeleteExpired(ctx, now); err != nil {
			s.opts.Logger.Warn("oauth: delete expired grants", "err", err)
		}
	}
}

// window counts events per minute, for all callers together.
type window struct {
	mu    sync.Mutex
	limit int
	start time.Time
	n     int
}

func (w *window) allow(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.start) >= time.Minute {
		w.start, w.n = now, 0
	}
	if w.n >= w.limit {
		return false
	}
	w.n++
	return true
}
