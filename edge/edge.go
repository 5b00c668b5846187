package edge

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"go.opentelemetry.io/otel/trace"
)

// Tokens authenticates bearer tokens and says which agents a principal may
// use. *auth.Tokens implements it. Implementations are safe for concurrent
// use.
type Tokens interface {
	// Lookup returns the principal of token.
	Lookup(token string) (principal string, ok bool)
	// Allows reports whether principal may use agent.
	Allows(principal, agent string) bool
	// Watch registers token, in use by principal for agent ("" for none in
	// particular), for as long as a request or connection holds it:
	// revoked is called once, without blocking, when the token stops
	// authenticating principal for agent (a reload removed it), at once if
	// it already does not. stop releases the watch and reports whether it
	// was still held. *auth.Tokens implements it.
	Watch(token, principal, agent string, revoked func()) (stop func() bool)
}

// ErrRevoked is the cause of a request's context canceled because the
// token that authenticated it was revoked (context.Cause).
var ErrRevoked = agentik.Errorf(agentik.EUnauthorized, "the credentials of this connection were revoked")

// Options configure an Edge. The zero value is an open edge: no
// authentication, no cross-origin access, the default body timeout.
type Options struct {
	// Tokens authenticates requests; nil means an open server where every
	// request acts for the anonymous principal "" and may use every agent.
	Tokens Tokens
	// BodyTimeout bounds the reading of one request body (DefaultBodyTimeout
	// when zero). It is a deadline on the connection while ReadBody reads,
	// so a client that sends its body slowly is cut off.
	BodyTimeout time.Duration
	// CORSOrigins are the exact origins ("https://app.example.com") whose
	// browser pages may call the API cross-origin. None by default.
	CORSOrigins []string
	// Logger receives refusals and the access log; nil means slog.Default().
	Logger *slog.Logger
	// Observe, when set, is told of every request Handler served: its
	// method, the ServeMux pattern that matched ("" for none), the status
	// and the duration (metrics).
	Observe func(method, route string, status int, d time.Duration)
	// RequestLogLevel is the level of the one line Handler logs per
	// request (a 5xx is logged at warn whatever this says). The zero value
	// is slog.LevelInfo.
	RequestLogLevel slog.Level
	// Trace, when set, returns the context of a request with the trace
	// context its headers carry (W3C traceparent): every facade then hands
	// it to the core with the request (telemetry.Tracing.Extract). nil:
	// tracing off, the headers are not looked at.
	Trace func(ctx context.Context, h http.Header) context.Context
}

// Edge is the HTTP edge of one process. Safe for concurrent use.
type Edge struct {
	tokens      Tokens
	bodyTimeout time.Duration
	cors        map[string]bool
	log         *slog.Logger
	observe     func(method, route string, status int, d time.Duration)
	logLevel    slog.Level
	trace       func(ctx context.Context, h http.Header) context.Context
}

