package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/defaults"
)

// Defaults of Options.
const (
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultMaxMessageBytes = 1 << 20
	DefaultPingInterval    = 30 * time.Second
	DefaultPingTimeout     = 15 * time.Second
	DefaultWriteTimeout    = 10 * time.Second
)

// Options configures the server. The zero value is usable: the defaults
// above, busy policy enqueue, same-origin browsers only. Authentication is
// not done here: mount the server behind the HTTP edge (package edge), which
// refuses an unauthenticated upgrade with 401 and puts the principal in the
// request's context; without it every connection is the anonymous "".
type Options struct {
	// IdleTimeout: no client message and no running turn for this long ends
	// the connection with GRACEFUL_DISCONNECT{reason:"idle"}.
	IdleTimeout time.Duration
	// MaxMessageBytes: larger client messages get ERROR too_large and are
	// discarded without closing. A message over 16 times the limit (at least
	// 16 MiB) is not worth reading to its end: the connection is closed with
	// status 1009.
	MaxMessageBytes int64
	// PingInterval and PingTimeout: the server pings every interval; a peer
	// that does not answer within the timeout is dropped.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// WriteTimeout bounds each frame written; a client that does not read
	// for this long is dropped rather than holding the turn's events.
	WriteTimeout time.Duration
	// IfBusy is the busy policy of messages that do not name one (default
	// enqueue).
	IfBusy string
	// OriginPatterns allow cross-origin browser connections from these hosts
	// (path.Match patterns); same-origin and non-browser clients always can.
	OriginPatterns []string
	// MaxConnections bounds the open connections of one principal; one
	// more is answered with ERROR rate_limited and closed (1013). Zero is
	// unlimited.
	MaxConnections int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	defaults.Positive(&o.IdleTimeout, DefaultIdleTimeout)
	defaults.Positive(&o.MaxMessageBytes, DefaultMaxMessageBytes)
	defaults.Positive(&o.PingInterval, DefaultPingInterval)
	defaults.Positive(&o.PingTimeout, DefaultPingTimeout)
	defaults.Positive(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.String(&o.IfBusy, agentik.BusyEnqueue)
	defaults.Logger(&o.Logger)
}

// Server serves the protocol over an agentik.Agent. Mount it at GET
// {prefix}/ws. It is safe for concurrent use; each connection is owned by
// its handler goroutine.
type Server struct {
	agent agentik.Agent
	opts  Options
	log   *slog.Logger

	mu       sync.Mutex
	sessions map[*session]struct{}
	conns    map[string]int // open connections per principal
	closing  bool
	stopping chan struct{} // closed by BeginShutdown
	wg       sync.WaitGroup
}

// NewServer returns a Server of agent. It does no I/O.
func NewServer(agent agentik.Agent, opts Options) *Server {
	opts.setDefaults()
	return &Server{agent: agent, opts: opts, log: opts.Logger,
		sessions: make(map[*session]struct{}), conns: map[string]int{}, stopping: make(chan struct{})}
}

// BeginShutdown refuses new connections and messages. Idle connections get
// GRACEFUL_DISCONNECT{reason:"shutdown"} at once; a connection whose turn is
// running gets it after that turn's END (or when the agent ends its event
// stream). It does not wait; Shutdown does. Idempotent.
func (s *Server) BeginShutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		close(s.stopping)
	}
}

// Shutdown begins the shutdown and waits until every connection has ended or
// ctx ends; then it drops the remaining ones without a handshake and waits
// for their handlers. Idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.BeginShutdown()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for sess := range s.sessions {
		sess.c.CloseNow()
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}

