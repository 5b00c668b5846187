package oauth

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Bounds of a registration.
const (
	maxRegistrationBytes      = 64 << 10
	maxRedirectURIs           = 10
	maxURILength              = 2000
	maxClientName             = 200
	maxRegistrationsPerMinute = 60
)

// Registration is a dynamic client registration request (RFC 7591 §2);
// fields the server does not use are ignored.
type Registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// DecodeRegistration reads and checks a registration request body. The
// error is an RFC 7591 error code and a description.
func DecodeRegistration(body []byte) (Registration, *oauthError) {
	var reg Registration
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&reg); err != nil {
		return reg, &oauthError{"invalid_client_metadata", "the body is not a JSON object of client metadata: " + err.Error()}
	}
	if dec.More() {
		return reg, &oauthError{"invalid_client_metadata", "the body holds more than one JSON value"}
	}
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > maxRedirectURIs {
		return reg, &oauthError{"invalid_redirect_uri", fmt.Sprintf("redirect_uris must list 1 to %d URIs", maxRedirectURIs)}
	}
	for _, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != "" {
			return reg, &oauthError{"invalid_redirect_uri", fmt.Sprintf("redirect URI %q: %s", truncate(u, 100), err)}
		}
	}
	if len(reg.ClientName) > maxClientName {
		return reg, &oauthError{"invalid_client_metadata", fmt.Sprintf("client_name is longer than %d bytes", maxClientName)}
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return reg, &oauthError{"invalid_client_metadata", fmt.Sprintf("grant type %q is not supported (authorization_code and refresh_token are)", truncate(g, 50))}
		}
	}
	for _, t := range reg.ResponseTypes {
		if t != "code" {
			return reg, &oauthError{"invalid_client_metadata", fmt.Sprintf("response type %q is not supported (code is)", truncate(t, 50))}
		}
	}
	return reg, nil
}

// checkRedirectURI says what is wrong with a redirect URI ("" if nothing):
// an absolute URI without a fragment; http only to a loopback host (a
// native client's local listener, RFC 8252 §7.3); any other scheme is
// https or a private-use scheme of a native app (cursor://, vscode://).
func checkRedirectURI(raw string) string {
	if len(raw) > maxURILength {
		return "too long"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "not a URI"
	case !u.IsAbs():
		return "not absolute"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "has a fragment"
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return "http is allowed for loopback hosts only; use https"
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host == "":
		return "has no host"
	case u.Scheme == "javascript" || u.Scheme == "data" || u.Scheme == "file" || u.Scheme == "vbscript":
		return "scheme " + u.Scheme + " is not allowed"
	}
	return ""
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redirectMatches reports whether the redirect URI of a request is one the
// client registered: the same string, except that a loopback http URI may
// name any port (RFC 8252 §7.3).
func redirectMatches(registered []string, got string) bool {
	if slices.Contains(registered, got) {
		return true
	}
	g, err := url.Parse(got)
	if err != nil || g.Scheme != "http" || !loopback(g.Hostname()) {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err == nil && u.Scheme == "http" && u.Hostname() == g.Hostname() && u.Path == g.Path && u.RawQuery == g.RawQuery {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// register handles POST /oauth/register.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRegistrationBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("the body could not be read (at most %d bytes)", maxRegistrationBytes))
		return
	}
	reg, oerr := DecodeRegistration(body)
	if oerr != nil {
		writeJSON(w, http.StatusBadRequest, oerr)
		return
	}
	now := s.opts.Now()
	if !s.reg.allow(now) {
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many client registrations; try again in a minute")
		return
	}
	c := Client{ID: uuid.NewString(), Name: reg.ClientName, RedirectURIs: reg.RedirectURIs, CreatedAt: now.UTC()}
	if err := s.opts.Store.PutClient(r.Context(), c); err != nil {
		s.opts.Logger.Error("oauth: register a client", "err", err)
		writeError(w, http.StatusInternalServerError, "server_error", "the client could not be stored")
		return
	}
	s.opts.Logger.Info("oauth: client registered", "client_id", c.ID, "client_name", truncate(c.Name, 100))
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"scope":                      Scope,
	})
}
