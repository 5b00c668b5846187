package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// env is an authorization server and a protected endpoint on a real
// listener: /mcp (agent "main") and /agents/other/mcp (agent "other", which
// only alice may use), each answering the principal its access token acts
// for.
type env struct {
	t     *testing.T
	srv   *Server
	url   string
	store Store
	mu    sync.Mutex
	now   time.Time
}

var signIn = map[string]string{"alice-token": "alice", "bob-token": "bob"}

func newEnv(t *testing.T, store Store) *env {
	t.Helper()
	e := &env{t: t, store: store, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	e.srv = New(Options{
		Store:  store,
		SignIn: func(tok string) (string, bool) { p, ok := signIn[tok]; return p, ok },
		Allows: func(p, agent string) bool { return agent != "other" || p == "alice" },
		Resource: func(path string) (string, bool) {
			switch path {
			case "/mcp":
				return "main", true
			case "/agents/other/mcp":
				return "other", true
			}
			return "", false
		},
		Now:    e.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	mux := http.NewServeMux()
	e.srv.Mount(mux)
	protected := func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, ok := e.srv.Authenticate(r, tok)
		if !ok {
			w.Header().Set("WWW-Authenticate", e.srv.Challenge(r))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, p)
	}
	mux.HandleFunc("/mcp", protected)
	mux.HandleFunc("/agents/other/mcp", protected)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 60 * time.Second}

func (e *env) getJSON(path string, want int) map[string]any {
	e.t.Helper()
	res, err := noRedirect.Get(e.url + path)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.decode(res, want)
}

func (e *env) decode(res *http.Response, want int) map[string]any {
	e.t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", res.Request.Method, res.Request.URL.Path, res.StatusCode, want, b)
	}
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			e.t.Fatalf("%s: %v", b, err)
		}
	}
	return m
}

func (e *env) postForm(path string, v url.Values, want int) map[string]any {
	e.t.Helper()
	res, err := noRedirect.PostForm(e.url+path, v)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.decode(res, want)
}

