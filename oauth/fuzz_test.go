package oauth

import (
	"encoding/json"
	"net/url"
	"testing"
)

// FuzzDecodeRegistration: any body is either refused with an RFC 7591 code
// or gives a registration whose every redirect URI passes the checks.
func FuzzDecodeRegistration(f *testing.F) {
	for _, s := range []string{`{"redirect_uris":["http://127.0.0.1:1234/cb"],"client_name":"x"}`, `{}`, `{"redirect_uris":["cursor://cb"]}`,
		`{"redirect_uris":["javascript:x"]}`, `[]`, `{"redirect_uris":null}`, `{"redirect_uris":["https://a/b"]} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reg, err := DecodeRegistration(body)
		if err != nil {
			if err.Code != "invalid_client_metadata" && err.Code != "invalid_redirect_uri" {
				t.Fatalf("code %q", err.Code)
			}
			if _, merr := json.Marshal(err); merr != nil {
				t.Fatal(merr)
			}
			return
		}
		if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > maxRedirectURIs {
			t.Fatalf("accepted %d redirect URIs", len(reg.RedirectURIs))
		}
		for _, u := range reg.RedirectURIs {
			if checkRedirectURI(u) != "" {
				t.Fatalf("accepted %q", u)
			}
			if !redirectMatches(reg.RedirectURIs, u) {
				t.Fatalf("%q does not match itself", u)
			}
		}
	})
}

// FuzzParseTokenRequest: any form either is refused with a token endpoint
// error code or names a supported grant with what it needs.
func FuzzParseTokenRequest(f *testing.F) {
	for _, s := range []string{"grant_type=authorization_code&code=c&client_id=x&code_verifier=v", "grant_type=refresh_token&refresh_token=r&client_id=x",
		"grant_type=password", "client_id=a&client_id=b&grant_type=refresh_token", "%zz"} {
		f.Add(s, "")
	}
	f.Add("grant_type=refresh_token&refresh_token=r", "basic-client")
	f.Fuzz(func(t *testing.T, form, basic string) {
		v, err := url.ParseQuery(form)
		if err != nil {
			return
		}
		req, oerr := ParseTokenRequest(v, basic)
		if oerr != nil {
			switch oerr.Code {
			case "invalid_request", "invalid_client", "unsupported_grant_type":
			default:
				t.Fatalf("code %q", oerr.Code)
			}
			return
		}
		if req.ClientID == "" || (req.GrantType == "authorization_code" && (req.Code == "" || req.CodeVerifier == "")) ||
			(req.GrantType == "refresh_token" && req.RefreshToken == "") {
			t.Fatalf("accepted %+v", req)
		}
	})
}
