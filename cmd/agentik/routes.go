package main

import (
	"net/http"
	"strings"

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
	a.mountOAuth(mux)                      // /.well-known/oauth-*, /oauth/…: MCP clients sign in (mcpoauth.go)
	for _, rt := range []struct {
		pattern string
		h       http.Handler
	}{
		{"GET /agents", a.edge.Guard(http.HandlerFunc(a.listAgents), edge.Route{})}, // the caller's agents (doors.go)
		{"GET /metrics", a.metricsRoute()},                                          // an admin's, or public (metrics.go)
		{"GET /admin/turns", a.adminOnly(http.HandlerFunc(a.adminTurns))},           // admin API (admin.go)
		{"POST /admin/turns/{reply_to}/cancel", a.adminOnly(http.HandlerFunc(a.adminCancel))},
		{"GET /admin/stats", a.adminOnly(http.HandlerFunc(a.adminStats))},
	} {
		mux.Handle(rt.pattern, rt.h)
	}
	return a.openDoors(mux)
}

// public puts h behind the edge for anyone: the page needs no token to load.
func (a *app) public(h http.Handler) http.Handler {
	return a.edge.Guard(h, edge.Route{Access: edge.Unauthenticated})
}

// A wirePath is where a door answers and how it refuses a request no route
// takes there (openDoors): nil refuse is the native JSON error body.
type wirePath struct {
	path   string
	refuse refusal
}

// A refusal answers status (404, 405) with msg in a door's wire format.
type refusal func(w http.ResponseWriter, status int, msg string)

// unrouted wraps the mux: what the mux itself would answer in plain text
// (an unknown path, a method the path does not take: "404 page not
// found") is answered in the error envelope of the wire format the path
// belongs to, the longest door path that holds it; the native JSON error
// body elsewhere. A 405 keeps its Allow header. The native API's catch-all
// under an agent's prefix does not answer for the doors mounted below it
// (/agents/{id}/a2a/…): that door's format does.
func (a *app) unrouted(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wp := a.doorAt(r.URL.Path)
		if _, pattern := mux.Handler(r); pattern != "" && !a.shadows(pattern, wp) {
			mux.ServeHTTP(w, r)
			return
		}
		status, msg := http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/agents/") {
			msg = "no such agent or endpoint: " + r.Method + " " + r.URL.Path
		}
		if allow := a.allowed(mux, r, wp); allow != "" {
			w.Header().Set("Allow", allow)
			status, msg = http.StatusMethodNotAllowed, r.Method+" is not allowed here; use "+allow
		}
		refuse := wp.refuse
		if refuse == nil {
			refuse = nativeRefusal
		}
		refuse(w, status, msg)
	})
}

// doorAt is the door path that holds path, the longest; the zero
// wirePath when none does.
func (a *app) doorAt(path string) wirePath {
	var best wirePath
	for _, wp := range a.wires {
		if (path == wp.path || strings.HasPrefix(path, wp.path+"/")) && len(wp.path) > len(best.path) {
			best = wp
		}
	}
	return best
}

// shadows reports whether pattern, a route without a method that ends in
// "/" above wp's path (the native API's catch-all at an agent's prefix),
// took a request that belongs to wp's door.
func (a *app) shadows(pattern string, wp wirePath) bool {
	return !strings.Contains(pattern, " ") && strings.HasSuffix(pattern, "/") && len(pattern) <= len(wp.path)
}

// probeMethods are the methods a 405's Allow may name.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed is the Allow header of a request no route takes: the methods
// some route of its path takes ("" for none: a 404).
func (a *app) allowed(mux *http.ServeMux, r *http.Request, wp wirePath) string {
	var allow []string
	for _, m := range probeMethods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && !a.shadows(pattern, wp) {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

// nativeRefusal is the native API's JSON error body.
func nativeRefusal(w http.ResponseWriter, status int, msg string) {
	code := edge.CodeMethodNotAllowed
	if status != http.StatusMethodNotAllowed {
		code = agentik.ENotFound
	}
	edge.WriteJSON(w, status, edge.ErrorBody{Error: edge.ErrorDetail{Code: code, Message: msg}})
}

// rpcRefusal is a JSON-RPC 2.0 error response without an id (A2A, MCP):
// the request is not one the endpoint takes.
func rpcRefusal(w http.ResponseWriter, status int, msg string) {
	edge.WriteJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32600, "message": msg}})
}
