package edge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"go.opentelemetry.io/otel/trace"
)

// fakeTokens: alice may use every agent, bob only "support".
type fakeTokens struct{}

func (fakeTokens) Lookup(token string) (string, bool) {
	switch token {
	case "alice-token-1":
		return "alice", true
	case "bob-token-22":
		return "bob", true
	}
	return "", false
}

func (fakeTokens) Allows(principal, agent string) bool {
	return principal != "bob" || agent == "support"
}

func (fakeTokens) Watch(string, string, string, func()) func() bool {
	return func() bool { return true }
}

// echoPrincipal answers the principal in the context and the body it read.
func echoPrincipal(w http.ResponseWriter, r *http.Request) {
	b, err := ReadJSON(w, r, 1<<10)
	if err != nil {
		WriteError(w, r, nil, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"principal": agentik.PrincipalFrom(r.Context()), "body": string(b)})
}

func newServer(t *testing.T, opts Options) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Tokens == nil {
		opts.Tokens = fakeTokens{}
	}
	e := New(opts)
	mux := http.NewServeMux()
	h := http.HandlerFunc(echoPrincipal)
	mux.Handle("POST /private", e.Guard(h, Route{}))
	mux.Handle("GET /private", e.Guard(h, Route{}))
	mux.Handle("GET /stream", e.Guard(h, Route{Access: Stream}))
	mux.Handle("POST /stream", e.Guard(h, Route{Access: Stream}))
	mux.Handle("GET /public", e.Guard(h, Route{Access: Unauthenticated}))
	mux.Handle("GET /agents/support", e.Guard(h, Route{Agent: "support"}))
	mux.Handle("GET /agents/coder", e.Guard(h, Route{Agent: "coder"}))
	mux.Handle("POST /rpc", e.Guard(h, Route{Refuse: func(w http.ResponseWriter, r *http.Request, err error) {
		PrepareError(w, r, err)
		WriteJSON(w, Status(agentik.ErrorCode(err)), map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": RPCCode(agentik.ErrorCode(err))}})
	}}))
	srv := httptest.NewServer(e.Handler(mux))
	t.Cleanup(srv.Close)
	return srv, &logs
}

func do(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func errCode(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return v.Error.Code
}

func TestGuard(t *testing.T) {
	srv, logs := newServer(t, Options{})
	const alice, bob = "Bearer alice-token-1", "Bearer bob-token-22"
	cases := []struct {
		name, method, path, body, auth string
		status                         int
		principal                      string // on 200
		code                           string // on refusal
	}{
		{"header", "GET", "/private", "", alice, 200, "alice", ""},
		{"lower-case scheme", "GET", "/private", "", "bearer alice-token-1", 200, "alice", ""},
		{"no token", "GET", "/private", "", "", 401, "", agentik.EUnauthorized},
		{"unknown token", "GET", "/private", "", "Bearer nobody-token", 401, "", agentik.EUnauthorized},
		{"basic scheme", "GET", "/private", "", "Basic alice-token-1", 401, "", agentik.EUnauthorized},
		{"query token on a private route", "GET", "/private?access_token=alice-token-1", "", "", 401, "", agentik.EUnauthorized},
		{"query token on a stream", "GET", "/stream?access_token=alice-token-1", "", "", 200, "alice", ""},
		{"query token on a stream POST", "POST", "/stream?access_token=alice-token-1", `{}`, "", 401, "", agentik.EUnauthorized},
		{"header wins on a stream", "GET", "/stream?access_token=alice-token-1", "", bob, 200, "bob", ""},
		{"public", "GET", "/public", "", "", 200, "", ""},
		{"body after auth", "POST", "/private", `{"a":1}`, alice, 200, "alice", ""},
		{"agent allowed", "GET", "/agents/support", "", bob, 200, "bob", ""},
		{"agent not allowed is 404", "GET", "/agents/coder", "", bob, 404, "", agentik.ENotFound},
		{"agent of an unlimited principal", "GET", "/agents/coder", "", alice, 200, "alice", ""},
		{"no token on an agent is 401", "GET", "/agents/coder", "", "", 401, "", agentik.EUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			status, h, body := do(t, tc.method, srv.URL+tc.path, tc.body, hdr...)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if status == 200 {
				var v map[string]string
				json.Unmarshal([]byte(body), &v)
				if v["principal"] != tc.principal {
					t.Fatalf("principal %q, want %q", v["principal"], tc.principal)
				}
				return
			}
			if got := errCode(t, body); got != tc.code {
				t.Fatalf("code %q, want %q", got, tc.code)
			}
			if (status == 401) != strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate %q on %d", h.Get("WWW-Authenticate"), status)
			}
		})
	}
	if strings.Contains(logs.String(), "alice-token-1") || strings.Contains(logs.String(), "access_token") {
		t.Fatalf("the log shows a token or the query:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "principal=bob") {
		t.Fatalf("the access log does not name the principal:\n%s", logs)
	}
}