// ServeHTTP upgrades the request and runs the connection until it ends.
//
// Query: conversation_id attaches to an existing conversation of the caller
// (otherwise a new one is created, with title and temporal=true if given);
// events asks for extensions (tools, reasoning).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The request's context is canceled only when this returns or when the
	// credential it came with is revoked (edge.ErrRevoked); the session
	// runs on a context of its own so that the client is told why first.
	ctx := context.WithoutCancel(r.Context())
	s.mu.Lock()
	closing := s.closing
	if !closing {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if closing {
		edge.WriteError(w, r, s.log, agentik.Errorf(agentik.EUnavailable, "the server is shutting down"))
		return
	}
	defer s.wg.Done()

	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.opts.OriginPatterns})
	if err != nil {
		return // Accept answered the request
	}
	defer c.CloseNow()
	// The library's limit is the point where reading on is not worth it; the
	// protocol's own limit (MaxMessageBytes) is enforced while reading, so
	// that an oversized message costs an ERROR, not the connection.
	c.SetReadLimit(max(16*s.opts.MaxMessageBytes, 16<<20))

	sess := &session{srv: s, c: c, log: s.log, activity: make(chan struct{}, 1)}
	defer sess.endOnRevocation(ctx, r.Context())()
	principal := agentik.PrincipalFrom(ctx)
	s.mu.Lock()
	full := s.opts.MaxConnections > 0 && s.conns[principal] >= s.opts.MaxConnections
	if !full {
		s.conns[principal]++
	}
	s.mu.Unlock()
	if full {
		sess.reject(ctx, &agentik.Error{Code: agentik.ERateLimited, RetryAfter: time.Second,
			Message: fmt.Sprintf("too many open connections (at most %d); close one first", s.opts.MaxConnections)})
		return
	}
	defer func() {
		s.mu.Lock()
		if s.conns[principal]--; s.conns[principal] <= 0 {
			delete(s.conns, principal)
		}
		s.mu.Unlock()
	}()
	q := r.URL.Query()
	conv, ext, err := s.open(ctx, q)
	if err != nil {
		sess.reject(ctx, err)
		return
	}
	defer conv.Close()
	sess.conv = conv
	sess.ext = ext
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribe before STATUS: nothing that happens after the client sees
	// STATUS is missed.
	stream, err := conv.Events(sctx, agentik.LiveOnly)
	if err != nil {
		sess.reject(ctx, err)
		return
	}
	defer stream.Close()
	info, err := conv.Info(sctx)
	if err != nil {
		sess.reject(ctx, err)
		return
	}

	s.mu.Lock()
	s.sessions[sess] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
	}()

	st := &Status{ConversationID: conv.ID(), Working: info.Working}
	for _, e := range []string{ExtReasoning, ExtTools} {
		if ext[e] {
			st.Events = append(st.Events, e)
		}
	}
	if err := sess.write(sctx, st); err != nil {
		return
	}
	// What waits for approval now, after STATUS. The engine's stream also
	// replays pending requests to a joining subscriber, and a request may be
	// committed between Events and here: each call id is sent once (asked).
	// The listing covers agents whose streams do not replay.
	sess.asked = map[string]bool{}
	pending, err := conv.Approvals(sctx)
	if err != nil {
		sess.reject(ctx, err)
		return
	}
	for _, p := range pending {
		if err := sess.write(sctx, approvalRequest(p.CallID, p.Name, p.Arguments, p.ExpiresAt)); err != nil {
			return
		}
		sess.asked[p.CallID] = true
	}
	sess.run(sctx, stream)
}

// open attaches to or creates the connection's conversation.
func (s *Server) open(ctx context.Context, q map[string][]string) (agentik.Conversation, map[string]bool, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	ext := map[string]bool{}
	for _, e := range strings.Split(get("events"), ",") {
		switch e = strings.TrimSpace(e); e {
		case "":
		case ExtTools, ExtReasoning:
			ext[e] = true
		default:
			return nil, nil, agentik.Errorf(agentik.EInvalid, "unknown extension %q in events; known: tools, reasoning", truncate(e, 64))
		}
	}
	if id := get("conversation_id"); id != "" {
		conv, err := s.agent.Conversation(ctx, id)
		return conv, ext, err
	}
	var temporal bool
	switch get("temporal") {
	case "", "false", "0":
	case "true", "1":
		temporal = true
	default:
		return nil, nil, agentik.Errorf(agentik.EInvalid, "temporal must be true or false")
	}
	info, err := s.agent.CreateConversation(ctx, agentik.CreateRequest{Temporal: temporal, Title: get("title")})
	if err != nil {
		return nil, nil, err
	}
	conv, err := s.agent.Conversation(ctx, info.ID)
	return conv, ext, err
}

