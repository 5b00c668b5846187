package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/httpx"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// server supervises one configured MCP server: one session at a time,
// replaced with backoff when it fails.
type server struct {
	src *Source
	cfg ServerConfig
	log *slog.Logger

	refresh   chan struct{} // tools/list_changed arrived (buffered 1)
	broken    chan struct{} // a call saw the connection fail (buffered 1)
	firstDone chan struct{} // closed after the first connection attempt
	running   atomic.Bool

	mu        sync.Mutex
	state     string
	since     time.Time
	lastErr   string
	restarts  int
	nextRetry time.Time
	protocol  string
	info      string
	session   *sdk.ClientSession
	sessCtx   context.Context // ends when the session is torn down
	tools     []*sdk.Tool     // last known list (kept while down), filtered
	pgid      int             // process group of the stdio child, 0 if none
}

func newServer(src *Source, cfg ServerConfig) *server {
	s := &server{
		src:       src,
		cfg:       cfg,
		log:       src.log.With("mcp_server", cfg.Name),
		refresh:   make(chan struct{}, 1),
		broken:    make(chan struct{}, 1),
		firstDone: make(chan struct{}),
		state:     StateConnecting,
		since:     time.Now(),
	}
	if cfg.Disabled {
		s.state = StateDisabled
	}
	return s
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run is the supervisor loop: connect, serve until the session ends,
// tear down, back off, again — until ctx ends.
func (s *server) run(ctx context.Context) {
	s.running.Store(true)
	defer s.running.Store(false)
	defer s.setState(StateStopped, "")
	first := true
	markFirst := func() {
		if first {
			first = false
			close(s.firstDone)
		}
	}
	defer markFirst()
	backoff := s.src.opts.MinBackoff
	for {
		if first {
			s.setState(StateConnecting, "")
		} // a retry keeps showing why the last attempt failed
		sess, sessCtx, stop, err := s.connect(ctx)
		if err == nil {
			err = s.listTools(sessCtx, sess)
			if err != nil {
				s.teardown(sess, stop)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("MCP server cannot be reached; retrying", "err", s.redact(err.Error()), "retry_in", backoff)
			s.setRetry(StateFailed, err.Error(), backoff)
			markFirst()
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, s.src.opts.MaxBackoff)
			continue
		}
		up := time.Now()
		// A break reported against the previous session is stale.
		select {
		case <-s.broken:
		default:
		}
		s.mu.Lock()
		s.session, s.sessCtx = sess, sessCtx
		if r := sess.InitializeResult(); r != nil {
			s.protocol = r.ProtocolVersion
			if r.ServerInfo != nil {
				s.info = strings.TrimSpace(r.ServerInfo.Name + " " + r.ServerInfo.Version)
			}
		}
		s.mu.Unlock()
		s.setState(StateUp, "")
		s.log.Info("MCP server connected", "transport", s.cfg.Transport, "protocol", s.protocol, "tools", len(s.knownTools()))
		markFirst()

		why := s.serve(ctx, sess, sessCtx)
		s.mu.Lock()
		s.session = nil
		s.mu.Unlock()
		s.setState(StateDown, why)
		s.teardown(sess, stop)
		if ctx.Err() != nil {
			return
		}
		// A server that ran for a while gets a quick restart; one that
		// keeps dying right after connecting backs off further.
		if time.Since(up) > 30*time.Second {
			backoff = s.src.opts.MinBackoff
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		s.log.Warn("MCP server connection lost; reconnecting", "reason", s.redact(why), "retry_in", backoff)
		s.setRetry(StateDown, why, backoff)
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, s.src.opts.MaxBackoff)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// serve watches a live session until it ends and says why.
func (s *server) serve(ctx context.Context, sess *sdk.ClientSession, sessCtx context.Context) string {
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return "closing"
		case err := <-ended:
			if err == nil {
				return "the server closed the connection"
			}
			return "the connection failed: " + err.Error()
		case <-s.broken:
			return "a call found the connection broken"
		case <-s.refresh:
			if err := s.listTools(sessCtx, sess); err != nil {
				if isConnErr(err) {
					return "listing tools failed: " + err.Error()
				}
				s.log.Warn("MCP tools/list failed; keeping the previous list", "err", s.redact(err.Error()))
			}
		}
	}
}

// connect makes one connection attempt. The returned context lives as long
// as the session (the legacy SSE transport ties its stream to it) and stop
// ends it.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, context.Context, context.CancelFunc, error) {
	sessCtx, stop := context.WithCancel(ctx)
	timer := time.AfterFunc(s.src.opts.ConnectTimeout, stop)
	client := s.newClient()
	var sess *sdk.ClientSession
	var err error
	switch s.cfg.Transport {
	case TransportStdio:
		sess, err = client.Connect(sessCtx, s.commandTransport(), nil)
	case TransportHTTP:
		sess, err = client.Connect(sessCtx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}, nil)
	case TransportSSE:
		sess, err = client.Connect(sessCtx, &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}, nil)
	default: // auto: Streamable HTTP, else legacy SSE
		sess, err = client.Connect(sessCtx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}, nil)
		if err != nil && sessCtx.Err() == nil {
			var sseErr error
			sess, sseErr = client.Connect(sessCtx, &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}, nil)
			if sseErr == nil {
				err = nil
			} else {
				err = fmt.Errorf("streamable HTTP: %w; legacy SSE: %v", err, sseErr)
			}
		}
	}
	timedOut := !timer.Stop()
	if err != nil {
		stop()
		s.killProcess()
		if timedOut && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s (%w)", s.src.opts.ConnectTimeout, err)
		}
		return nil, nil, nil, err
	}
	return sess, sessCtx, stop, nil
}

