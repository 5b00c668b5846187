package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// TokenRequest is a token endpoint request (RFC 6749 §4.1.3, §6).
type TokenRequest struct {
	GrantType    string
	Code         string
	RedirectURI  string
	ClientID     string
	CodeVerifier string
	RefreshToken string
	Resource     string
}

// ParseTokenRequest reads a token request from its form values and, for a
// client that sends its id by HTTP Basic authentication, the header's
// user name (a public client has no secret to check).
func ParseTokenRequest(v url.Values, basicUser string) (TokenRequest, *oauthError) {
	for _, k := range []string{"grant_type", "code", "redirect_uri", "client_id", "code_verifier", "refresh_token", "resource"} {
		if len(v[k]) > 1 {
			return TokenRequest{}, &oauthError{"invalid_request", k + " is given more than once"}
		}
	}
	t := TokenRequest{GrantType: v.Get("grant_type"), Code: v.Get("code"), RedirectURI: v.Get("redirect_uri"),
		ClientID: v.Get("client_id"), CodeVerifier: v.Get("code_verifier"), RefreshToken: v.Get("refresh_token"), Resource: v.Get("resource")}
	if basicUser != "" {
		if t.ClientID != "" && t.ClientID != basicUser {
			return t, &oauthError{"invalid_client", "client_id and the Basic authorization name different clients"}
		}
		t.ClientID = basicUser
	}
	switch {
	case t.GrantType == "":
		return t, &oauthError{"invalid_request", "grant_type is missing"}
	case t.GrantType != "authorization_code" && t.GrantType != "refresh_token":
		return t, &oauthError{"unsupported_grant_type", "grant_type must be authorization_code or refresh_token"}
	case t.ClientID == "":
		return t, &oauthError{"invalid_client", "client_id is missing"}
	case t.GrantType == "authorization_code" && t.Code == "":
		return t, &oauthError{"invalid_request", "code is missing"}
	case t.GrantType == "authorization_code" && t.CodeVerifier == "":
		return t, &oauthError{"invalid_request", "code_verifier is missing (PKCE)"}
	case t.GrantType == "refresh_token" && t.RefreshToken == "":
		return t, &oauthError{"invalid_request", "refresh_token is missing"}
	}
	return t, nil
}

// tokenResponse is a successful token response (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// token handles POST /oauth/token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/x-www-form-urlencoded") {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the form could not be read")
		return
	}
	user, _, _ := r.BasicAuth()
	req, oerr := ParseTokenRequest(r.PostForm, user)
	if oerr != nil {
		status := http.StatusBadRequest
		if oerr.Code == "invalid_client" {
			status = http.StatusUnauthorized
		}
		writeError(w, status, oerr.Code, oerr.Description)
		return
	}
	if _, err := s.opts.Store.Client(r.Context(), req.ClientID); err != nil {
		if !errors.Is(err, ErrNotFound) {
			s.opts.Logger.Error("oauth: read a client", "err", err)
			writeError(w, http.StatusInternalServerError, "server_error", "the client could not be read")
			return
		}
		writeError(w, http.StatusUnauthorized, "invalid_client", "unknown client_id")
		return
	}
	var g Grant
	if req.GrantType == "authorization_code" {
		g, oerr = s.redeemCode(r, req)
	} else {
		g, oerr = s.rotateRefresh(r, req)
	}
	if oerr != nil {
		writeError(w, http.StatusBadRequest, oerr.Code, oerr.Description)
		return
	}
	resp, err := s.issue(r, g)
	if err != nil {
		s.opts.Logger.Error("oauth: issue tokens", "err", err)
		writeError(w, http.StatusInternalServerError, "server_error", "the tokens could not be stored")
		return
	}
	s.cleanup(r.Context())
	writeJSON(w, http.StatusOK, resp)
}

// use marks the grant of secret and kind used; a reused one revokes its
// family (every token issued from the same code).
func (s *Server) use(r *http.Request, secret, kind, what string) (Grant, *oauthError) {
	g, err := s.opts.Store.UseGrant(r.Context(), Hash(secret), kind)
	switch {
	case errors.Is(err, ErrUsed):
		if rerr := s.opts.Store.RevokeFamily(r.Context(), g.Family); rerr != nil {
			s.opts.Logger.Error("oauth: revoke a reused grant's family", "err", rerr)
		}
		s.opts.Logger.Warn("oauth: a "+what+" was used twice; every token of its grant is revoked", "client_id", g.ClientID, "principal", g.Principal)
		return g, &oauthError{"invalid_grant", "the " + what + " was already used; the grant is revoked"}
	case errors.Is(err, ErrNotFound):
		return g, &oauthError{"invalid_grant", "unknown, expired or revoked " + what}
	case err != nil:
		s.opts.Logger.Error("oauth: use a grant", "err", err)
		return g, &oauthError{"server_error", "the grant could not be read"}
	}
	if !s.opts.Now().Before(g.ExpiresAt) {
		return g, &oauthError{"invalid_grant", "the " + what + " has expired"}
	}
	return g, nil
}

