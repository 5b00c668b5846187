package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/defaults"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file is the other direction of the package: an Agentik agent served
// as an MCP server (SPEC §14). servetools.go holds its tools.

// Protocol revisions the facade routes on. Requests at 2026-07-28 or later
// carry their version in a header and need no session (the SDK serves them
// only in stateless mode); everything older opens a session with initialize.
const (
	ProtocolCurrent  = "2026-07-28"
	ProtocolPrevious = "2025-11-25"

	protocolHeader = "Mcp-Protocol-Version"
)

// Defaults of ServeOptions.
const (
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxBodyBytes   = 4 << 20
)

// ServeOptions configures the MCP server facade. The zero value is usable.
type ServeOptions struct {
	// Name and Version identify the server to clients (serverInfo); empty
	// Name is the agent's name.
	Name, Version string
	// IfBusy is the busy policy of a message sent by ask while its
	// conversation runs a turn (see agentik.SendRequest); "" is enqueue.
	IfBusy string
	// SessionTimeout closes a session (previous protocol revisions) that
	// has seen no request for that long; 0 is DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxBodyBytes bounds a request body (413 beyond); 0 is
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxSessions bounds the sessions (previous protocol revisions) open
	// at once on this endpoint, all principals together (503 beyond); 0 is
	// DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerPrincipal bounds one principal's open sessions (429
	// beyond); 0 is DefaultMaxSessionsPerPrincipal.
	MaxSessionsPerPrincipal int
	// SessionsPerMinute and SessionBurst bound how fast one principal opens
	// sessions: a token bucket of SessionBurst tokens that gains
	// SessionsPerMinute a minute (429 beyond, with Retry-After); 0 is
	// DefaultSessionsPerMinute, DefaultSessionBurst.
	SessionsPerMinute, SessionBurst int
	// LocalhostProtection refuses requests that reach a loopback address
	// with a Host header that is not loopback (DNS rebinding). It matters on
	// an open server; behind bearer tokens a rebound page has no token.
	LocalhostProtection bool
	// Logger receives what goes wrong; nil is slog.Default().
	Logger *slog.Logger

	now func() time.Time // the session rate's clock; nil is time.Now
}

// Handler serves one agent over MCP Streamable HTTP: the current protocol
// revision (2026-07-28, stateless: every request stands alone) and the
// previous ones (sessions opened by initialize). It acts for the principal
// that the request's context carries (agentik.PrincipalFrom): whoever mounts
// it authenticates first. Each principal has its own MCP server and session
// table, so a session id presented by another principal is unknown (404)
// and another principal's conversations are not found. Each principal
// holds a bounded number of sessions, opened at a bounded rate, within a
// bound for all (ServeOptions).
//
// A session lasts no longer than the credential of the request that opened
// it (edge.WatchCredential): when a reload revokes it, the session's id is
// unknown (404) from then on, its running calls are cancelled (an ask's turn
// is interrupted, as when its client cancels the call) and the session is
// closed, which ends its stream.
//
// Safe for concurrent use. BeginShutdown and Close may each be called more
// than once.
type Handler struct {
	agent   agentik.Agent
	opts    ServeOptions
	log     *slog.Logger
	sdkLog  *slog.Logger // log for the SDK: warnings and errors
	schemas *sdk.SchemaCache

	mu       sync.Mutex
	fronts   map[string]*front // by principal
	closing  bool
	inflight sync.WaitGroup // running tool calls
	drained  chan struct{}  // closed once BeginShutdown's wait is over
}

// front is one principal's MCP server with its two transports.
type front struct {
	h         *Handler
	principal string
	server    *sdk.Server
	sessions  *sdk.StreamableHTTPHandler // previous revisions: stateful
	stateless *sdk.StreamableHTTPHandler // current revision

	mu      sync.Mutex
	current map[string]string          // MCP session id → the conversation ask continues
	watched map[string]context.Context // session id → done when its credential is revoked (watch)

	// Guarded by h.mu (admit).
	opening int    // requests under way that open a session
	rate    bucket // of sessions opened
}