func (e *env) register(redirect string) string {
	e.t.Helper()
	body := `{"client_name":"Test Client","redirect_uris":["` + redirect + `"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`
	res, err := noRedirect.Post(e.url+PathRegister, "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	m := e.decode(res, http.StatusCreated)
	if m["token_endpoint_auth_method"] != "none" {
		e.t.Fatalf("registration %v", m)
	}
	return m["client_id"].(string)
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-the-verifier"

func challenge(v string) string {
	s := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// authorize posts the consent form and returns the redirect's query.
func (e *env) authorize(client, redirect, token, resource string, wantStatus int) url.Values {
	e.t.Helper()
	v := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "state": {"xyz"},
		"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}, "resource": {resource},
		"token": {token}, "decision": {"allow"}}
	res, err := noRedirect.PostForm(e.url+PathAuthorize, v)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != wantStatus {
		b, _ := io.ReadAll(res.Body)
		e.t.Fatalf("authorize: status %d, want %d: %s", res.StatusCode, wantStatus, b)
	}
	if wantStatus != http.StatusSeeOther {
		return nil
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirect) {
		e.t.Fatalf("redirect to %q", res.Header.Get("Location"))
	}
	return loc.Query()
}

func (e *env) exchange(client, code, redirect, v string, want int) map[string]any {
	e.t.Helper()
	return e.postForm(PathToken, url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {v}}, want)
}

func (e *env) call(path, token string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func wantOAuthError(t *testing.T, m map[string]any, code string) {
	t.Helper()
	if m["error"] != code || m["error_description"] == "" {
		t.Fatalf("got %v, want error %s with a description", m, code)
	}
}

const redirect = "http://127.0.0.1:33333/callback"

// TestFlow runs discovery, registration, consent, the code exchange, use
// at the resource, refresh with rotation and revocation, in that order, as
// an MCP client does.
func TestFlow(t *testing.T) { runFlow(t, NewMemStore()) }

func runFlow(t *testing.T, store Store) {
	e := newEnv(t, store)
	// The 401 names the resource metadata, which names this server.
	res, err := noRedirect.Get(e.url + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	wantChallenge := `resource_metadata="` + e.url + PathResourceMetadata + `/mcp"`
	if res.StatusCode != 401 || !strings.Contains(res.Header.Get("WWW-Authenticate"), wantChallenge) {
		t.Fatalf("401 challenge %q", res.Header.Get("WWW-Authenticate"))
	}
	prm := e.getJSON(PathResourceMetadata+"/mcp", 200)
	if prm["resource"] != e.url+"/mcp" || prm["authorization_servers"].([]any)[0] != e.url {
		t.Fatalf("resource metadata %v", prm)
	}
	asm := e.getJSON(PathServerMetadata, 200)
	if asm["issuer"] != e.url || asm["registration_endpoint"] != e.url+PathRegister || asm["code_challenge_methods_supported"].([]any)[0] != "S256" {
		t.Fatalf("server metadata %v", asm)
	}
	client := e.register(redirect)

	// The page shows the client, and a wrong token is refused on it.
	page, err := noRedirect.Get(e.url + PathAuthorize + "?" + url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect},
		"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}, "resource": {e.url + "/mcp"}, "state": {"s"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(b), "Test Client") || !strings.Contains(page.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("page %d %s", page.StatusCode, b)
	}
	e.authorize(client, redirect, "wrong-token", e.url+"/mcp", http.StatusUnauthorized)

	q := e.authorize(client, redirect, "alice-token", e.url+"/mcp", http.StatusSeeOther)
	if q.Get("state") != "xyz" || q.Get("iss") != e.url || !strings.HasPrefix(q.Get("code"), CodePrefix) {
		t.Fatalf("redirect query %v", q)
	}
	tok := e.exchange(client, q.Get("code"), redirect, verifier, 200)
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	if tok["token_type"] != "Bearer" || tok["expires_in"].(float64) != DefaultAccessTTL.Seconds() || !strings.HasPrefix(access, AccessPrefix) {
		t.Fatalf("token response %v", tok)
	}
	if st, p := e.call("/mcp", access); st != 200 || p != "alice" {
		t.Fatalf("/mcp with the access token: %d %q", st, p)
	}
	// Bound to its resource: not accepted at another endpoint.
	if st, _ := e.call("/agents/other/mcp", access); st != 401 {
		t.Fatalf("another resource: %d", st)
	}
	// Stored hashed: the store holds no credential in the clear.
	if _, err := store.Grant(t.Context(), access); err == nil {
		t.Fatal("the access token is a key of the store")
	}

	// Refresh rotates: the new pair works, the old refresh token is spent,
	// and spending it again revokes the grant.
	tok2 := e.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}}, 200)
	access2, refresh2 := tok2["access_token"].(string), tok2["refresh_token"].(string)
	if access2 == access || refresh2 == refresh {
		t.Fatal("refresh did not rotate")
	}
	if st, _ := e.call("/mcp", access2); st != 200 {
		t.Fatalf("refreshed access token: %d", st)
	}
	wantOAuthError(t, e.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh}}, 400), "invalid_grant")
	if st, _ := e.call("/mcp", access2); st != 401 {
		t.Fatalf("after refresh-token reuse the grant's access token still works: %d", st)
	}
	wantOAuthError(t, e.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {refresh2}}, 400), "invalid_grant")

	// Revocation ends a grant.
	q = e.authorize(client, redirect, "alice-token", e.url+"/mcp", http.StatusSeeOther)
	tok = e.exchange(client, q.Get("code"), redirect, verifier, 200)
	e.postForm(PathRevoke, url.Values{"token": {tok["refresh_token"].(string)}, "client_id": {client}}, 200)
	if st, _ := e.call("/mcp", tok["access_token"].(string)); st != 401 {
		t.Fatalf("revoked: %d", st)
	}
	wantOAuthError(t, e.postForm(PathToken, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {tok["refresh_token"].(string)}}, 400), "invalid_grant")

	// Access tokens expire.
	q = e.authorize(client, redirect, "alice-token", e.url+"/mcp", http.StatusSeeOther)
	tok = e.exchange(client, q.Get("code"), redirect, verifier, 200)
	e.advance(DefaultAccessTTL + time.Second)
	if st, _ := e.call("/mcp", tok["access_token"].(string)); st != 401 {
		t.Fatalf("expired access token: %d", st)
	}
}

