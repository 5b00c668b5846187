package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/mcp"
	"github.com/agentik/agentik/postgres"
	"github.com/agentik/agentik/telemetry"
)

// observer is what the engine reports to: the metrics, or nothing.
func (a *app) observer() agentik.Observer {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
}

// isAdmin reports whether principal is one of AGENTIK_ADMINS or has
// admin: true in the configuration file (as reloaded on SIGHUP). On an
// open server (no tokens) nobody is: the admin API needs authentication.
func (a *app) isAdmin(principal string) bool {
	if a.edge.Open() || principal == "" {
		return false
	}
	admins := a.admins.Load()
	if admins == nil {
		return slices.Contains(a.cfg.AdminPrincipals(), principal)
	}
	return slices.Contains(*admins, principal)
}

// setAdmins puts the admin principals of cfg in force.
func (a *app) setAdmins(cfg config.Config) {
	admins := cfg.AdminPrincipals()
	a.admins.Store(&admins)
}

// adminOnly serves h to admin principals; anyone else gets 404, as for a
// route that does not exist.
func (a *app) adminOnly(h http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.isAdmin(agentik.PrincipalFrom(r.Context())) {
			edge.WriteError(w, r, a.log, agentik.Errorf(agentik.ENotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
	return a.edge.Guard(inner, edge.Route{Access: edge.Private})
}

// metricsRoute is GET /metrics on the main port: behind an admin
// principal, public with AGENTIK_METRICS_PUBLIC=on or when the server is
// open anyway.
func (a *app) metricsRoute() http.Handler {
	h := a.metrics.Handler()
	if a.cfg.Obs.MetricsPublic || a.edge.Open() {
		return h
	}
	return a.adminOnly(h)
}

// serveMetrics registers the series read at each scrape and serves GET
// /metrics unauthenticated on AGENTIK_METRICS_ADDR, when that is set, once
// the engines have started.
func (a *app) serveMetrics() error {
	a.metrics.GaugeFunc("agentik_approvals_pending", "Tool calls waiting for a person's answer in the conversations this process holds.",
		func() float64 {
			n := 0
			for _, ag := range a.agents {
				n += len(ag.eng.PendingApprovals())
			}
			return float64(n)
		})
	a.metrics.GaugeVecFunc("agentik_turns_queued", "Turns waiting behind the running turn of their conversation, from the store (on PostgreSQL: of every process).",
		[]string{"agent"}, a.queuedTurns)
	a.metrics.GaugeVecFunc("agentik_mcp_server_up", "1 when the MCP server is connected and its tools offered, else 0 (connecting, down, failed, disabled).",
		[]string{"agent", "server"}, a.mcpHealth(func(h mcp.ServerHealth) float64 {
			if h.State == mcp.StateUp {
				return 1
			}
			return 0
		}))
	a.metrics.GaugeVecFunc("agentik_mcp_server_tools", "Tools the MCP server offers now.",
		[]string{"agent", "server"}, a.mcpHealth(func(h mcp.ServerHealth) float64 { return float64(h.Tools) }))
	a.metrics.CounterVecFunc("agentik_mcp_server_restarts_total", "Times the MCP server was restarted or reconnected.",
		[]string{"agent", "server"}, a.mcpHealth(func(h mcp.ServerHealth) float64 { return float64(h.Restarts) }))
	if pg, ok := a.store.(*postgres.Store); ok {
		// What the database is asked, for the cluster's cost per turn
		// (docs/postgres.md): every connection of this process.
		a.metrics.CounterVecFunc("agentik_db_round_trips_total", "Round trips to PostgreSQL (a statement sent alone, a batch, a prepare): every connection of this process.",
			nil, func() []telemetry.Sample {
				rt, _ := pg.RoundTrips()
				return []telemetry.Sample{{Value: float64(rt)}}
			})
		a.metrics.CounterVecFunc("agentik_db_statements_total", "Statements sent to PostgreSQL (each of a batch counted): every connection of this process.",
			nil, func() []telemetry.Sample {
				_, st := pg.RoundTrips()
				return []telemetry.Sample{{Value: float64(st)}}
			})
	}
	addr := a.cfg.Obs.MetricsAddr
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.log.Info("metrics listening", "addr", ln.Addr().String())
	a.onStart = append(a.onStart, func() {
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Error("metrics listener", "err", err)
			}
		}()
	})
	a.onClose = append(a.onClose, func() { srv.Close(); ln.Close() })
	return nil
}

// newMetrics creates the process's series once.
func (a *app) newMetrics() *telemetry.Metrics {
	if a.metrics == nil {
		a.metrics = telemetry.NewMetrics()
	}
	return a.metrics
}

// asFacade marks the requests of h as those of a facade: the engine labels
// the event streams they open with it (agentik_subscribers).
func asFacade(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(agentik.WithFacade(r.Context(), name)))
	})
}

// timedStore is the store of an agent's engine with its Commits timed
// (agentik_store_commit_duration_seconds): the time a turn waits for its
// write, the writer's queue included. Everything else is the embedded
// Store's: what a store can do is all on the Store interface, so the
// wrapper hides nothing.
type timedStore struct {
	agentik.Store
	observe func(time.Duration)
}

func (a *app) timedStore(agent string, s agentik.Store) agentik.Store {
	if a.metrics == nil {
		return s
	}
	return timedStore{Store: s, observe: a.metrics.CommitObserver(agent)}
}

func (s timedStore) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	start := time.Now()
	evs, touched, err := s.Store.Commit(ctx, w)
	s.observe(time.Since(start))
	return evs, touched, err
}

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

// queuedTurns are the turns waiting behind a conversation's running one,
// per agent, read from the store at each scrape (on PostgreSQL: of every
// process). An agent whose store does not answer has no sample.
func (a *app) queuedTurns() []telemetry.Sample {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	out := make([]telemetry.Sample, 0, len(a.agents))
	for _, ag := range a.agents {
		open, err := ag.store.OpenTurns(ctx)
		if err != nil {
			a.log.Warn("metrics: open turns", "agent", ag.ID, "err", err)
			continue
		}
		queued := 0
		for i, m := range open { // ordered by conversation: the first of each runs
			if i > 0 && open[i-1].ConversationID == m.ConversationID {
				queued++
			}
		}
		out = append(out, telemetry.Sample{Labels: []string{ag.ID}, Value: float64(queued)})
	}
	return out
}

// mcpHealth gives one sample per configured MCP server of every agent,
// with value(h).
func (a *app) mcpHealth(value func(mcp.ServerHealth) float64) func() []telemetry.Sample {
	return func() []telemetry.Sample {
		var out []telemetry.Sample
		for _, ag := range a.agents {
			if ag.mcp == nil {
				continue
			}
			for _, h := range ag.mcp.Health() {
				out = append(out, telemetry.Sample{Labels: []string{ag.ID, h.Name}, Value: value(h)})
			}
		}
		return out
	}
}