// TestGuardAPIKeyHeader: the token may come as X-Api-Key (what the
// LangGraph SDKs send for an apiKey), with the same checks as a bearer
// token; an Authorization header wins.
func TestGuardAPIKeyHeader(t *testing.T) {
	srv, _ := newServer(t, Options{})
	for _, tc := range []struct {
		name, path string
		hdr        []string
		status     int
		principal  string
	}{
		{"key", "/private", []string{"X-Api-Key", "alice-token-1"}, 200, "alice"},
		{"unknown key", "/private", []string{"X-Api-Key", "nobody-token"}, 401, ""},
		{"key of a principal the agent refuses", "/agents/coder", []string{"X-Api-Key", "bob-token-22"}, 404, ""},
		{"bearer wins", "/private", []string{"X-Api-Key", "alice-token-1", "Authorization", "Bearer bob-token-22"}, 200, "bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := do(t, "GET", srv.URL+tc.path, "", tc.hdr...)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			var v map[string]string
			json.Unmarshal([]byte(body), &v)
			if status == 200 && v["principal"] != tc.principal {
				t.Fatalf("principal %q, want %q", v["principal"], tc.principal)
			}
		})
	}
}

func TestRefuseInTheRoutesFormat(t *testing.T) {
	srv, _ := newServer(t, Options{})
	status, h, body := do(t, "POST", srv.URL+"/rpc", `{}`)
	if status != 401 || !strings.Contains(body, `"code":-31401`) || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("%d %v %s", status, h, body)
	}
}

func TestOpenEdge(t *testing.T) {
	e := New(Options{})
	srv := httptest.NewServer(e.Handler(e.Guard(http.HandlerFunc(echoPrincipal), Route{Agent: "coder"})))
	defer srv.Close()
	if status, _, body := do(t, "GET", srv.URL, ""); status != 200 || !strings.Contains(body, `"principal":""`) {
		t.Fatalf("%d %s", status, body)
	}
	if !e.Open() || !e.Allows("anyone", "coder") {
		t.Fatal("an open edge refuses")
	}
}

// rawRequest writes head (and then body, if any) on a fresh connection and
// returns the connection, without closing its write side: the client keeps
// the rest of its body to itself, as a slow client does.
func rawRequest(t *testing.T, srv *httptest.Server, head, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// TestUnauthenticatedSlowBodyRefusedAtOnce: the refusal does not wait for a
// body the client is still sending (issue 24.3). Without Connection: close
// the server reads the unread body to its end before answering, so the 401
// would wait for the client; the read deadline below is a bound, not a
// synchronisation.
func TestUnauthenticatedSlowBodyRefusedAtOnce(t *testing.T) {
	srv, _ := newServer(t, Options{BodyTimeout: time.Minute})
	for _, te := range []string{"Content-Length: 1000\r\n", "Transfer-Encoding: chunked\r\n"} {
		head := "POST /private HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + te + "\r\n"
		start := time.Now()
		c, br := rawRequest(t, srv, head, "")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer while the body is pending: %v", te, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !resp.Close {
			t.Fatalf("%s: %d %v", te, resp.StatusCode, resp.Header)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: the refusal took %s", te, d)
		}
	}
}