func (s *server) newClient() *sdk.Client {
	keepAlive := s.src.opts.KeepAlive
	if keepAlive < 0 {
		keepAlive = 0
	}
	return sdk.NewClient(&sdk.Implementation{Name: s.src.opts.ClientName, Version: s.src.opts.ClientVersion}, &sdk.ClientOptions{
		Logger: s.log,
		// No roots: agentik has no workspace to offer, and a server that
		// asks for roots delays its own exit.
		Capabilities:              &sdk.ClientCapabilities{},
		KeepAlive:                 keepAlive,
		KeepAliveFailureThreshold: 2,
		// The handler carries no payload and runs on the connection's
		// goroutine: just note it, the supervisor re-lists.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { notify(s.refresh) },
	})
}

// inheritedEnv are the parent variables a stdio server gets besides its
// own "env": enough to run, none of agentik's secrets.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SystemRoot"}

func (s *server) commandTransport() sdk.Transport {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for k, v := range s.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = s.cfg.Cwd
	cmd.Stderr = &lineLogger{log: s.log}
	// A grandchild holding stderr open must not hold up Wait.
	cmd.WaitDelay = time.Second
	setProcAttr(cmd)
	return &commandTransport{
		CommandTransport: sdk.CommandTransport{Command: cmd, TerminateDuration: s.src.opts.CloseTimeout * 2 / 3},
		started: func(pid int) {
			s.mu.Lock()
			s.pgid = pid
			s.mu.Unlock()
		},
	}
}

// commandTransport notes the child's process group as soon as it starts,
// so it can be killed whatever state the session is in.
type commandTransport struct {
	sdk.CommandTransport
	started func(pid int)
}

func (t *commandTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.CommandTransport.Connect(ctx)
	if t.Command.Process != nil {
		t.started(t.Command.Process.Pid)
	}
	return conn, err
}

// killProcess kills the stdio child's whole process group (its own
// children included).
func (s *server) killProcess() {
	s.mu.Lock()
	pgid := s.pgid
	s.pgid = 0
	s.mu.Unlock()
	if pgid > 0 {
		killGroup(pgid)
	}
}

// teardown closes a session within CloseTimeout and then makes sure no
// process of it is left. Calls still running on it are cancelled first:
// a graceful close waits for them.
func (s *server) teardown(sess *sdk.ClientSession, stop context.CancelFunc) {
	stop()
	closed := make(chan struct{})
	go func() {
		if err := sess.Close(); err != nil && !strings.Contains(err.Error(), "signal:") {
			s.log.Debug("MCP session close", "err", err)
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(s.src.opts.CloseTimeout):
		s.log.Warn("MCP server did not exit in time; killing it")
	}
	s.killProcess()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		s.log.Error("MCP session did not close after its process was killed; abandoning it")
	}
}

// listTools fetches every page of the tool list and publishes it.
func (s *server) listTools(ctx context.Context, sess *sdk.ClientSession) error {
	ctx, cancel := context.WithTimeout(ctx, s.src.opts.ConnectTimeout)
	defer cancel()
	var list []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if t == nil || t.Name == "" {
			continue
		}
		if s.cfg.allowed(t.Name) {
			list = append(list, t)
		}
	}
	s.mu.Lock()
	s.tools = list
	s.mu.Unlock()
	s.src.changed()
	return nil
}

func (s *server) knownTools() []*sdk.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *server) setState(state, errText string) {
	s.mu.Lock()
	if s.state != state {
		s.since = time.Now()
	}
	s.state, s.lastErr = state, s.redact(errText)
	s.nextRetry = time.Time{}
	s.mu.Unlock()
}

func (s *server) setRetry(state, errText string, in time.Duration) {
	s.setState(state, errText)
	s.mu.Lock()
	s.nextRetry = time.Now().Add(in)
	s.mu.Unlock()
}

func (s *server) health() ServerHealth {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := ServerHealth{
		Name: s.cfg.Name, Transport: s.cfg.Transport, State: s.state, Since: agentik.TimeOf(s.since),
		Tools: len(s.tools), Error: s.lastErr, Restarts: s.restarts, Protocol: s.protocol, Server: s.info,
	}
	if !s.nextRetry.IsZero() {
		t := agentik.TimeOf(s.nextRetry)
		h.NextRetry = &t
	}
	return h
}