// session is one connection. The handler goroutine runs the event loop and
// owns the reader and pinger goroutines it starts.
type session struct {
	srv      *Server
	c        *websocket.Conn
	conv     agentik.Conversation
	ext      map[string]bool
	log      *slog.Logger
	activity chan struct{}   // a client message arrived
	asked    map[string]bool // call ids sent as APPROVAL_REQUEST and not yet resolved (run's goroutine only)

	wmu    sync.Mutex // serialises writes with the decision to say goodbye
	closed bool       // GRACEFUL_DISCONNECT or a closing ERROR was sent
}

// write sends m unless the connection is being closed.
func (ss *session) write(ctx context.Context, m ServerMessage) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	if ss.closed {
		return errClosing
	}
	return ss.writeLocked(ctx, m)
}

var errClosing = errors.New("ws: connection closing")

func (ss *session) writeLocked(ctx context.Context, m ServerMessage) error {
	b, err := EncodeServerMessage(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ss.srv.opts.WriteTimeout)
	defer cancel()
	// A write that times out closes the connection (the library's rule):
	// a client that does not read is dropped.
	return ss.c.Write(ctx, websocket.MessageText, b)
}

// goodbye sends GRACEFUL_DISCONNECT and closes normally.
func (ss *session) goodbye(reason string) {
	ss.wmu.Lock()
	if ss.closed {
		ss.wmu.Unlock()
		return
	}
	ss.writeLocked(context.Background(), &GracefulDisconnect{Reason: reason})
	ss.closed = true
	ss.wmu.Unlock()
	ss.c.Close(websocket.StatusNormalClosure, reason)
}

// reject answers a connection that cannot be served with ERROR and closes it
// with status 1008 (policy violation) and the code as the close reason.
func (ss *session) reject(ctx context.Context, err error) {
	code, msg := edge.Public(err)
	if code == agentik.EInternal {
		ss.log.Error("websocket connection failed", "err", err)
	}
	ss.wmu.Lock()
	ss.writeLocked(ctx, &Error{Code: code, Details: msg})
	ss.closed = true
	ss.wmu.Unlock()
	status := websocket.StatusPolicyViolation
	if code == agentik.EUnavailable || code == agentik.EInternal || code == agentik.ERateLimited {
		status = websocket.StatusTryAgainLater
	}
	ss.c.Close(status, code)
}

// endOnRevocation rejects the session with ERROR unauthorized, then closes
// it (run's reads end), when req, the upgrade request's context, is
// cancelled because its credential was revoked (edge.ErrRevoked). The
// returned func stops the watch and waits for a rejection under way.
func (ss *session) endOnRevocation(ctx, req context.Context) (stop func()) {
	done := make(chan struct{})
	after := context.AfterFunc(req, func() {
		defer close(done)
		if errors.Is(context.Cause(req), edge.ErrRevoked) {
			ss.reject(ctx, edge.ErrRevoked)
		}
	})
	return func() {
		if !after() {
			<-done
		}
	}
}

