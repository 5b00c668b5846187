package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/auth"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/demollm"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/mcp"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/telemetry"
	"github.com/agentik/agentik/tools"
)

// app is what serve wires together. Each tool source and facade adds itself
// in its own file (mcp.go, a2a.go, agui.go, ws.go, auth.go) through the
// setup and mount methods serve calls in order.
type app struct {
	cfg   config.Config
	log   *slog.Logger
	llm   agentik.LLM
	store agentik.Store
	reg   *tools.Registry
	mcp   *mcp.Source // nil without AGENTIK_MCP_CONFIG
	eng   *engine.Engine
	mux   *http.ServeMux
	// tokens authenticate callers (nil: open server); edge is the HTTP
	// edge every route sits behind (auth.go).
	tokens *auth.Tokens
	edge   *edge.Edge

	httpAddr string // the HTTP listener's address, once listening

	metrics *telemetry.Metrics // nil outside serve (metrics.go)

	// onStart runs once the engine has started (facades with listeners
	// of their own begin serving); onShutdown runs before the engine
	// drains (facades say goodbye to their clients); onClose runs last, in
	// reverse order (tool sources).
	onStart    []func()
	onShutdown []func(context.Context)
	onClose    []func()
}

func (a *app) close() {
	for i := len(a.onClose) - 1; i >= 0; i-- {
		a.onClose[i]()
	}
}

// newLLM builds the configured model backend.
func newLLM(cfg config.Config, log *slog.Logger) (agentik.LLM, error) {
	if cfg.Backend == config.BackendDemo {
		log.Warn("no model endpoint configured: using the offline demo backend; set OPENAI_BASE_URL (and OPENAI_API_KEY, OPENAI_MODEL) to use a real model")
		demo := demollm.New()
		demo.WordDelay = demollm.PacedWordDelay // streaming visible in the console
		return demo, nil
	}
	retries := cfg.LLMMaxRetries
	if retries == 0 {
		retries = -1 // openai.Options reads 0 as "the default"
	}
	return openai.New(openai.Options{
		BaseURL:       cfg.OpenAIBaseURL,
		APIKey:        cfg.OpenAIAPIKey,
		Model:         cfg.OpenAIModel,
		MaxRetries:    retries,
		Timeout:       cfg.LLMTimeout,
		ContextTokens: cfg.ContextTokensFor(cfg.OpenAIModel),
		ImageInput:    cfg.ImageInputFor(cfg.OpenAIModel),
		SendReasoning: cfg.ReasoningToModel,
	})
}

// setupTools builds the registry: built-in tools, then every configured source.
func (a *app) setupTools(ctx context.Context) error {
	a.reg = tools.NewRegistry(tools.CurrentTime{})
	if err := a.setupMCP(ctx); err != nil {
		return err
	}
	return a.setupA2AAgents(ctx)
}

// buildEngine opens the model, the store and the tools and builds the
// engine on them, as serve and the in-process terminal client both need.
// Everything it opens is closed by a.close.
func (a *app) buildEngine(ctx context.Context) error {
	cfg := a.cfg
	var err error
	if a.llm, err = newLLM(cfg, a.log); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	st, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	a.store = st.store
	a.onClose = append(a.onClose, st.close)
	if err := a.setupTools(ctx); err != nil {
		return err
	}
	a.eng, err = engine.New(engine.Options{
		Store:           st.store,
		Bus:             st.bus,
		Cluster:         st.coord,
		LLM:             a.llm,
		Tools:           a.reg,
		Info:            agentik.AgentInfo{ID: "agentik", Name: "Agentik", Description: "An Agentik agent", Version: versionString()},
		SystemPrompt:    cfg.SystemPrompt,
		MaxToolRounds:   cfg.MaxToolRounds,
		ToolTimeout:     cfg.ToolTimeout,
		TemporalIdle:    cfg.TemporalIdle,
		OnRestart:       cfg.OnRestart,
		Approval:        cfg.ToolApproval,
		ApprovalTimeout: cfg.ApprovalTimeout,
		ImageInput:      a.llm.Info().ImageInput,
		Logger:          a.log,
		Observer:        a.observer(),

		ContextTokens: cfg.ContextTokensFor(a.llm.Info().Name),
		SendReasoning: cfg.ReasoningToModel,
		MaxImageBytes: cfg.MaxImageBytes,

		MaxConcurrentTurns:     cfg.Auth.MaxConcurrentTurns,
		MessagesPerMinute:      cfg.Auth.MessagesPerMinute,
		ConversationsPerMinute: cfg.Auth.ConversationsPerMinute,
		TemporalBytes:          cfg.Auth.TemporalBytes,
		TemporalBytesTotal:     cfg.Auth.TemporalBytesTotal,
		MaxTextBytes:           cfg.Auth.MaxTextBytes,
	})
	return err
}

// serve runs the server until SIGTERM/SIGINT, then shuts down gracefully:
// new messages are refused, running turns get DrainTimeout to finish and are
// then closed as interrupted, streams end, the store is closed.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	a := &app{cfg: cfg, log: log}
	defer a.close()
	a.newMetrics()
	var err error
	if err := a.setupAuth(ctx); err != nil {
		return err
	}
	if err := a.buildEngine(ctx); err != nil {
		return err
	}

	a.mux = http.NewServeMux()
	httpapi.MountHealth(a.mux, a.store.Ping)
	httpapi.Mount(a.mux, "/agentik", a.eng, httpapi.Options{
		MaxBodyBytes: cfg.MaxBodyBytes,
		KeepAlive:    cfg.KeepAlive,
		Guard:        a.guard(""),
		Logger:       log,
	})
	for _, mount := range []func(context.Context) error{a.mountTools, a.mountAGUI, a.mountA2A, a.mountWS, a.mountMCPServer, a.mountIRC, a.mountConsole, a.mountMetrics, a.mountAdmin} {
		if err := mount(ctx); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler:           a.edge.Handler(a.mux),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute, // idle keep-alive connections are reaped
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	a.httpAddr = ln.Addr().String()
	// Recovery runs before serving so resumed turns keep their order ahead of
	// new messages, but after listening so a port clash fails fast.
	if err := a.eng.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	db := cfg.DBPath
	if cfg.DatabaseURL != "" {
		db = "postgres"
	}
	for _, f := range a.onStart {
		f()
	}
	log.Info("agentik listening", "addr", ln.Addr().String(), "db", db, "backend", cfg.Backend, "model", a.llm.Info().Name, "version", versionString())

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
	if err := a.eng.Shutdown(drainCtx); err != nil {
		log.Warn("engine shutdown", "err", err)
	}
	httpCtx, cancelHTTP := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelHTTP()
	if err := srv.Shutdown(httpCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}

// listTools prints every tool the model would see, with its source.
func listTools(ctx context.Context, cfg config.Config, w io.Writer, log *slog.Logger) int {
	a := &app{cfg: cfg, log: log}
	defer a.close()
	if err := a.setupTools(ctx); err != nil {
		log.Error("tools", "err", err)
		return exitFail
	}
	for _, s := range a.reg.Snapshot(ctx).Specs() {
		fmt.Fprintf(w, "%s\t%s\t%s\n\tparameters: %s\n", s.Name, s.Source, s.Description, s.Parameters)
	}
	a.writeToolHealth(w)
	return exitOK
}