// TestAuthenticatedSlowBodyCutOff: a body that does not arrive within the
// body timeout is cut off with 408 and the connection is closed; a reader
// of its own behind Guard (a protocol library's) is cut off too.
func TestAuthenticatedSlowBodyCutOff(t *testing.T) {
	e := New(Options{Tokens: fakeTokens{}, BodyTimeout: 300 * time.Millisecond})
	plain := httptest.NewServer(e.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusRequestTimeout)
		}
	}), Route{}))
	defer plain.Close()
	head := "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token-1\r\nContent-Length: 100\r\n\r\n"
	c, br := rawRequest(t, plain, head, `{"a":`)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("own reader: %v %v", resp, err)
	}

	srv, _ := newServer(t, Options{BodyTimeout: 300 * time.Millisecond})
	head = "POST /private HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
	start := time.Now()
	c, br = rawRequest(t, srv, head, `{"a":`)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || errCode(t, string(b)) != CodeRequestTimeout {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Fatalf("cut off after %s, want about the body timeout", d)
	}
	// The connection is closed: nothing more is read from it.
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open after the cut-off: %v", err)
	}
}

// TestBodyDeadlineLiftedAfterTheBody: the body timeout bounds the body
// only: a response that lasts longer (an event stream), with or without a
// body before it, and the next request on the same connection all work.
func TestBodyDeadlineLiftedAfterTheBody(t *testing.T) {
	e := New(Options{Tokens: fakeTokens{}, BodyTimeout: 100 * time.Millisecond})
	release := make(chan struct{})
	h := e.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("plain") != "" {
			// A protocol library's own reader, not ReadBody.
			if _, err := io.ReadAll(r.Body); err != nil {
				w.WriteHeader(http.StatusRequestTimeout)
				return
			}
		} else if _, err := ReadJSON(w, r, 1<<10); err != nil {
			WriteError(w, r, nil, err)
			return
		}
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release: // the client saw the 200 and waited past the timeout
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "done")
	}), Route{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	reqs := []string{
		"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token-1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token-1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"POST /?plain=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer alice-token-1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	}
	c, br := rawRequest(t, srv, reqs[0], "")
	for i := range reqs {
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		// Past the body timeout, measured by a timer of the test, not
		// waited on as a condition.
		<-time.After(300 * time.Millisecond)
		select {
		case release <- struct{}{}:
		case <-time.After(5 * time.Second):
			t.Fatalf("request %d: the handler gave up on its stream", i)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != "done" {
			t.Fatalf("request %d: the stream ended early: %q %v", i, b, err)
		}
		if i+1 < len(reqs) {
			io.WriteString(c, reqs[i+1])
		}
	}
}

func TestReadBody(t *testing.T) {
	srv, _ := newServer(t, Options{})
	const alice = "Bearer alice-token-1"
	big := `{"a":"` + strings.Repeat("x", 2000) + `"}`
	for _, tc := range []struct {
		ctype, body string
		status      int
		code        string
	}{
		{"application/json", `{"a":1}`, 200, ""},
		{"application/merge-patch+json", `{"a":1}`, 200, ""},
		{"text/plain", `{"a":1}`, 415, agentik.EUnsupportedMed},
		{"", `{"a":1}`, 415, agentik.EUnsupportedMed},
		{"application/json", big, 413, agentik.ETooLarge},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/private", strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		req.Header.Set("Authorization", alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.code != "" && errCode(t, string(b)) != tc.code) {
			t.Errorf("%s %d bytes: %d %s", tc.ctype, len(tc.body), resp.StatusCode, b)
		}
	}
	// A body larger than the limit without a Content-Length (chunked).
	req, _ := http.NewRequest("POST", srv.URL+"/private", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked too large: %d", resp.StatusCode)
	}
}

