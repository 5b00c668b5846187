package main

import (
	"context"
	"net/http"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/openaiapi"
)

// buildOpenAI is ag's OpenAI-compatible door: {path}/models,
// /chat/completions, /responses…, /conversations… behind the edge, with
// errors in OpenAI's shape. Under /agents/{id}/v1 it serves ag whatever
// the request's model says; the default agent's place (AGENTIK_OPENAI_COMPAT_PATH,
// /v1) serves every agent the caller may use, chosen by model.
func buildOpenAI(a *app, ag *agent) (*door, error) {
	c := a.cfg.OpenAICompat
	opts := openaiapi.Options{
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		MaxMessages:  c.MaxMessages,
		IfBusy:       ifBusy(ag, c.IfBusy),
		KeepAlive:    a.cfg.KeepAlive,
		Logger:       a.log,
	}
	one := opts
	one.Single = true
	one.Models = func(context.Context) []openaiapi.Model { return []openaiapi.Model{{ID: ag.ID, Agent: ag.eng}} }
	single := openaiapi.NewHandler(one)
	var every *openaiapi.Handler
	if ag == a.agents[0] {
		all := opts
		all.IfBusy = c.IfBusy
		all.Models = func(ctx context.Context) []openaiapi.Model {
			p := agentik.PrincipalFrom(ctx)
			var out []openaiapi.Model
			for _, x := range a.agents {
				if x.Allows(p) {
					out = append(out, openaiapi.Model{ID: x.ID, Agent: x.eng})
				}
			}
			return out
		}
		every = openaiapi.NewHandler(all)
	}
	return &door{mount: func(mux *http.ServeMux, prefix, path string) {
		h, route := single, edge.Route{Agent: ag.ID, Refuse: openaiapi.Refuse}
		if prefix == "" {
			h, route = every, edge.Route{Refuse: openaiapi.Refuse}
		}
		openaiapi.Mount(mux, path, h, func(next http.Handler) http.Handler {
			return a.edge.Guard(asFacade("openai", next), route)
		})
	}}, nil
}
