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
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/demollm"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// newLLM builds the configured model backend.
func newLLM(cfg config.Config, log *slog.Logger) (agentik.LLM, error) {
	if cfg.Backend == config.BackendDemo {
		log.Warn("no model endpoint configured: using the offline demo backend; set OPENAI_BASE_URL (and OPENAI_API_KEY, OPENAI_MODEL) to use a real model")
		return demollm.New(), nil
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
	})
}

func newRegistry() *tools.Registry {
	return tools.NewRegistry(tools.CurrentTime{})
}

// serve runs the server until SIGTERM/SIGINT, then shuts down gracefully:
// new messages are refused, running turns get DrainTimeout to finish and are
// then closed as interrupted, streams end, the store is closed.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	llm, err := newLLM(cfg, log)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	store, err := sqlite.Open(ctx, cfg.DBPath)
	if err != nil {
		return fmt.Errorf("open database %s: %w", cfg.DBPath, err)
	}
	defer store.Close()

	eng, err := engine.New(engine.Options{
		Store:         store,
		Bus:           bus.New(),
		LLM:           llm,
		Tools:         newRegistry(),
		Info:          agentik.AgentInfo{ID: "agentik", Name: "Agentik", Description: "An Agentik agent", Version: versionString()},
		SystemPrompt:  cfg.SystemPrompt,
		MaxToolRounds: cfg.MaxToolRounds,
		ToolTimeout:   cfg.ToolTimeout,
		TemporalIdle:  cfg.TemporalIdle,
		OnRestart:     cfg.OnRestart,
		ImageInput:    llm.Info().ImageInput,
		Logger:        log,
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	httpapi.MountHealth(mux, store.Ping)
	httpapi.Mount(mux, "/agentik", eng, httpapi.Options{
		MaxBodyBytes: cfg.MaxBodyBytes,
		KeepAlive:    cfg.KeepAlive,
		Logger:       log,
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	// Recovery runs before serving so resumed turns keep their order ahead of
	// new messages, but after listening so a port clash fails fast.
	if err := eng.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	log.Info("agentik listening", "addr", ln.Addr().String(), "db", cfg.DBPath, "backend", cfg.Backend, "model", llm.Info().Name, "version", versionString())

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
	if err := eng.Shutdown(drainCtx); err != nil {
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

// listTools prints every tool the model would see.
func listTools(ctx context.Context, cfg config.Config, w io.Writer, log *slog.Logger) int {
	set := newRegistry().Snapshot(ctx)
	for _, s := range set.Specs() {
		fmt.Fprintf(w, "%s\t%s\t%s\n\tparameters: %s\n", s.Name, s.Source, s.Description, s.Parameters)
	}
	return exitOK
}