func TestCORS(t *testing.T) {
	srv, _ := newServer(t, Options{CORSOrigins: []string{"https://app.example.com"}})
	pre := func(origin string) (int, http.Header) {
		status, h, _ := do(t, "OPTIONS", srv.URL+"/private", "", "Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
		return status, h
	}
	status, h := pre("https://app.example.com")
	if status != 204 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("allowed preflight: %d %v", status, h)
	}
	// Another origin gets no CORS answer: the browser refuses the call.
	for _, origin := range []string{"https://evil.example.com", "https://app.example.com.evil.com", "http://app.example.com"} {
		if status, h := pre(origin); status == 204 || h.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s preflight: %d %v", origin, status, h)
		}
	}
	// The actual request carries the CORS headers, refusals included.
	status, h, _ = do(t, "POST", srv.URL+"/private", `{}`, "Origin", "https://app.example.com", "Authorization", "Bearer alice-token-1")
	if status != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(h.Get("Vary"), "Origin") {
		t.Fatalf("request: %d %v", status, h)
	}
	status, h, _ = do(t, "POST", srv.URL+"/private", `{}`, "Origin", "https://app.example.com")
	if status != 401 || h.Get("Access-Control-Allow-Origin") == "" || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
		t.Fatalf("refusal: %d %v", status, h)
	}

	// Without configured origins nothing is answered cross-origin.
	plain, _ := newServer(t, Options{})
	status, h, _ = do(t, "OPTIONS", plain.URL+"/private", "", "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST")
	if status == 204 || h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("no origins configured: %d %v", status, h)
	}
}

func TestErrorMappings(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
		rpc    int
	}{
		{agentik.EMalformed, 400, RPCInvalidParams},
		{agentik.EInvalid, 422, RPCInvalidParams},
		{agentik.EUnauthorized, 401, RPCUnauthenticated},
		{agentik.ENotFound, 404, RPCNotFound},
		{agentik.EBusy, 409, RPCUnsupportedOperation},
		{agentik.EConflict, 409, RPCUnsupportedOperation},
		{agentik.ETooLarge, 413, RPCInvalidParams},
		{agentik.EUnsupportedMed, 415, RPCContentTypeNotSupported},
		{agentik.ERateLimited, 429, RPCInternalError},
		{agentik.EUnavailable, 503, RPCInternalError},
		{agentik.EInternal, 500, RPCInternalError},
		{CodeMethodNotAllowed, 405, RPCInvalidRequest},
		{CodeRequestTimeout, 408, RPCInvalidParams},
		{"something_else", 500, RPCInternalError},
	} {
		if got := Status(tc.code); got != tc.status {
			t.Errorf("Status(%s) = %d, want %d", tc.code, got, tc.status)
		}
		if got := RPCCode(tc.code); got != tc.rpc {
			t.Errorf("RPCCode(%s) = %d, want %d", tc.code, got, tc.rpc)
		}
	}
	secret := agentik.WrapError(agentik.EInternal, "db password is hunter2", io.EOF)
	if code, msg := Public(secret); code != agentik.EInternal || msg != "internal error" {
		t.Errorf("Public(internal) = %s %q", code, msg)
	}
	if code, msg := Public(io.ErrUnexpectedEOF); code != agentik.EInternal || msg != "internal error" {
		t.Errorf("Public(plain error) = %s %q", code, msg)
	}
	if code, msg := Public(agentik.Errorf(agentik.EBusy, "a turn is running")); code != agentik.EBusy || msg != "a turn is running" {
		t.Errorf("Public(busy) = %s %q", code, msg)
	}

	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	WriteError(w, r, slog.New(slog.NewTextHandler(io.Discard, nil)), secret)
	if w.Code != 500 || strings.Contains(w.Body.String(), "hunter2") {
		t.Fatalf("internal error: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	WriteError(w, r, nil, &agentik.Error{Code: agentik.ERateLimited, Message: "slow down", RetryAfter: 1500 * time.Millisecond})
	if w.Code != 429 || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("rate limited: %d %v", w.Code, w.Header())
	}
}