// redeemCode checks an authorization_code request against its code.
func (s *Server) redeemCode(r *http.Request, req TokenRequest) (Grant, *oauthError) {
	g, oerr := s.use(r, req.Code, KindCode, "authorization code")
	if oerr != nil {
		return g, oerr
	}
	switch {
	case g.ClientID != req.ClientID:
		return g, &oauthError{"invalid_grant", "the code was issued to another client"}
	case req.RedirectURI != "" && req.RedirectURI != g.RedirectURI:
		return g, &oauthError{"invalid_grant", "redirect_uri differs from the authorization request's"}
	case req.Resource != "" && req.Resource != g.Resource:
		return g, &oauthError{"invalid_target", "resource differs from the authorization request's"}
	case !verifierRE.MatchString(req.CodeVerifier):
		return g, &oauthError{"invalid_grant", "code_verifier is not a PKCE verifier (43 to 128 unreserved characters)"}
	}
	sum := sha256.Sum256([]byte(req.CodeVerifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.Challenge)) != 1 {
		return g, &oauthError{"invalid_grant", "code_verifier does not match the code challenge"}
	}
	return g, nil
}

// rotateRefresh checks a refresh_token request; the refresh token is
// used up (rotation): the response carries its successor.
func (s *Server) rotateRefresh(r *http.Request, req TokenRequest) (Grant, *oauthError) {
	g, oerr := s.use(r, req.RefreshToken, KindRefresh, "refresh token")
	if oerr != nil {
		return g, oerr
	}
	switch {
	case g.ClientID != req.ClientID:
		return g, &oauthError{"invalid_grant", "the refresh token was issued to another client"}
	case req.Resource != "" && req.Resource != g.Resource:
		return g, &oauthError{"invalid_target", "resource differs from the grant's"}
	case !s.opts.Allows(g.Principal, s.agentOf(g.Resource)):
		return g, &oauthError{"invalid_grant", "the principal may no longer use this agent"}
	}
	return g, nil
}

func (s *Server) agentOf(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	a, _ := s.opts.Resource(u.Path)
	return a
}

// issue stores a new access token and refresh token of g's family.
func (s *Server) issue(r *http.Request, g Grant) (tokenResponse, error) {
	now := s.opts.Now()
	access, refresh := newSecret(AccessPrefix), newSecret(RefreshPrefix)
	base := Grant{Family: g.Family, ClientID: g.ClientID, Principal: g.Principal, Resource: g.Resource, Scope: g.Scope}
	a := base
	a.Hash, a.Kind, a.ExpiresAt = Hash(access), KindAccess, now.Add(s.opts.AccessTTL)
	if err := s.opts.Store.PutGrant(r.Context(), a); err != nil {
		return tokenResponse{}, err
	}
	rt := base
	rt.Hash, rt.Kind, rt.ExpiresAt = Hash(refresh), KindRefresh, now.Add(s.opts.RefreshTTL)
	if err := s.opts.Store.PutGrant(r.Context(), rt); err != nil {
		return tokenResponse{}, err
	}
	return tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(s.opts.AccessTTL.Seconds()), RefreshToken: refresh, Scope: g.Scope}, nil
}

// revoke handles POST /oauth/revoke (RFC 7009): the token's whole grant is
// revoked. The answer is 200 whether or not the token was known.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "token is missing")
		return
	}
	clientID := r.PostForm.Get("client_id")
	if user, _, ok := r.BasicAuth(); ok {
		clientID = user
	}
	g, err := s.opts.Store.Grant(r.Context(), Hash(r.PostForm.Get("token")))
	if err == nil && g.Kind != KindCode && (clientID == "" || clientID == g.ClientID) {
		if err := s.opts.Store.RevokeFamily(r.Context(), g.Family); err != nil {
			s.opts.Logger.Error("oauth: revoke", "err", err)
			writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the token could not be revoked; try again")
			return
		}
		s.opts.Logger.Info("oauth: revoked", "client_id", g.ClientID, "principal", g.Principal)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