// run forwards the conversation's events until the connection ends.
func (ss *session) run(ctx context.Context, stream agentik.Stream[agentik.Event]) {
	opts := ss.srv.opts
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		ss.readLoop(ctx)
	}()
	pingCtx, stopPing := context.WithCancel(ctx)
	pingDone := make(chan struct{})
	go func() {
		defer close(pingDone)
		ss.pingLoop(pingCtx)
	}()
	defer func() {
		stopPing()
		<-pingDone
		ss.c.CloseNow()
		<-readDone
	}()

	idle := time.NewTimer(opts.IdleTimeout)
	defer idle.Stop()
	stopping := ss.srv.stopping
	var (
		running  bool
		phase    string
		leaving  bool // shutdown began while a turn ran: leave after its END
		turnSeen bool
	)
	// The events are pulled on this goroutine (edge.Pull): the session
	// costs the engine no goroutine or channel of its own.
	events := edge.Pull(stream, edge.EventFrame)
	ready, done := events.Ready(), events.Done()
	handle := func(ev agentik.Event) bool {
		switch ev.Type {
		case agentik.EvWorking:
			running, phase, turnSeen = true, "", true
		case agentik.EvStartReasoning:
			phase = agentik.EvStartReasoning
		case agentik.EvStartResponse:
			phase = agentik.EvStartResponse
		case agentik.EvEnd:
			running = false
			idle.Reset(opts.IdleTimeout)
		}
		if m := ss.translate(ev, phase, turnSeen); m != nil {
			if err := ss.write(ctx, m); err != nil {
				return false
			}
		}
		if ev.Type == agentik.EvEnd && leaving {
			ss.goodbye("shutdown")
			return false
		}
		return true
	}
	for {
		for {
			ev, ok, ended, err := edge.Take(events)
			if ended {
				if err == nil {
					err = events.Err()
				}
				ss.streamEnded(ctx, err)
				return
			}
			if !ok {
				break
			}
			if !handle(ev) {
				return
			}
		}
		select {
		case <-readDone:
			return
		case <-ss.activity:
			idle.Reset(opts.IdleTimeout)
		case <-idle.C:
			select {
			case <-ss.activity:
				idle.Reset(opts.IdleTimeout)
				continue
			default:
			}
			if running {
				idle.Reset(opts.IdleTimeout)
				continue
			}
			ss.goodbye("idle")
			return
		case <-stopping:
			stopping = nil
			if !running {
				ss.goodbye("shutdown")
				return
			}
			leaving = true
		case <-ready:
		case <-done:
		}
	}
}

// streamEnded handles the end of the conversation's event stream: the agent
// shut down (goodbye), the conversation was deleted (ERROR not_found), or
// the connection could not keep up (ERROR unavailable: reconnect).
func (ss *session) streamEnded(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // the connection is gone already
	}
	ss.srv.mu.Lock()
	closing := ss.srv.closing
	ss.srv.mu.Unlock()
	if !closing {
		if _, ierr := ss.conv.Info(ctx); agentik.IsNotFound(ierr) {
			ss.reject(ctx, agentik.Errorf(agentik.ENotFound, "the conversation was deleted"))
			return
		}
	}
	if err != nil {
		ss.reject(ctx, agentik.Errorf(agentik.EUnavailable, "the event stream fell behind; reconnect to continue"))
		return
	}
	ss.goodbye("shutdown")
}

// translate maps a core event to the message this connection gets, or nil.
// Only answer text becomes TEXT_CHUNK; reasoning and tool activity are sent
// only to connections that asked for them.
func (ss *session) translate(ev agentik.Event, phase string, turnSeen bool) ServerMessage {
	switch ev.Type {
	case agentik.EvAppendText:
		switch phase {
		case agentik.EvStartResponse:
			return &TextChunk{Text: ev.Text}
		case agentik.EvStartReasoning:
			if ss.ext[ExtReasoning] {
				return &ReasoningChunk{Text: ev.Text}
			}
		}
	case agentik.EvEnd:
		if !turnSeen {
			return nil // the end of a turn this connection never saw start
		}
		m := &End{Reason: ev.Reason}
		if ev.Tokens != nil {
			m.TokensUsed = ev.Tokens.Input + ev.Tokens.Output
		}
		return m
	case agentik.EvError:
		if ev.Message != nil {
			return &Error{Code: ev.Message.Code, Details: agentik.TurnErrorMessage(ev.Message.Code, ev.Message.Details), ReplyTo: ev.Message.ReplyTo}
		}
	case agentik.EvApprovalRequested:
		if ss.asked[ev.CallID] {
			return nil
		}
		ss.asked[ev.CallID] = true
		return approvalRequest(ev.CallID, ev.Name, ev.Arguments, ev.ExpiresAt)
	case agentik.EvApprovalResolved:
		delete(ss.asked, ev.CallID)
	case agentik.EvToolCall:
		if ss.ext[ExtTools] && ev.Message != nil {
			return &ToolCall{CallID: ev.Message.CallID, Name: ev.Message.Name, Arguments: json.RawMessage(ev.Message.Arguments)}
		}
	case agentik.EvToolResult, agentik.EvToolFailed:
		if ss.ext[ExtTools] && ev.Message != nil {
			return &ToolResult{CallID: ev.Message.CallID, Name: ev.Message.Name,
				Text: agentik.JoinText(ev.Message.Content), IsError: ev.Message.IsError}
		}
	}
	return nil
}