// New returns an edge.
func New(opts Options) *Edge {
	e := &Edge{tokens: opts.Tokens, bodyTimeout: opts.BodyTimeout, cors: map[string]bool{}, log: opts.Logger, observe: opts.Observe,
		logLevel: opts.RequestLogLevel, trace: opts.Trace}
	if e.bodyTimeout <= 0 {
		e.bodyTimeout = DefaultBodyTimeout
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	for _, o := range opts.CORSOrigins {
		e.cors[strings.TrimRight(o, "/")] = true
	}
	return e
}

// Open reports whether the edge authenticates nobody (no tokens).
func (e *Edge) Open() bool { return e.tokens == nil }

// Access is how a route is authenticated.
type Access int

const (
	// Private routes take the token from the Authorization header only.
	Private Access = iota
	// Stream routes (event streams, WebSocket upgrades) also take it from
	// the access_token query parameter on GET: their browser clients
	// (EventSource, WebSocket) cannot set headers.
	Stream
	// Unauthenticated routes are not authenticated (health, agent cards).
	Unauthenticated
)

// Route says how Guard treats one route.
type Route struct {
	Access Access
	// Agent is the id of the agent the route serves; a principal not
	// allowed to use it gets 404, as for a route that does not exist. ""
	// for routes of the process (GET /agents).
	Agent string
	// Refuse writes a refusal in the route's wire format; nil is WriteError
	// (HTTP JSON). It is called before anything of the request is read but
	// its headers, and must answer with the status Status gives.
	Refuse func(w http.ResponseWriter, r *http.Request, err error)
	// Bearer, when set, authenticates the bearer tokens Tokens does not
	// know: the route's OAuth access tokens (package oauth), which are
	// short-lived and bound to the route, and so are not watched for
	// reloads.
	Bearer func(r *http.Request, token string) (principal string, ok bool)
}

// errUnauthorized is the refusal of a missing or unknown token.
var errUnauthorized = agentik.Errorf(agentik.EUnauthorized, "a valid bearer token is required")

// Guard returns h behind the edge: the request is authenticated from its
// headers (and, on Stream routes, its query) before any of its body is
// read; a refused one is answered with Connection: close, so that a body
// the client is still sending is not waited for. h sees the principal in
// the request's context (agentik.PrincipalFrom), and the request's body is
// bounded in time by the edge's body timeout.
func (e *Edge) Guard(h http.Handler, rt Route) http.Handler {
	refuse := rt.Refuse
	if refuse == nil {
		refuse = func(w http.ResponseWriter, r *http.Request, err error) { WriteError(w, r, e.log, err) }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if rt.Access != Unauthenticated && e.tokens != nil {
			tok := e.token(r, rt.Access)
			p, ok := e.tokens.Lookup(tok)
			bearer := false
			if !ok && tok != "" && rt.Bearer != nil {
				p, ok = rt.Bearer(r, tok)
				bearer = ok
			}
			if !ok {
				e.refuse(w, r, refuse, errUnauthorized)
				return
			}
			if rt.Agent != "" && !e.tokens.Allows(p, rt.Agent) {
				e.refuse(w, r, refuse, agentik.Errorf(agentik.ENotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
				return
			}
			ctx = agentik.WithPrincipal(ctx, p)
			if n, ok := ctx.Value(noteKey{}).(*note); ok {
				n.principal = p
			}
			if !bearer {
				var stop func() bool
				if ctx, stop = e.watch(ctx, tok, p, rt.Agent); stop == nil {
					e.refuse(w, r, refuse, errUnauthorized)
					return
				}
				defer stop()
			}
		}
		if r.ContentLength != 0 {
			// The body must arrive within the body timeout, whoever reads
			// it (ReadBody, or a protocol library's own reader). The
			// deadline is on the connection's reads only: net/http lifts it
			// when the body is read to its end, and ReadBody does too, so a
			// long response (an event stream) is not bound by it.
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(e.bodyTimeout))
		}
		h.ServeHTTP(w, r.WithContext(withBodyTimeout(ctx, e.bodyTimeout)))
	})
}

// watch ends ctx when token stops authenticating principal for agent: a
// request that outlives a reload (an event stream, a WebSocket) ends when
// its token is revoked. stop is nil when the token was revoked already.
func (e *Edge) watch(ctx context.Context, tok, p, agent string) (context.Context, func() bool) {
	cred := &credential{tokens: e.tokens, token: tok, principal: p, agent: agent}
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, credentialKey{}, cred))
	stop := e.tokens.Watch(tok, p, agent, func() { cancel(ErrRevoked) })
	if ctx.Err() != nil { // revoked by a reload since Lookup
		stop()
		cancel(nil)
		return ctx, nil
	}
	return ctx, func() bool { ok := stop(); cancel(nil); return ok }
}

// credentialKey carries the credential Guard authenticated a request with,
// for WatchCredential.
type credentialKey struct{}

type credential struct {
	tokens                  Tokens
	token, principal, agent string
}

// WatchCredential calls revoked once when the credential that authenticated
// ctx's request is revoked, for state that outlives the request (a protocol
// session): it is Tokens.Watch on that credential. On an open edge, or for a
// context no guarded request made, it watches nothing and stop reports
// false.
func WatchCredential(ctx context.Context, revoked func()) (stop func() bool) {
	c, ok := ctx.Value(credentialKey{}).(*credential)
	if !ok {
		return func() bool { return false }
	}
	return c.tokens.Watch(c.token, c.principal, c.agent, revoked)
}

// Allows reports whether principal may use agent (always, on an open edge).
func (e *Edge) Allows(principal, agent string) bool {
	return e.tokens == nil || e.tokens.Allows(principal, agent)
}

func (e *Edge) refuse(w http.ResponseWriter, r *http.Request, refuse func(http.ResponseWriter, *http.Request, error), err error) {
	if r.ContentLength != 0 {
		// Without this the server would read the unread body to its end
		// (up to 256 KiB) before the refusal goes out.
		w.Header().Set("Connection", "close")
	}
	refuse(w, r, err)
}

