package main

import (
	"context"
	"net/http"

	"github.com/agentik/agentik/console"
	"github.com/agentik/agentik/edge"
)

// mountConsole serves the web console at / (exactly) and its assets under
// /console/. The page needs no token to load; it signs in with the native
// API, which it uses like any other client.
func (a *app) mountConsole(ctx context.Context) error {
	console.New().Mount(a.mux, func(h http.Handler) http.Handler {
		return a.edge.Guard(h, edge.Route{Access: edge.Unauthenticated})
	})
	return nil
}