// readLoop reads client messages until the connection ends.
func (ss *session) readLoop(ctx context.Context) {
	limit := ss.srv.opts.MaxMessageBytes
	buf := make([]byte, 0, 4096)
	for {
		typ, r, err := ss.c.Reader(ctx)
		if err != nil {
			return
		}
		select {
		case ss.activity <- struct{}{}:
		default:
		}
		buf = buf[:0]
		b, err := readLimited(r, buf, limit)
		if errors.Is(err, errTooLarge) {
			// Read the rest so the next message can be read.
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
			ss.write(ctx, &Error{Code: CodeTooLarge, Details: "the message is larger than the limit of " + strconv.FormatInt(limit, 10) + " bytes"})
			continue
		}
		if err != nil {
			return
		}
		buf = b[:0]
		if typ != websocket.MessageText {
			ss.write(ctx, &Error{Code: CodeBinary, Details: "binary frames are not accepted; send JSON text"})
			continue
		}
		m, err := DecodeClientMessage(b)
		if err != nil {
			ss.write(ctx, err.(*Error))
			continue
		}
		if err := ss.handle(ctx, m); err != nil {
			code, msg := edge.Public(err)
			if code == agentik.EInternal {
				ss.log.Error("websocket message failed", "conversation", ss.conv.ID(), "err", err)
			}
			ss.write(ctx, &Error{Code: code, Details: msg})
		}
	}
}

// handle performs a decoded client message.
func (ss *session) handle(ctx context.Context, m ClientMessage) error {
	ss.srv.mu.Lock()
	closing := ss.srv.closing
	ss.srv.mu.Unlock()
	switch m := m.(type) {
	case *UserMessage:
		if closing {
			return agentik.Errorf(agentik.EUnavailable, "the server is shutting down")
		}
		ifBusy := m.IfBusy
		defaults.String(&ifBusy, ss.srv.opts.IfBusy)
		_, err := ss.conv.Send(ctx, agentik.SendRequest{
			Content: []agentik.Content{agentik.Text(m.Text)},
			Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "websocket", User: agentik.PrincipalFrom(ctx)}},
			IfBusy:  ifBusy,
		})
		return err
	case *Interrupt:
		_, err := ss.conv.Interrupt(ctx)
		return err
	case *Approval:
		return ss.conv.Resolve(ctx, m.CallID, m.Resolution())
	}
	return nil
}

// approvalRequest is the APPROVAL_REQUEST of a pending call.
func approvalRequest(callID, name string, args agentik.RawJSON, expires agentik.Time) *ApprovalRequest {
	m := &ApprovalRequest{CallID: callID, Name: name, Arguments: json.RawMessage(args)}
	if len(m.Arguments) == 0 {
		m.Arguments = json.RawMessage("{}")
	}
	if !expires.IsZero() {
		m.ExpiresAt = expires.String()
	}
	return m
}

// pingLoop pings the peer; one that does not answer in time is dropped.
func (ss *session) pingLoop(ctx context.Context) {
	t := time.NewTicker(ss.srv.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, ss.srv.opts.PingTimeout)
		err := ss.c.Ping(pctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				ss.log.Info("websocket peer did not answer a ping; dropping it", "conversation", ss.conv.ID())
			}
			ss.c.CloseNow()
			return
		}
	}
}

var errTooLarge = errors.New("message too large")

// readLimited appends r to buf up to limit bytes; errTooLarge when r holds
// more.
func readLimited(r io.Reader, buf []byte, limit int64) ([]byte, error) {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
