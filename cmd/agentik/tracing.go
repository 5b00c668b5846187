package main

import (
	"context"
	"net/http"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/internal/httpx"
	"github.com/agentik/agentik/telemetry"
	"go.opentelemetry.io/otel"
)

// traceShutdownTimeout bounds the export of the spans still buffered at
// shutdown.
const traceShutdownTimeout = 5 * time.Second

// setupTracing starts OpenTelemetry traces when the OTEL_* environment
// asks for them (docs/observability.md); otherwise a.tracing stays nil and
// nothing traces. The buffered spans are exported when the process stops.
func (a *app) setupTracing(ctx context.Context) error {
	t, err := telemetry.NewTracing(ctx, getenvOr(a.getenv), versionString())
	if err != nil || t == nil {
		return err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { a.log.Warn("traces", "err", err) }))
	a.tracing = t
	a.onClose = append(a.onClose, func() {
		sctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
		defer cancel()
		if err := t.Shutdown(sctx); err != nil {
			a.log.Warn("export the last spans", "err", err)
		}
	})
	a.log.Info("tracing on: spans exported over OTLP/HTTP")
	return nil
}

// tracer is what an agent's engine traces with: nil when tracing is off.
func (a *app) tracer(c config.Agent, info agentik.AgentInfo) agentik.Tracer {
	provider := telemetry.ProviderOpenAI
	if c.Backend == config.BackendDemo {
		provider = "agentik.demo"
	}
	return a.tracing.Agent(info, provider)
}

// wrapTransport is how outgoing HTTP requests of tool sources carry the
// trace context of their call (nil when tracing is off).
func (a *app) wrapTransport() func(http.RoundTripper) http.RoundTripper {
	if a.tracing == nil {
		return nil
	}
	return a.tracing.Transport
}

// httpClient is the client of A2A calls: pooled for concurrent calls, with
// the trace context when tracing is on.
func (a *app) httpClient() *http.Client {
	return &http.Client{Transport: a.tracing.Transport(httpx.PooledTransport())}
}