// syncBuffer is a log destination the server's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRequestLog: one JSON line per request at info, with the route
// pattern (not the raw path), status, duration, principal and the trace
// id of the span in the request's context; nothing at a level below the
// logger's.
func TestRequestLog(t *testing.T) {
	var logs syncBuffer
	e := New(Options{Tokens: fakeTokens{}, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	mux := http.NewServeMux()
	mux.Handle("GET /conversations/{id}", e.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id")})
	}), Route{}))
	mux.Handle("GET /boom", e.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, nil, agentik.Errorf(agentik.EInternal, "boom"))
	}), Route{}))
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled})
	h := e.Handler(mux)
	// What a tracing middleware in front of the edge does: the span in the
	// request's context.
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Traced") != "" {
			r = r.WithContext(trace.ContextWithSpanContext(r.Context(), sc))
		}
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(traced)
	defer srv.Close()

	if s, _, _ := do(t, "GET", srv.URL+"/conversations/c-secret-id?access_token=alice-token-1", "", "Authorization", "Bearer alice-token-1", "X-Test-Traced", "1"); s != 200 {
		t.Fatalf("status %d", s)
	}
	if s, _, _ := do(t, "GET", srv.URL+"/conversations/c2", ""); s != 401 {
		t.Fatalf("status %d", s)
	}
	if s, _, _ := do(t, "GET", srv.URL+"/no/such/c-other-id", "", "Authorization", "Bearer bob-token-22"); s != 404 {
		t.Fatalf("status %d", s)
	}
	if s, _, _ := do(t, "GET", srv.URL+"/boom", "", "Authorization", "Bearer bob-token-22"); s != 500 {
		t.Fatalf("status %d", s)
	}
	lines := logs.lines(t)
	var reqs []map[string]any
	for _, l := range lines {
		if l["msg"] == "request" {
			reqs = append(reqs, l)
		}
	}
	if len(reqs) != 4 {
		t.Fatalf("%d request lines, want 4:\n%v", len(reqs), lines)
	}
	want := []struct {
		level, route, principal, traceID string
		status                           float64
	}{
		{"INFO", "GET /conversations/{id}", "alice", "4bf92f3577b34da6a3ce929d0e0e4736", 200},
		{"INFO", "GET /conversations/{id}", "-", "", 401},
		{"INFO", "unmatched", "-", "", 404}, // the edge authenticates matched routes only
		{"WARN", "GET /boom", "bob", "", 500},
	}
	for i, w := range want {
		l := reqs[i]
		if l["level"] != w.level || l["method"] != "GET" || l["route"] != w.route || l["status"] != w.status || l["principal"] != w.principal {
			t.Errorf("line %d: %v, want %+v", i, l, w)
		}
		if d, ok := l["duration"].(float64); !ok || d <= 0 {
			t.Errorf("line %d: duration %v", i, l["duration"])
		}
		if got, _ := l["trace_id"].(string); got != w.traceID {
			t.Errorf("line %d: trace_id %q, want %q", i, got, w.traceID)
		}
	}
	all := fmt.Sprint(lines)
	for _, leak := range []string{"c-secret-id", "c-other-id", "alice-token-1", "access_token"} {
		if strings.Contains(all, leak) {
			t.Errorf("the request log shows %q: %s", leak, all)
		}
	}

	// Below the logger's level, nothing.
	var quiet syncBuffer
	q := New(Options{Logger: slog.New(slog.NewJSONHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelInfo})), RequestLogLevel: slog.LevelDebug})
	qs := httptest.NewServer(q.Handler(mux))
	defer qs.Close()
	do(t, "GET", qs.URL+"/no/such", "")
	if l := quiet.lines(t); len(l) != 0 {
		t.Errorf("debug request lines logged at info: %v", l)
	}
}

