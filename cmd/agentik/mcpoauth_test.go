package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var noFollow = &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func getJSONDoc(t *testing.T, u string) map[string]any {
	t.Helper()
	res, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u, res.StatusCode, err)
	}
	return m
}

func postFormJSON(t *testing.T, u string, v url.Values, want int) map[string]any {
	t.Helper()
	res, err := noFollow.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("POST %s: %d, want %d: %s", u, res.StatusCode, want, b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

var resourceMetadataRE = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// oauthSignIn runs the MCP authorization flow against endpoint as an MCP
// client does, from the 401's challenge to the token response, signing
// in on the authorize page with token, and returns the token response.
func oauthSignIn(t *testing.T, endpoint, token string) map[string]any {
	t.Helper()
	res, err := http.Post(endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	m := resourceMetadataRE.FindStringSubmatch(res.Header.Get("WWW-Authenticate"))
	if res.StatusCode != 401 || m == nil {
		t.Fatalf("401 challenge: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	prm := getJSONDoc(t, m[1])
	if prm["resource"] != endpoint {
		t.Fatalf("resource metadata %v, want resource %s", prm, endpoint)
	}
	issuer := prm["authorization_servers"].([]any)[0].(string)
	asm := getJSONDoc(t, issuer+"/.well-known/oauth-authorization-server")
	reg, err := http.Post(asm["registration_endpoint"].(string), "application/json",
		strings.NewReader(`{"client_name":"e2e","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		t.Fatal(err)
	}
	var client map[string]any
	json.NewDecoder(reg.Body).Decode(&client)
	reg.Body.Close()
	verifier := strings.Repeat("v", 50)
	sum := sha256.Sum256([]byte(verifier))
	form := url.Values{"response_type": {"code"}, "client_id": {client["client_id"].(string)}, "redirect_uri": {"http://127.0.0.1:9/cb"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {endpoint},
		"state": {"st"}, "token": {token}, "decision": {"allow"}}
	auth, err := noFollow.PostForm(asm["authorization_endpoint"].(string), form)
	if err != nil {
		t.Fatal(err)
	}
	auth.Body.Close()
	loc, _ := url.Parse(auth.Header.Get("Location"))
	code := loc.Query().Get("code")
	if auth.StatusCode != http.StatusSeeOther || code == "" {
		t.Fatalf("authorize: %d %s", auth.StatusCode, loc)
	}
	return postFormJSON(t, asm["token_endpoint"].(string), url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"client_id": {client["client_id"].(string)}, "redirect_uri": {"http://127.0.0.1:9/cb"}, "code_verifier": {verifier}, "resource": {endpoint}}, 200)
}

// TestMCPOAuth: the real server, tokens configured: an MCP client with no
// token discovers the authorization server from the 401, signs its person
// in with their Agentik token, and uses the MCP endpoint with the access
// token it gets, acting for that person only; static tokens keep working;
// the token is refused at the native API (it is bound to the MCP endpoint;
// oauth's TestFlow checks another resource) and after revocation.
func TestMCPOAuth(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken+",bob:"+bobToken)
	endpoint := p.url + "/mcp"

	alice := oauthSignIn(t, endpoint, aliceToken)
	access := alice["access_token"].(string)
	llm.Enqueue(llmtest.Stream().Role().Content("Hello Alice.").Finish("stop").Done())
	cs, err := mcpConnect(t, endpoint, access, "2026-07-28", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, out := askTool(t, cs, map[string]any{"message": "Hi"}, nil)
	if res.IsError || out["answer"] != "Hello Alice." {
		t.Fatalf("ask with the access token: %q %v", toolText(res), out)
	}
	conv := out["conversation_id"].(string)
	// The static token still works, and sees the same person's conversation.
	static, err := mcpConnect(t, endpoint, aliceToken, "2025-11-25", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := static.CallTool(mcpCtx(t), readConv(conv)); err != nil || r.IsError {
		t.Fatalf("alice's static token reads her conversation: %v %+v", err, r)
	}
	// Bob's access token acts for bob: alice's conversation is not his.
	bob := oauthSignIn(t, endpoint, bobToken)
	bcs, err := mcpConnect(t, endpoint, bob["access_token"].(string), "2026-07-28", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := bcs.CallTool(mcpCtx(t), readConv(conv)); err != nil || !r.IsError || !strings.Contains(toolText(r), "not found") {
		t.Fatalf("bob reads alice's conversation: %v %+v", err, r)
	}
	// Bound to /mcp: refused at the native API.
	req, _ := http.NewRequest("GET", p.url+"/agentik/conversations", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 401 {
		t.Fatalf("access token at the native API: %v %v", err, r.StatusCode)
	} else {
		r.Body.Close()
	}
	// Revoked: refused at once.
	postFormJSON(t, p.url+"/oauth/revoke", url.Values{"token": {alice["refresh_token"].(string)}}, 200)
	if _, err := mcpConnect(t, endpoint, access, "2026-07-28", nil); err == nil {
		t.Fatal("a revoked access token still connects")
	}
}

func readConv(id string) *sdk.CallToolParams {
	return &sdk.CallToolParams{Name: "read_conversation", Arguments: map[string]any{"conversation_id": id}}
}

// mcpOAuthClients holds the real MCP clients' OAuth tests (mcp-remote, the
// MCP Inspector, playwright-core; pinned by package-lock.json).
var mcpOAuthClients = filepath.Join("testdata", "mcpoauth")

// oauthClientRun is what a script of mcpOAuthClients needs: Debian's
// Chromium, the pinned packages, a server with alice's token and a scripted
// model, and a free port for the client's callback listener.
type oauthClientRun struct {
	dir, chromium, port string
	llm                 *llmtest.Server
	p                   *proc
}

func newOAuthClientRun(t *testing.T) *oauthClientRun {
	t.Helper()
	r := &oauthClientRun{chromium: "/usr/bin/chromium"}
	if _, err := os.Stat(r.chromium); err != nil {
		testenv.Missing(t, "Debian's chromium is needed for the MCP OAuth browser tests (apt-get install chromium)")
	}
	dir, err := filepath.Abs(mcpOAuthClients)
	if err != nil {
		t.Fatal(err)
	}
	r.dir = dir
	testenv.NPM(t, dir)
	r.llm = llmtest.NewServer()
	t.Cleanup(r.llm.Close)
	r.p = startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+r.llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the client's callback
	if err != nil {
		t.Fatal(err)
	}
	r.port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	return r
}

// run runs script with node and decodes the JSON line it prints into out.
func (r *oauthClientRun) run(t *testing.T, script string, out any, env ...string) {
	t.Helper()
	// A bound for a hung client only: each step inside waits on what it
	// needs (the printed URL, the page, the callback, the process's end).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = r.dir
	cmd.Env = append(append(os.Environ(), "MCP_URL="+r.p.url+"/mcp", "AGENTIK_TOKEN="+aliceToken, "CALLBACK_PORT="+r.port,
		"CHROMIUM="+r.chromium), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s\nserver log:\n%s", script, err, b, stderr.String(), r.p.log())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %s: %v", script, b, err)
	}
}

// checkAuthorizeURL checks the authorize request a client made: PKCE with
// S256, for the MCP endpoint, back to the client's callback port.
func (r *oauthClientRun) checkAuthorizeURL(t *testing.T, raw string, consentShown bool) {
	t.Helper()
	u, _ := url.Parse(raw)
	q := u.Query()
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	if u.Path != "/oauth/authorize" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("resource") != r.p.url+"/mcp" ||
		redirect == nil || redirect.Port() != r.port || !consentShown {
		t.Fatalf("authorize request %s, consent page shown %v", raw, consentShown)
	}
}

// TestMCPOAuthRealClients: mcp-remote, the stdio proxy that Claude Desktop
// and IDEs run for remote servers, signs in to the real server through
// its OAuth flow — discovery from the 401, registration, the authorize
// page driven in Debian's headless Chromium with the person's Agentik
// token — and then lists and calls the agent's tools.
func TestMCPOAuthRealClients(t *testing.T) {
	r := newOAuthClientRun(t)
	var got struct {
		AuthorizeURL      string   `json:"authorizeURL"`
		ConsentNamesAgent bool     `json:"consentNamesAgent"`
		Server            string   `json:"server"`
		Tools             []string `json:"tools"`
		ListError         any      `json:"listError"`
	}
	r.run(t, "mcpremote.e2e.mjs", &got, "MCP_REMOTE_CONFIG_DIR="+t.TempDir())
	r.checkAuthorizeURL(t, got.AuthorizeURL, got.ConsentNamesAgent)
	if strings.Join(got.Tools, ",") != "ask,list_conversations,read_conversation" || got.ListError != nil {
		t.Fatalf("through mcp-remote: %+v", got)
	}
}

// TestMCPOAuthInspector: the MCP Inspector's CLI (pinned 2.12.0) signs in
// to the real server without a TTY (MCP_AUTO_OPEN_ENABLED=true; it prints
// the authorize URL and waits on its callback listener): discovery from
// the 401, dynamic registration, the authorize page driven in Debian's
// headless Chromium with alice's token, the code exchanged for a token,
// then a tools/call of ask, answered for alice. A second run with
// --stored-auth-only lists the tools with the token the first one stored.
func TestMCPOAuthInspector(t *testing.T) {
	r := newOAuthClientRun(t)
	r.llm.Enqueue(llmtest.Stream().Role().Content("Hello ", "Alice.").Finish("stop").Done())
	var got struct {
		AuthorizeURL          string   `json:"authorizeURL"`
		ConsentNamesAgent     bool     `json:"consentNamesAgent"`
		CallbackReached       bool     `json:"callbackReached"`
		AuthorizationComplete bool     `json:"authorizationComplete"`
		Tools                 []string `json:"tools"`
		Result                struct {
			Result struct {
				IsError           bool `json:"isError"`
				StructuredContent struct {
					Answer         string `json:"answer"`
					ConversationID string `json:"conversation_id"`
				} `json:"structuredContent"`
			} `json:"result"`
		} `json:"result"`
	}
	r.run(t, "inspector.e2e.mjs", &got, "HOME="+t.TempDir())
	r.checkAuthorizeURL(t, got.AuthorizeURL, got.ConsentNamesAgent)
	ask := got.Result.Result
	if !got.CallbackReached || !got.AuthorizationComplete || ask.IsError || ask.StructuredContent.Answer != "Hello Alice." {
		t.Fatalf("through the Inspector: %+v", got)
	}
	if strings.Join(got.Tools, ",") != "ask,list_conversations,read_conversation" {
		t.Fatalf("tools/list with the stored token: %v", got.Tools)
	}
	// The conversation the access token made is alice's.
	req, _ := http.NewRequest("GET", r.p.url+"/agentik/conversations/"+ask.StructuredContent.ConversationID+"/messages", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("alice reads the conversation the Inspector made: %d", res.StatusCode)
	}
}
