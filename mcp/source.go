package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/defaults"
)

// Options tune the supervision; zero values take the defaults below.
type Options struct {
	Logger        *slog.Logger
	ClientName    string // sent to servers as clientInfo.name; default "agentik"
	ClientVersion string

	// ConnectTimeout bounds one connection attempt: starting the process or
	// reaching the URL, the handshake and the first tool listing.
	ConnectTimeout time.Duration // default 30s
	// StartupWait is how long, counted from New, a Tools call waits for
	// servers still making their first connection attempt. It makes the
	// first turns after a start (and `agentik tools`) see the configured
	// tools without letting a broken server hold anything up for long.
	StartupWait time.Duration // default 10s; negative: do not wait
	// CloseTimeout is how long a stdio server gets to exit after its stdin
	// is closed before its process group is killed.
	CloseTimeout time.Duration // default 3s
	// MinBackoff and MaxBackoff bound the delay between reconnection
	// attempts, which doubles after each failure.
	MinBackoff, MaxBackoff time.Duration // defaults 500ms, 1m
	// KeepAlive is the ping interval that detects a server gone silent
	// (protocol versions before 2026-07-28); negative disables it.
	KeepAlive time.Duration // default 30s
	// WrapTransport, when set, wraps the transport of HTTP servers'
	// requests (each server has its own): trace propagation
	// (telemetry.Tracing.Transport). A tool call's request carries the
	// call's context.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	defaults.String(&o.ClientName, "agentik")
	defaults.String(&o.ClientVersion, "dev")
	defaults.Positive(&o.ConnectTimeout, 30*time.Second)
	if o.StartupWait == 0 {
		o.StartupWait = 10 * time.Second
	}
	defaults.Positive(&o.CloseTimeout, 3*time.Second)
	defaults.Positive(&o.MinBackoff, 500*time.Millisecond)
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(time.Minute, o.MinBackoff)
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = 30 * time.Second
	}
}

// Source is the tools of all configured MCP servers, as one
// agentik.ToolSource. Each server is supervised on its own goroutine: it is
// connected in the background, reconnected with backoff when it fails or
// drops, and its tool list is refreshed on tools/list_changed. A server
// that is down keeps its last known tools listed; calling them returns an
// error result until it is back. Safe for concurrent use.
type Source struct {
	opts    Options
	log     *slog.Logger
	servers []*server
	start   time.Time

	ctx    context.Context // ends on Close: stops supervisors and calls
	cancel context.CancelFunc
	wg     sync.WaitGroup

	version atomic.Uint64 // bumped whenever a server's tool list changes
	mu      sync.Mutex
	built   uint64
	cache   []agentik.Tool

	closeOnce sync.Once
	closeErr  error
}

var _ agentik.ToolSource = (*Source)(nil)

// New starts supervising the enabled servers of cfg and returns at once;
// nothing here waits for a server.
func New(cfg *Config, opts Options) *Source {
	opts.defaults()
	s := &Source{opts: opts, log: opts.Logger, start: time.Now()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.version.Store(1)
	for _, sc := range cfg.Servers {
		srv := newServer(s, sc)
		s.servers = append(s.servers, srv)
		if sc.Disabled {
			close(srv.firstDone)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.run(s.ctx)
		}()
	}
	return s
}

// Tools returns the tools of every server with a known tool list, under
// names valid for the model and unique within this source. It is called
// before every model call: after the start-up wait it never blocks on a
// server.
func (s *Source) Tools(ctx context.Context) []agentik.Tool {
	s.waitFirst(ctx)
	v := s.version.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built != v {
		s.cache = s.build()
		s.built = v
	}
	return s.cache
}

// waitFirst waits, within the start-up window, for every server's first
// connection attempt.
func (s *Source) waitFirst(ctx context.Context) {
	left := s.opts.StartupWait - time.Since(s.start)
	if left <= 0 {
		return
	}
	t := time.NewTimer(left)
	defer t.Stop()
	for _, srv := range s.servers {
		select {
		case <-srv.firstDone:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// Starting reports whether Tools still waits at start-up: the start-up
// window is open and a server has not finished its first connection
// attempt (agentik.StartingToolSource).
func (s *Source) Starting() bool {
	if time.Since(s.start) >= s.opts.StartupWait {
		return false
	}
	for _, srv := range s.servers {
		select {
		case <-srv.firstDone:
		default:
			return true
		}
	}
	return false
}

// WaitReady waits until every enabled server has finished its first
// connection attempt (successful or not) or ctx ends.
func (s *Source) WaitReady(ctx context.Context) error {
	for _, srv := range s.servers {
		select {
		case <-srv.firstDone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *Source) build() []agentik.Tool {
	var keys []toolKey
	var defs []*tool
	for _, srv := range s.servers {
		for _, t := range srv.knownTools() {
			keys = append(keys, toolKey{srv.cfg.Name, t.Name})
			defs = append(defs, &tool{srv: srv, mcpName: t.Name, spec: specOf(t, srv.cfg.Name)})
		}
	}
	names := assignNames(keys)
	out := make([]agentik.Tool, len(defs))
	for i, d := range defs {
		d.spec.Name = names[i]
		out[i] = d
	}
	return out
}

func (s *Source) changed() { s.version.Add(1) }

// Health reports the state of every configured server, in config order.
func (s *Source) Health() []ServerHealth {
	out := make([]ServerHealth, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.health()
	}
	return out
}

// Close stops every server: calls in flight are cancelled, sessions are
// closed, stdio servers get CloseTimeout to exit before their process
// groups are killed. It returns once every supervisor has stopped, or
// reports the servers it had to abandon. Idempotent.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
			return
		case <-time.After(s.opts.CloseTimeout + time.Second):
		}
		// A supervisor still busy (a connection attempt that does not give
		// up) must not keep a child alive: kill what it started.
		for _, srv := range s.servers {
			srv.killProcess()
		}
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			var stuck []string
			for _, srv := range s.servers {
				if srv.running.Load() {
					stuck = append(stuck, srv.cfg.Name)
				}
			}
			s.closeErr = fmt.Errorf("MCP servers %v did not stop in time", stuck)
		}
	})
	return s.closeErr
}

// ServerHealth is the state of one configured server.
type ServerHealth struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// State is one of connecting, up, down (was up, reconnecting), failed
	// (cannot connect, retrying) or disabled.
	State     string        `json:"state"`
	Since     agentik.Time  `json:"since"`
	Tools     int           `json:"tools"`
	Error     string        `json:"error,omitempty"`
	Restarts  int           `json:"restarts"`
	Protocol  string        `json:"protocol_version,omitempty"`
	Server    string        `json:"server,omitempty"` // serverInfo name and version
	NextRetry *agentik.Time `json:"next_retry,omitempty"`
}

// Server states.
const (
	StateConnecting = "connecting"
	StateUp         = "up"
	StateDown       = "down"
	StateFailed     = "failed"
	StateDisabled   = "disabled"
	StateStopped    = "stopped"
)
