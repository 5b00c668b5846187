package oauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// AuthRequest is an authorization request (RFC 6749 §4.1.1 with PKCE,
// RFC 7636, and a resource indicator, RFC 8707), as the authorize page
// receives it and posts it back.
type AuthRequest struct {
	ResponseType        string
	ClientID            string
	RedirectURI         string
	State               string
	Scope               string
	CodeChallenge       string
	CodeChallengeMethod string
	Resource            string
}

// ParseAuthRequest reads an authorization request from query or form
// values.
func ParseAuthRequest(v url.Values) AuthRequest {
	return AuthRequest{
		ResponseType: v.Get("response_type"), ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"),
		State: v.Get("state"), Scope: v.Get("scope"), CodeChallenge: v.Get("code_challenge"),
		CodeChallengeMethod: v.Get("code_challenge_method"), Resource: v.Get("resource"),
	}
}

// challengeRE is an S256 code challenge: base64url of 32 bytes.
var challengeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// verifierRE is a PKCE code verifier (RFC 7636 §4.1).
var verifierRE = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// pageError is a failure shown on the page, never redirected: the client or
// its redirect URI cannot be trusted.
type pageError struct{ msg string }

func (e *pageError) Error() string { return e.msg }

// redirectError is a failure sent back to the client's redirect URI.
type redirectError struct{ code, desc string }

func (e *redirectError) Error() string { return e.code + ": " + e.desc }

// checked is an authorization request that passed every check.
type checked struct {
	AuthRequest
	client Client
	agent  string
}

// check validates req: first the client and its redirect URI (a failure
// there is a pageError), then the rest (a redirectError).
func (s *Server) check(r *http.Request, req AuthRequest) (checked, error) {
	c := checked{AuthRequest: req}
	if req.ClientID == "" {
		return c, &pageError{"The request names no client (client_id is missing)."}
	}
	client, err := s.opts.Store.Client(r.Context(), req.ClientID)
	if errors.Is(err, ErrNotFound) {
		return c, &pageError{"The client is not registered with this server (unknown client_id). Let the application register again."}
	}
	if err != nil {
		s.opts.Logger.Error("oauth: read a client", "err", err)
		return c, &pageError{"The server could not read the client's registration; try again."}
	}
	c.client = client
	if req.RedirectURI == "" && len(client.RedirectURIs) == 1 {
		c.RedirectURI = client.RedirectURIs[0]
	}
	if !redirectMatches(client.RedirectURIs, c.RedirectURI) {
		return c, &pageError{"The redirect URI is not one the client registered (redirect_uri mismatch)."}
	}
	switch {
	case req.ResponseType != "code":
		return c, &redirectError{"unsupported_response_type", "response_type must be code"}
	case req.CodeChallenge == "":
		return c, &redirectError{"invalid_request", "code_challenge is required (PKCE)"}
	case req.CodeChallengeMethod != "S256":
		return c, &redirectError{"invalid_request", "code_challenge_method must be S256"}
	case !challengeRE.MatchString(req.CodeChallenge):
		return c, &redirectError{"invalid_request", "code_challenge is not an S256 challenge (43 base64url characters)"}
	case len(req.State) > 2000:
		return c, &redirectError{"invalid_request", "state is too long"}
	}
	if c.Resource == "" {
		c.Resource = s.base(r) + "/mcp" // clients that send no resource indicator get the default endpoint
	}
	agent, ok := s.resourceOf(s.base(r), c.Resource)
	if !ok {
		return c, &redirectError{"invalid_target", "resource is not an MCP endpoint of this server"}
	}
	c.agent = agent
	return c, nil
}

// redirect sends the client back to its redirect URI with params.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, c checked, params url.Values) {
	u, _ := url.Parse(c.RedirectURI) // checked at registration
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	if c.State != "" {
		q.Set("state", c.State)
	}
	q.Set("iss", s.base(r))
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// fail answers err of check: the page for a pageError, a redirect for the
// rest.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, c checked, err error) {
	var re *redirectError
	if errors.As(err, &re) {
		s.redirect(w, r, c, url.Values{"error": {re.code}, "error_description": {re.desc}})
		return
	}
	s.render(w, http.StatusBadRequest, page{Error: err.Error()})
}

// authorizePage handles GET /oauth/authorize: the consent page.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	c, err := s.check(r, ParseAuthRequest(r.URL.Query()))
	if err != nil {
		s.fail(w, r, c, err)
		return
	}
	s.render(w, http.StatusOK, s.pageOf(c, ""))
}

