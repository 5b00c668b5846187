package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/auth"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/oauth"
	"github.com/agentik/agentik/telemetry"
)

// app is what serve wires together. agents.go builds the agents, each tool
// source adds itself in its own file (mcp.go, a2a.go); routes.go is the
// routing table of the process and doors.go the table of its front doors,
// each built in its own file (agui.go, a2a.go, ws.go, mcpserver.go,
// irc.go).
type app struct {
	cfg    config.Config
	log    *slog.Logger
	getenv func(string) string // for reloads (token and prompt files)
	store  agentik.Store       // the database (health probe)
	agents []*agent            // every agent of the process, the default first
	eng    *engine.Engine      // the default agent's engine
	// tokens authenticate callers (nil: open server); edge is the HTTP
	// edge every route sits behind (auth.go).
	tokens *auth.Tokens
	edge   *edge.Edge
	oauth  *oauth.Server // the MCP endpoints' OAuth server; nil without tokens (mcpoauth.go)

	httpAddr string // the HTTP listener's address, once listening

	// wires are the doors' paths and how each refuses a request no route
	// takes (routes.go).
	wires []wirePath

	metrics *telemetry.Metrics // nil outside serve (metrics.go)
	// admins are the admin principals in force (metrics.go, reloaded on
	// SIGHUP with the tokens).
	admins  atomic.Pointer[[]string]
	tracing *telemetry.Tracing // nil: tracing off (tracing.go)

	// onStart runs once the engines have started (doors with listeners
	// of their own begin serving); onShutdown runs before the engines
	// drain (doors say goodbye to their clients); onClose runs last, in
	// reverse order (doors, tool sources, the store).
	onStart    []func()
	onShutdown []func(context.Context)
	onClose    []func()
}

func (a *app) close() {
	for i := len(a.onClose) - 1; i >= 0; i-- {
		a.onClose[i]()
	}
}

// buildAPI is ag's native REST+SSE door (SPEC §4) at {path}, with GET
// {path}/tools (mcp.go).
func buildAPI(a *app, ag *agent) (*door, error) {
	var waits []func(context.Context)
	return &door{mount: func(mux *http.ServeMux, _, path string) {
		waits = append(waits, httpapi.Mount(mux, path, ag.eng, httpapi.Options{
			MaxBodyBytes: a.cfg.MaxBodyBytes,
			KeepAlive:    a.cfg.KeepAlive,
			Guard:        a.guard(ag.ID),
			Logger:       a.log,
			Schedules:    ag.schedules,
			Webhooks:     ag.webhooks,
			Memory:       ag.memoryAPI(),
			Recall:       ag.recallAPI(),
		}))
		a.mountTools(mux, path+"/tools", ag)
	}, end: func(ctx context.Context) {
		// Event streams served off their requests end with the engine;
		// their last writes are waited for.
		for _, wait := range waits {
			wait(ctx)
		}
	}}, nil
}

// serve runs the server until SIGTERM/SIGINT, then shuts down gracefully:
// new messages are refused, running turns get DrainTimeout to finish and are
// then closed as interrupted, streams end, the store is closed.
// idleTimeout bounds how long a connection may wait, silent, for its next
// request (its first one included: edge.Listener).
const idleTimeout = 2 * time.Minute

func serve(ctx context.Context, cfg config.Config, getenv func(string) string, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	a := &app{cfg: cfg, log: log, getenv: getenv}
	defer a.close()
	if path := getenv("AGENTIK_CPUPROFILE"); path != "" {
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	a.newMetrics()
	a.setAdmins(cfg)
	if err := a.setupTracing(ctx); err != nil {
		return err
	}
	if err := a.setupAuth(ctx); err != nil {
		return err
	}
	if err := a.buildAgents(ctx, ""); err != nil {
		return err
	}
	if err := a.setupSchedules(ctx); err != nil {
		return err
	}
	if err := a.setupOAuth(); err != nil { // mcpoauth.go
		return err
	}
	mux := http.NewServeMux()
	if err := a.routes(mux); err != nil {
		return err
	}
	if err := a.serveMetrics(); err != nil {
		return err
	}
	a.watchReload()
	srv := &http.Server{
		Handler:           a.edge.Handler(a.unrouted(mux)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       idleTimeout, // idle keep-alive connections are reaped
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	a.httpAddr = ln.Addr().String()
	// The header timeout starts at a new connection's first bytes, as on a
	// kept-alive one, not at the connect (edge.Listener).
	ln = edge.Listener(ln, idleTimeout)
	// Recovery runs before serving so resumed turns keep their order ahead of
	// new messages, but after listening so a port clash fails fast.
	for _, ag := range a.agents {
		if err := ag.eng.Start(ctx); err != nil {
			ln.Close()
			return fmt.Errorf("agent %s: %w", ag.ID, err)
		}
	}
	db := cfg.DBPath
	if cfg.DatabaseURL != "" {
		db = "postgres"
	}
	for _, f := range a.onStart {
		f()
	}
	for _, ag := range a.agents {
		log.Info("agent ready", "agent", ag.ID, "default", ag.Default, "backend", ag.cfg.Backend, "model", ag.llm.Info().Name, "path", agentPrefix(ag.ID))
	}
	def := a.agents[0]
	log.Info("agentik listening", "addr", ln.Addr().String(), "db", db, "agents", len(a.agents), "backend", def.cfg.Backend,
		"model", def.llm.Info().Name, "config", cfg.File, "version", versionString())

	if getenv("AGENTIK_IDLE_TRIM") != "off" {
		go runIdleTrim(ctx, log) // trim.go; ends with ctx
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain_timeout", cfg.DrainTimeout)
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	for _, f := range a.onShutdown {
		f(drainCtx)
	}
	var wg sync.WaitGroup
	for _, ag := range a.agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ag.eng.Shutdown(drainCtx); err != nil {
				log.Warn("engine shutdown", "agent", ag.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	httpCtx, cancelHTTP := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelHTTP()
	if err := srv.Shutdown(httpCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}

// listTools prints every tool the model would see, with its source: of
// every agent, or of the one --agent names.
func listTools(ctx context.Context, cfg config.Config, args []string, w, stderr io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("agent", "", "only this agent's tools (its id)")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	a := &app{cfg: cfg, log: log}
	defer a.close()
	for _, c := range cfg.Agents {
		if *only != "" && c.ID != *only {
			continue
		}
		ag := &agent{ID: c.ID, cfg: c, app: a}
		if err := a.setupTools(ctx, ag); err != nil {
			log.Error("tools", "agent", c.ID, "err", err)
			return exitFail
		}
		if len(cfg.Agents) > 1 {
			fmt.Fprintf(w, "# agent %s\n", c.ID)
		}
		for _, s := range ag.reg.Snapshot(ctx).Specs() {
			fmt.Fprintf(w, "%s\t%s\t%s\n\tparameters: %s\n", s.Name, s.Source, s.Description, s.Parameters)
		}
		writeToolHealth(w, ag)
		a.agents = append(a.agents, ag)
	}
	if len(a.agents) == 0 {
		fmt.Fprintf(stderr, "agentik tools: no agent %q in the configuration\n", *only)
		return exitConfig
	}
	return exitOK
}
