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

// mountMetrics serves GET /metrics: on the main port behind an admin
// principal (public with AGENTIK_METRICS_PUBLIC=on, or when the server is
// open anyway), and on AGENTIK_METRICS_ADDR unauthenticated.
func (a *app) mountMetrics(ctx context.Context) error {
	a.metrics.GaugeFunc("agentik_approvals_pending", "Tool calls waiting for a person's answer in the conversations this process holds.",
		func() float64 {
			n := 0
			for _, ag := range a.agents {
				n += len(ag.eng.PendingApprovals())
			}
			return float64(n)
		})
	h := a.metrics.Handler()
	if a.cfg.Obs.MetricsPublic || a.edge.Open() {
		a.mux.Handle("GET /metrics", h)
	} else {
		a.mux.Handle("GET /metrics", a.adminOnly(h))
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
	mux.Handle("GET /metrics", h)
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