// TestBadInput: each hostile or mistaken request gets a clear OAuth error
// and grants nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t, NewMemStore())
	client := e.register(redirect)
	res := e.url + "/mcp"

	t.Run("wrong verifier", func(t *testing.T) {
		q := e.authorize(client, redirect, "alice-token", res, http.StatusSeeOther)
		wantOAuthError(t, e.exchange(client, q.Get("code"), redirect, verifier+"x", 400), "invalid_grant")
		// The code is spent: the right verifier no longer helps.
		wantOAuthError(t, e.exchange(client, q.Get("code"), redirect, verifier, 400), "invalid_grant")
	})
	t.Run("reused code revokes what it gave", func(t *testing.T) {
		q := e.authorize(client, redirect, "alice-token", res, http.StatusSeeOther)
		tok := e.exchange(client, q.Get("code"), redirect, verifier, 200)
		wantOAuthError(t, e.exchange(client, q.Get("code"), redirect, verifier, 400), "invalid_grant")
		if st, _ := e.call("/mcp", tok["access_token"].(string)); st != 401 {
			t.Fatalf("access token of a reused code: %d", st)
		}
	})
	t.Run("expired code", func(t *testing.T) {
		q := e.authorize(client, redirect, "alice-token", res, http.StatusSeeOther)
		e.advance(DefaultCodeTTL + time.Second)
		wantOAuthError(t, e.exchange(client, q.Get("code"), redirect, verifier, 400), "invalid_grant")
	})
	t.Run("redirect_uri mismatch", func(t *testing.T) {
		// At the authorize endpoint: a page, never a redirect to the
		// unregistered URI.
		e.authorize(client, "http://127.0.0.1:33333/elsewhere", "alice-token", res, http.StatusBadRequest)
		e.authorize(client, "https://evil.example/callback", "alice-token", res, http.StatusBadRequest)
		// At the token endpoint.
		q := e.authorize(client, redirect, "alice-token", res, http.StatusSeeOther)
		wantOAuthError(t, e.exchange(client, q.Get("code"), "http://127.0.0.1:33333/other", verifier, 400), "invalid_grant")
	})
	t.Run("wrong resource", func(t *testing.T) {
		q := e.authorize(client, redirect, "alice-token", "https://evil.example/mcp", http.StatusSeeOther)
		if q.Get("error") != "invalid_target" || q.Get("code") != "" {
			t.Fatalf("redirect %v", q)
		}
		q = e.authorize(client, redirect, "alice-token", e.url+"/v1/conversations", http.StatusSeeOther)
		if q.Get("error") != "invalid_target" {
			t.Fatalf("redirect %v", q)
		}
		q = e.authorize(client, redirect, "alice-token", res, http.StatusSeeOther)
		m := e.postForm(PathToken, url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {q.Get("code")},
			"code_verifier": {verifier}, "resource": {e.url + "/agents/other/mcp"}}, 400)
		wantOAuthError(t, m, "invalid_target")
	})
	t.Run("another principal's agent", func(t *testing.T) {
		e.authorize(client, redirect, "bob-token", e.url+"/agents/other/mcp", http.StatusForbidden)
	})
	t.Run("another client's code", func(t *testing.T) {
		other := e.register(redirect)
		q := e.authorize(client, redirect, "alice-token", res, http.StatusSeeOther)
		wantOAuthError(t, e.exchange(other, q.Get("code"), redirect, verifier, 400), "invalid_grant")
	})
	t.Run("plain PKCE and none", func(t *testing.T) {
		for _, method := range []string{"plain", ""} {
			v := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "code_challenge": {challenge(verifier)},
				"code_challenge_method": {method}, "resource": {res}, "token": {"alice-token"}, "decision": {"allow"}}
			r, err := noRedirect.PostForm(e.url+PathAuthorize, v)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			loc, _ := url.Parse(r.Header.Get("Location"))
			if r.StatusCode != 303 || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("code") != "" {
				t.Fatalf("method %q: %d %v", method, r.StatusCode, loc)
			}
		}
	})
	t.Run("denied", func(t *testing.T) {
		v := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "code_challenge": {challenge(verifier)},
			"code_challenge_method": {"S256"}, "resource": {res}, "token": {"alice-token"}, "decision": {"deny"}}
		r, err := noRedirect.PostForm(e.url+PathAuthorize, v)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		loc, _ := url.Parse(r.Header.Get("Location"))
		if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
			t.Fatalf("deny: %v", loc)
		}
	})
	t.Run("unknown client", func(t *testing.T) {
		e.authorize("no-such-client", redirect, "alice-token", res, http.StatusBadRequest)
		wantOAuthError(t, e.exchange("no-such-client", CodePrefix+"x", redirect, verifier, 401), "invalid_client")
	})
	t.Run("static token is no access token", func(t *testing.T) {
		if st, _ := e.call("/mcp", "alice-token"); st != 401 {
			t.Fatalf("%d", st)
		}
	})
	t.Run("bad registrations", func(t *testing.T) {
		for _, body := range []string{`{}`, `{"redirect_uris":["http://evil.example/cb"]}`, `{"redirect_uris":["javascript:alert(1)"]}`,
			`{"redirect_uris":["https://a.example/cb#frag"]}`, `{"redirect_uris":["/relative"]}`, `not json`, `{"redirect_uris":["https://a.example/cb"],"grant_types":["password"]}`} {
			r, err := noRedirect.Post(e.url+PathRegister, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			m := e.decode(r, 400)
			if m["error"] != "invalid_redirect_uri" && m["error"] != "invalid_client_metadata" {
				t.Fatalf("%s: %v", body, m)
			}
		}
	})
	t.Run("bad token requests", func(t *testing.T) {
		wantOAuthError(t, e.postForm(PathToken, url.Values{"grant_type": {"password"}, "client_id": {client}}, 400), "unsupported_grant_type")
		wantOAuthError(t, e.postForm(PathToken, url.Values{"grant_type": {"authorization_code"}, "client_id": {client}, "code": {"x"}}, 400), "invalid_request")
		wantOAuthError(t, e.postForm(PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "code_verifier": {verifier}}, 401), "invalid_client")
	})
}