// call runs one tool call on the current session. Every failure of the
// server is a result the model sees; only the caller's own cancellation or
// deadline comes back as a Go error (the engine words those itself).
func (s *server) call(ctx context.Context, name string, args json.RawMessage) (agentik.ToolResult, error) {
	s.mu.Lock()
	sess, sessCtx, state, lastErr := s.session, s.sessCtx, s.state, s.lastErr
	s.mu.Unlock()
	if sess == nil {
		msg := fmt.Sprintf("the MCP server %q is not connected (%s", s.cfg.Name, state)
		if lastErr != "" {
			msg += ": " + lastErr
		}
		return agentik.ErrorResult(msg + "); it is being restarted, try again later"), nil
	}
	parent := ctx
	var cancel context.CancelFunc
	if s.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	// A session torn down (reconnect, shutdown) ends its calls at once.
	defer context.AfterFunc(sessCtx, cancel)()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		return toResult(res), nil
	}
	switch {
	case parent.Err() != nil:
		return agentik.ToolResult{}, parent.Err()
	case sessCtx.Err() != nil:
		return agentik.ErrorResult(fmt.Sprintf("the MCP server %q went away during the call; it is being restarted", s.cfg.Name)), nil
	case errors.Is(err, context.DeadlineExceeded) && s.cfg.Timeout > 0:
		return agentik.ErrorResult(fmt.Sprintf("the MCP server %q did not answer within %s", s.cfg.Name, s.cfg.Timeout)), nil
	}
	s.log.Debug("MCP tool call failed", "tool", name, "err", s.redact(err.Error()))
	if isConnErr(err) {
		// Reconnect now rather than at the next failed keep-alive, unless
		// the session was already replaced.
		s.mu.Lock()
		current := s.session == sess
		s.mu.Unlock()
		if current {
			notify(s.broken)
		}
		return agentik.ErrorResult(fmt.Sprintf("the MCP server %q cannot be reached; reconnecting, try again later", s.cfg.Name)), nil
	}
	out := errorResult(s.cfg.Name, err)
	for i := range out.Content {
		out.Content[i].Text = s.redact(out.Content[i].Text)
	}
	return out, nil
}

// isConnErr reports a failure of the connection rather than of the call:
// the session is gone, or the HTTP request could not be made at all (the
// Streamable HTTP client reports that as a per-call rejection and keeps
// the session).
func isConnErr(err error) bool {
	var ue *url.Error
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.As(err, &ue)
}

func (s *server) httpClient() *http.Client {
	var rt http.RoundTripper = httpx.PooledTransport() // concurrent tool calls reuse their connections
	if w := s.src.opts.WrapTransport; w != nil {
		rt = w(rt)
	}
	if len(s.cfg.Headers) == 0 {
		return &http.Client{Transport: rt}
	}
	// The SDK has no headers option; a RoundTripper is the supported way.
	return &http.Client{Transport: headerTransport{base: rt, headers: s.cfg.Headers}}
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// lineLogger logs a stdio server's stderr line by line (bounded lines).
type lineLogger struct {
	log *slog.Logger
	buf []byte
}

const maxStderrLine = 4096

func (l *lineLogger) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			if len(l.buf) > maxStderrLine {
				l.emit(l.buf[:maxStderrLine])
				l.buf = l.buf[maxStderrLine:]
				continue
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) emit(line []byte) {
	if s := strings.TrimRight(string(line), "\r"); s != "" {
		l.log.Info("MCP server stderr", "line", s)
	}
}

// tool is one MCP tool as offered to the model.
type tool struct {
	srv     *server
	mcpName string
	spec    agentik.ToolSpec
}

func (t *tool) Spec() agentik.ToolSpec { return t.spec }

func (t *tool) Call(ctx context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	return t.srv.call(ctx, t.mcpName, args)
}

// Timeout is the server's per-call timeout (0: none of its own).
func (t *tool) Timeout() time.Duration { return t.srv.cfg.Timeout }

// specOf describes an MCP tool to the model: the input schema verbatim but
// for "$schema", which some providers reject, and a guaranteed object type.
func specOf(t *sdk.Tool, server string) agentik.ToolSpec {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return agentik.ToolSpec{Description: desc, Parameters: schemaOf(t.InputSchema), Source: "mcp:" + server}
}

func schemaOf(in any) agentik.RawJSON {
	var m map[string]any
	if b, err := json.Marshal(in); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m == nil {
		m = map[string]any{}
	}
	delete(m, "$schema")
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	if m["type"] == "object" {
		if _, ok := m["properties"]; !ok {
			m["properties"] = map[string]any{}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// redact removes the server URL's query and user info from text: the URL
// may carry a secret (…/mcp?api_key=${KEY}), and error texts reach logs,
// the tools endpoint and tool results.
func (s *server) redact(text string) string {
	if s.cfg.URL == "" || text == "" {
		return text
	}
	safe := s.cfg.URL
	if u, err := url.Parse(s.cfg.URL); err == nil {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		safe = u.String()
	}
	text = strings.ReplaceAll(text, s.cfg.URL, safe)
	if u, err := url.Parse(s.cfg.URL); err == nil && u.RawQuery != "" {
		text = strings.ReplaceAll(text, u.RawQuery, "[redacted]")
	}
	return text
}