// token returns the request's bearer token: the Authorization header, the
// X-Api-Key header (what the LangGraph SDKs send for an apiKey), or on a
// GET of a Stream route the access_token query parameter.
func (e *Edge) token(r *http.Request, access Access) string {
	if t := BearerToken(r); t != "" {
		return t
	}
	if t := strings.TrimSpace(r.Header.Get("X-Api-Key")); t != "" {
		return t
	}
	if access == Stream && r.Method == http.MethodGet {
		return r.URL.Query().Get("access_token")
	}
	return ""
}

// BearerToken returns the token of an "Authorization: Bearer …" header.
func BearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// noteKey carries the access log's note of a request: Guard writes the
// principal it authenticated into it, so that the log line names it
// without authenticating the request twice.
type noteKey struct{}

type note struct{ principal string }

// Handler is the outermost handler of a listener: it answers CORS (the
// preflight OPTIONS of an allowed origin included) and logs one line per
// request: method, route pattern (never the raw path, which holds
// conversation ids, nor the query string, which may carry a token),
// status, duration, the principal it acted for and, when the request's
// context carries a span, its trace id.
func (e *Edge) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		n := &note{principal: "-"}
		base := context.WithValue(r.Context(), noteKey{}, n)
		if e.trace != nil {
			base = e.trace(base, r.Header) // the incoming traceparent: parent of what the request starts
		}
		r = r.WithContext(base)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		if r.ContentLength != 0 {
			// Every body, on every route, must arrive within the body
			// timeout: net/http reads what a handler left unread before
			// it answers or reuses the connection, and a client that sends
			// a few bytes and falls silent would hold it for good.
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Now().Add(e.bodyTimeout))
			rec.body = &trackedBody{ReadCloser: r.Body, want: r.ContentLength}
			r.Body = rec.body
			defer func() {
				if rec.closing && !rec.hijacked {
					// The answer went out with Connection: close before the
					// whole body: net/http reads what is left before it
					// closes (an honest client's bytes in flight, so that
					// it sees the answer, not a reset), for a moment only.
					rc.SetReadDeadline(time.Now().Add(drainGrace))
				}
			}()
		}
		if !e.cross(rec, r) {
			next.ServeHTTP(rec, r)
		}
		if rec.body != nil && !rec.wroteHeader && !rec.body.complete() {
			rec.Header().Set("Connection", "close")
			rec.closing = true
		}
		d := time.Since(start)
		// r.Pattern is the route the ServeMux matched (it sets it on the
		// request it was given).
		if e.observe != nil {
			e.observe(r.Method, r.Pattern, rec.status, d)
		}
		level := e.logLevel
		if rec.status >= 500 {
			level = slog.LevelWarn
		}
		ctx := r.Context()
		if !e.log.Enabled(ctx, level) {
			return
		}
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", route), slog.Int("status", rec.status),
			slog.Duration("duration", d.Round(time.Microsecond)), slog.String("principal", n.principal)}
		if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
		e.log.LogAttrs(ctx, level, "request", attrs...)
	})
}

// statusRecorder remembers the status while passing through flushes and
// hijacks, which event streams and WebSockets need.
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	body        *trackedBody // the request's body, when it has one
	closing     bool         // the answer says Connection: close for an unread body
	hijacked    bool
}

// drainGrace is how long net/http may read the rest of a body the handler
// answered without reading, before the connection closes.
const drainGrace = 500 * time.Millisecond

func (s *statusRecorder) WriteHeader(code int) {
	if code < 200 { // informational: the final answer is still to come
		s.ResponseWriter.WriteHeader(code)
		return
	}
	if !s.wroteHeader {
		s.status, s.wroteHeader = code, true
		if s.body != nil && !s.body.complete() {
			// An answer before the whole body (a refusal, a route that
			// reads none) closes the connection: net/http would otherwise
			// wait for the rest of the body before sending it.
			s.Header().Set("Connection", "close")
			s.closing = true
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// trackedBody is a request body that knows whether it was read whole.
type trackedBody struct {
	io.ReadCloser
	want int64 // Content-Length; -1: unknown (chunked)
	mu   sync.Mutex
	n    int64
	eof  bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	b.mu.Unlock()
	return n, err
}

// complete reports whether the whole body was read.
func (b *trackedBody) complete() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof || (b.want >= 0 && b.n >= b.want)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Flush() {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := s.ResponseWriter.(http.Hijacker); ok {
		if !s.wroteHeader { // an upgrade; an event stream taken over keeps its 200
			s.status, s.wroteHeader = http.StatusSwitchingProtocols, true
		}
		s.hijacked = true
		c, rw, err := h.Hijack()
		if err == nil {
			c.SetReadDeadline(time.Time{}) // the protocol that takes over sets its own
		}
		return c, rw, err
	}
	return nil, nil, errors.New("hijacking not supported")
}