// authorizeDecision handles the page's POST: the person's token and answer.
func (s *Server) authorizeDecision(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.render(w, http.StatusBadRequest, page{Error: "The form could not be read."})
		return
	}
	c, err := s.check(r, ParseAuthRequest(r.PostForm))
	if err != nil {
		s.fail(w, r, c, err)
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		s.redirect(w, r, c, url.Values{"error": {"access_denied"}, "error_description": {"the person declined"}})
		return
	}
	principal, ok := s.opts.SignIn(strings.TrimSpace(r.PostForm.Get("token")))
	if !ok {
		s.render(w, http.StatusUnauthorized, s.pageOf(c, "That is not a valid Agentik token."))
		return
	}
	if !s.opts.Allows(principal, c.agent) {
		s.render(w, http.StatusForbidden, s.pageOf(c, "Your token may not use the agent "+c.agent+"."))
		return
	}
	code := newSecret(CodePrefix)
	g := Grant{Hash: Hash(code), Kind: KindCode, Family: newFamily(), ClientID: c.ClientID, Principal: principal, Resource: c.Resource,
		Scope: Scope, RedirectURI: c.RedirectURI, Challenge: c.CodeChallenge, ExpiresAt: s.opts.Now().Add(s.opts.CodeTTL)}
	if err := s.opts.Store.PutGrant(r.Context(), g); err != nil {
		s.opts.Logger.Error("oauth: store a code", "err", err)
		s.redirect(w, r, c, url.Values{"error": {"server_error"}, "error_description": {"the grant could not be stored"}})
		return
	}
	s.opts.Logger.Info("oauth: authorized", "client_id", c.ClientID, "principal", principal, "resource", c.Resource)
	s.redirect(w, r, c, url.Values{"code": {code}})
}

func newFamily() string { return newSecret("")[:22] }

// page is what the authorize template shows.
type page struct {
	Error    string
	Client   string
	Agent    string
	Redirect string
	Req      AuthRequest
	Nonce    string
	// formTarget is the CSP source of where the form's answer redirects
	// (form-action covers the redirect after the POST).
	formTarget string
}

func (s *Server) pageOf(c checked, msg string) page {
	name := c.client.Name
	if name == "" {
		name = "An unnamed application"
	}
	host := c.RedirectURI
	if u, err := url.Parse(c.RedirectURI); err == nil && u.Host != "" {
		host = u.Scheme + "://" + u.Host
	}
	target := ""
	if u, err := url.Parse(c.RedirectURI); err == nil {
		target = u.Scheme + ":"
		if u.Host != "" {
			target = u.Scheme + "://" + u.Host
		}
	}
	return page{Error: msg, Client: name, Agent: c.agent, Redirect: host, Req: c.AuthRequest, formTarget: target}
}

func (s *Server) render(w http.ResponseWriter, status int, p page) {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // never fails
	p.Nonce = base64.RawStdEncoding.EncodeToString(b)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+p.Nonce+"'; script-src 'nonce-"+p.Nonce+"'; form-action 'self' "+p.formTarget+"; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	if err := pageTemplate.Execute(w, p); err != nil {
		s.opts.Logger.Warn("oauth: render the authorize page", "err", err)
	}
}

var pageTemplate = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agentik — allow access</title>
<style nonce="{{.Nonce}}">
body { font: 16px/1.5 system-ui, sans-serif; max-width: 34rem; margin: 3rem auto; padding: 0 1rem; color: #1d1d1f; }
.error { background: #fde8e8; border: 1px solid #e0a0a0; padding: .5rem .75rem; border-radius: 6px; }
label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
input[type=password] { width: 100%; padding: .5rem; font: inherit; box-sizing: border-box; }
.buttons { margin-top: 1.25rem; display: flex; gap: .75rem; }
button { font: inherit; padding: .5rem 1.25rem; border-radius: 6px; border: 1px solid #888; background: #fff; cursor: pointer; }
button[value=allow] { background: #1f6feb; border-color: #1f6feb; color: #fff; }
.note { color: #555; font-size: .9rem; }
</style>
</head>
<body>
<h1>Allow access to Agentik?</h1>
{{if .Error}}<p class="error" id="error" role="alert">{{.Error}}</p>{{end}}
{{if .Agent}}
<p><strong>{{.Client}}</strong> asks to use the agent <strong>{{.Agent}}</strong> on your behalf: to send it messages and read your conversations with it.</p>
<p class="note">After you answer, you are sent back to <code>{{.Redirect}}</code>.</p>
<form method="post" action="">
<input type="hidden" name="response_type" value="{{.Req.ResponseType}}">
<input type="hidden" name="client_id" value="{{.Req.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.Req.RedirectURI}}">
<input type="hidden" name="state" value="{{.Req.State}}">
<input type="hidden" name="scope" value="{{.Req.Scope}}">
<input type="hidden" name="code_challenge" value="{{.Req.CodeChallenge}}">
<input type="hidden" name="code_challenge_method" value="{{.Req.CodeChallengeMethod}}">
<input type="hidden" name="resource" value="{{.Req.Resource}}">
<label for="token">Your Agentik token</label>
<input type="password" id="token" name="token" autocomplete="current-password">
<p class="note" id="signed-in" hidden>Filled in from your sign-in to the Agentik console in this browser.</p>
<div class="buttons">
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</div>
</form>
<script nonce="{{.Nonce}}">
(function () {
  var t = null;
  try { t = window.localStorage.getItem("agentik.token"); } catch (e) {}
  var f = document.getElementById("token");
  if (t && !f.value) { f.value = t; document.getElementById("signed-in").hidden = false; }
})();
</script>
{{end}}
</body>
</html>
`))