// NewHandler returns the MCP endpoint of agent.
func NewHandler(agent agentik.Agent, opts ServeOptions) *Handler {
	if opts.Name == "" { // Info may be a request (an httpapi.Client): only when needed
		opts.Name = agent.Info().Name
	}
	defaults.String(&opts.Name, "agentik")
	defaults.Positive(&opts.SessionTimeout, DefaultSessionTimeout)
	defaults.Positive(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&opts.MaxSessions, DefaultMaxSessions)
	defaults.Positive(&opts.MaxSessionsPerPrincipal, DefaultMaxSessionsPerPrincipal)
	defaults.Positive(&opts.SessionsPerMinute, DefaultSessionsPerMinute)
	defaults.Positive(&opts.SessionBurst, DefaultSessionBurst)
	if opts.now == nil {
		opts.now = time.Now
	}
	h := &Handler{agent: agent, opts: opts, log: opts.Logger, fronts: map[string]*front{}, schemas: sdk.NewSchemaCache()}
	defaults.Logger(&h.log)
	h.sdkLog = quieter(h.log)
	return h
}

// quieter passes on the SDK's warnings and errors only: it logs every
// session it opens and closes at info, which at the current protocol
// revision is every request.
func quieter(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// ServeHTTP checks a POST's body (readBody) and the room for the session it
// may open (admit) before the SDK sees it, and answers a refusal with a
// JSON-RPC error (refuse).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := h.front(agentik.PrincipalFrom(r.Context()))
	if f == nil {
		h.refuse(w, r, nullID, &agentik.Error{Code: agentik.EUnavailable, Message: "the server is shutting down", RetryAfter: time.Second})
		return
	}
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		if body, err = h.readBody(w, r); err != nil {
			h.refuse(w, r, nullID, err)
			return
		}
		if body != nil {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
	}
	// Dates compare as strings, as the SDK compares them.
	if r.Header.Get(protocolHeader) >= ProtocolCurrent {
		f.stateless.ServeHTTP(w, r)
		return
	}
	if id := r.Header.Get(sessionHeader); id != "" && f.revoked(id) {
		// As the SDK answers an unknown session, which it may still
		// know while it closes this one.
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if opensSession(r) {
		release, err := h.admit(f)
		if err != nil {
			h.refuse(w, r, requestID(body), err)
			return
		}
		defer release()
		// The answer starts once the session is among the SDK's and
		// before its client knows its id, so that no call of the session
		// runs unwatched.
		var once sync.Once
		header := w.Header()
		w = &opening{ResponseWriter: w, release: func() {
			once.Do(func() {
				release()
				f.watch(r.Context(), header.Get(sessionHeader))
			})
		}}
	}
	f.sessions.ServeHTTP(w, r)
}

// front returns the principal's server, made on first use; nil once the
// handler is closing.
func (h *Handler) front(principal string) *front {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil
	}
	if f := h.fronts[principal]; f != nil {
		return f
	}
	f := &front{h: h, principal: principal, current: map[string]string{}, watched: map[string]context.Context{}}
	info := h.agent.Info()
	f.server = sdk.NewServer(&sdk.Implementation{Name: h.opts.Name, Title: info.Name, Version: h.opts.Version}, &sdk.ServerOptions{
		Instructions: instructions(info),
		Logger:       h.sdkLog,
		SchemaCache:  h.schemas,
		PageSize:     100,
	})
	f.server.AddReceivingMiddleware(f.revocable)
	f.addTools()
	get := func(*http.Request) *sdk.Server { return f.server }
	f.sessions = sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		SessionTimeout:             h.opts.SessionTimeout,
		MaxRequestBodyBytes:        h.opts.MaxBodyBytes,
		DisableLocalhostProtection: !h.opts.LocalhostProtection,
		Logger:                     h.sdkLog,
	})
	f.stateless = sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		Stateless:                  true,
		MaxRequestBodyBytes:        h.opts.MaxBodyBytes,
		DisableLocalhostProtection: !h.opts.LocalhostProtection,
		// The POST is the whole call at this revision: a client that
		// cancels closes it, and that must stop the turn.
		PropagateRequestCancellation: true,
		Logger:                       h.sdkLog,
	})
	h.fronts[principal] = f
	return f
}

func instructions(info agentik.AgentInfo) string {
	s := "This server is the Agentik agent " + info.Name
	if info.Description != "" {
		s += ": " + info.Description
	}
	return s + ". Use ask to send it a message and get its answer; pass the conversation_id of an answer to continue that conversation. list_conversations and read_conversation show your earlier conversations."
}