// TestSlowBodyOnEveryRoute: a client that announces a body, sends four bytes
// and falls silent gets its answer at once on every route — refused,
// unauthenticated, unknown — and its connection is closed at once, not
// after the body timeout (a minute here) nor never (issue 44.3: /health,
// agent cards and unknown paths never answered; a 401 kept the connection).
// The read deadline is a bound, not a synchronisation.
func TestSlowBodyOnEveryRoute(t *testing.T) {
	e := New(Options{Tokens: fakeTokens{}, BodyTimeout: time.Minute})
	mux := http.NewServeMux()
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.Handle("GET /health", e.Guard(health, Route{Access: Unauthenticated}))
	mux.Handle("POST /private", e.Guard(http.HandlerFunc(echoPrincipal), Route{}))
	mux.Handle("GET /agents/coder", e.Guard(http.HandlerFunc(echoPrincipal), Route{Agent: "coder"}))
	srv := httptest.NewServer(e.Handler(mux))
	t.Cleanup(srv.Close) // after the clients' connections close (cleanups run last first)
	for _, path := range []string{"POST /private", "GET /health", "POST /nowhere", "GET /agents/coder"} {
		method, p, _ := strings.Cut(path, " ")
		head := method + " " + p + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
		c, br := rawRequest(t, srv, head, `{"a"`)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer while the body is pending: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !resp.Close {
			t.Errorf("%s: %d without Connection: close", path, resp.StatusCode)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: connection still open after the answer: %v", path, err)
		}
	}
}

// TestSlowBodyHandlerThatAnswersLate: a handler that answers without
// reading the body, after the body timeout: the connection's reads were cut
// at the timeout, the answer still goes out and the connection is closed.
func TestSlowBodyHandlerThatAnswersLate(t *testing.T) {
	e := New(Options{BodyTimeout: 200 * time.Millisecond})
	release := make(chan struct{})
	srv := httptest.NewServer(e.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		io.WriteString(w, "late")
	})))
	t.Cleanup(srv.Close)
	c, br := rawRequest(t, srv, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", "abcd")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	<-time.After(400 * time.Millisecond) // past the body timeout: a timer of the test, not a condition
	close(release)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "late" || !resp.Close {
		t.Fatalf("%q close=%v", b, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open: %v", err)
	}
}

// TestRefusalOfAnHonestBodyIsNotAReset: a client that sends its whole
// 100 KiB body at once to a route that refuses it unread reads the refusal
// and then a clean end of the connection: what it sent is read for a moment
// before the close, so the close is not a reset that could destroy the
// answer in the client's buffer.
func TestRefusalOfAnHonestBodyIsNotAReset(t *testing.T) {
	srv, _ := newServer(t, Options{BodyTimeout: time.Minute})
	body := `{"a":"` + strings.Repeat("x", 100<<10) + `"}`
	head := fmt.Sprintf("POST /private HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	for i := range 20 {
		c, br := rawRequest(t, srv, head, body)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("round %d: the answer's body: %v", i, err)
		}
		if resp.StatusCode != 401 || !resp.Close {
			t.Fatalf("round %d: %d close=%v", i, resp.StatusCode, resp.Close)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("round %d: after the answer: %v, want a clean end", i, err)
		}
		c.Close()
	}
}

// revokedAtOnce is a token set whose reload revoked every token between a
// request's Lookup and its Watch.
type revokedAtOnce struct{ fakeTokens }

func (revokedAtOnce) Watch(_, _, _ string, revoked func()) func() bool {
	revoked()
	return func() bool { return false }
}

// TestRevokedBetweenLookupAndWatch: a token revoked by a reload after the
// edge looked it up, before it watched it, is refused (401), and the handler
// never runs.
func TestRevokedBetweenLookupAndWatch(t *testing.T) {
	e := New(Options{Tokens: revokedAtOnce{}})
	ran := false
	srv := httptest.NewServer(e.Handler(e.Guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }), Route{})))
	defer srv.Close()
	status, _, body := do(t, "GET", srv.URL, "", "Authorization", "Bearer alice-token-1")
	if status != 401 || errCode(t, body) != "unauthorized" || ran {
		t.Fatalf("%d %s, handler ran: %v", status, body, ran)
	}
}
