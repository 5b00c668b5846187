package main

import (
	"net/http"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/console"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/httpapi"
)

// routes is the routing table of the process: every route of its own on
// the HTTP port, one line each, then every front door of every agent from
// the table in doors.go (the native API, AG-UI, A2A, WebSocket, MCP under
// /agents/{id}/ and the default agent's at today's paths; IRC on its own
// listener). The whole mux sits behind the edge (serve); each route says
// here who may call it.
func (a *app) routes(mux *http.ServeMux) error {
	httpapi.MountHealth(mux, a.store.Ping) // GET /health, GET /health/ready: the probes
	console.New().Mount(mux, a.public)     // GET /{$}, GET /favicon.ico, GET /console/{file}: the web console; it signs in with the native API
	for _, rt := range []struct {
		pattern string
		h       http.Handler
	}{
		{"GET /agents", a.edge.Guard(http.HandlerFunc(a.listAgents), edge.Route{})}, // the caller's agents (doors.go)
		{"GET /metrics", a.metricsRoute()},                                          // an admin's, or public (metrics.go)
		{"GET /admin/turns", a.adminOnly(http.HandlerFunc(a.adminTurns))},           // admin API (admin.go)
		{"POST /admin/turns/{reply_to}/cancel", a.adminOnly(http.HandlerFunc(a.adminCancel))},
		{"GET /admin/stats", a.adminOnly(http.HandlerFunc(a.adminStats))},
		{"/agents/", http.HandlerFunc(a.noSuchAgent)}, // under /agents/, no agent's door
	} {
		mux.Handle(rt.pattern, rt.h)
	}
	return a.openDoors(mux)
}

// public puts h behind the edge for anyone: the page needs no token to load.
func (a *app) public(h http.Handler) http.Handler {
	return a.edge.Guard(h, edge.Route{Access: edge.Unauthenticated})
}

// noSuchAgent answers a path under /agents/ that no door of an agent
// serves, in the JSON error form.
func (a *app) noSuchAgent(w http.ResponseWriter, r *http.Request) {
	edge.WriteError(w, r, a.log, agentik.Errorf(agentik.ENotFound, "no such agent or endpoint: %s %s", r.Method, r.URL.Path))
}