// track counts a running tool call; false once the handler is closing.
func (h *Handler) track() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.drained != nil {
		return false
	}
	h.inflight.Add(1)
	return true
}

// BeginShutdown refuses new tool calls and, once the running ones have
// returned (the engine's drain ends their turns), closes every session so
// that long-lived streams end before the HTTP server waits for them. It
// does not wait.
func (h *Handler) BeginShutdown() {
	h.mu.Lock()
	if h.drained != nil {
		h.mu.Unlock()
		return
	}
	h.drained = make(chan struct{})
	h.mu.Unlock()
	go func() {
		defer close(h.drained)
		h.inflight.Wait()
		h.closeSessions()
	}()
}

// Close closes every session at once (running calls are cut off) and
// refuses further requests with 503. It waits for a BeginShutdown in
// progress only as long as ctx allows.
func (h *Handler) Close(ctx context.Context) {
	h.mu.Lock()
	drained := h.drained
	h.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
		}
	}
	h.closeSessions()
}

func (h *Handler) closeSessions() {
	h.mu.Lock()
	h.closing = true
	fronts := slices.Collect(maps.Values(h.fronts))
	h.mu.Unlock()
	for _, f := range fronts {
		for ss := range f.server.Sessions() {
			ss.Close()
		}
	}
}

// sessionHeader carries a session's id; the SDK sets it on the answer to
// the initialize that opened the session.
const sessionHeader = "Mcp-Session-Id"

// watch ties the session id, just opened by a request of ctx, to the
// credential that authenticated that request: when it is revoked, the
// session's calls are cancelled (revocable), its id is unknown from then on,
// and the session is closed. The watch is released when the session closes
// for any other reason: its goroutine lives as long as the session. An id
// that is no session (initialize refused), or an open edge, watches nothing.
func (f *front) watch(ctx context.Context, id string) {
	if id == "" {
		return
	}
	var ss *sdk.ServerSession
	for s := range f.server.Sessions() {
		if s.ID() == id {
			ss = s
			break
		}
	}
	if ss == nil {
		return
	}
	rctx, revoke := context.WithCancelCause(context.Background())
	f.mu.Lock()
	f.watched[id] = rctx
	f.mu.Unlock()
	// Close waits for the session's calls, which revocable has cancelled;
	// it runs on AfterFunc's goroutine since revoked must not block.
	closed := make(chan struct{})
	stopClose := context.AfterFunc(rctx, func() {
		defer close(closed)
		ss.Close()
	})
	stop := edge.WatchCredential(ctx, func() { revoke(edge.ErrRevoked) })
	go func() {
		// Wait returns once the session is closed, by whoever: revocation,
		// its client (DELETE), its idle timeout or Handler.Close.
		ss.Wait()
		stop()
		if !stopClose() {
			<-closed // the SDK forgets the id in Close
		}
		revoke(nil)
		f.mu.Lock()
		delete(f.watched, id)
		f.mu.Unlock()
	}()
}

// revoked reports whether id is a session whose credential was revoked.
func (f *front) revoked(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rctx := f.watched[id]
	return rctx != nil && errors.Is(context.Cause(rctx), edge.ErrRevoked)
}

// revocable runs each call of a watched session under a context that is
// also cancelled, with cause edge.ErrRevoked, when the session's credential
// is revoked: the SDK runs a session's calls on the session's context, not
// on their request's, and closing a session waits for its running calls.
func (f *front) revocable(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if !ok || ss == nil {
			return next(ctx, method, req)
		}
		f.mu.Lock()
		rctx := f.watched[ss.ID()]
		f.mu.Unlock()
		if rctx == nil {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(rctx, func() {
			if cause := context.Cause(rctx); errors.Is(cause, edge.ErrRevoked) {
				cancel(cause)
			}
		})()
		return next(ctx, method, req)
	}
}

// remember records the conversation a session's ask continues by default.
// Entries of sessions that are gone are dropped when the table grows.
func (f *front) remember(session, conv string) {
	if session == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current[session] = conv
	if len(f.current) < 64 || len(f.current)%64 != 0 {
		return
	}
	live := map[string]bool{}
	for ss := range f.server.Sessions() {
		live[ss.ID()] = true
	}
	for id := range f.current {
		if !live[id] {
			delete(f.current, id)
		}
	}
}

func (f *front) recall(session string) string {
	if session == "" {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current[session]
}
