package main

import (
	"context"
	"net/http"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/langgraph"
)

// buildLangGraph is ag's Agent Protocol / LangGraph API door, behind the
// edge: at /agents/{id}/langgraph it serves ag alone; the default agent's
// door at AGENTIK_LANGGRAPH_PATH serves every agent the caller may use,
// the default first (each an assistant there).
func buildLangGraph(a *app, ag *agent) (*door, error) {
	c := a.cfg.LangGraph
	opts := langgraph.Options{
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		IfBusy:       ifBusy(ag, c.IfBusy),
		Logger:       a.log,
		Memory:       a.memoryOf,
		Schedules:    a.schedulesOf,
	}
	one := opts
	one.Agents = func(context.Context) []agentik.Agent { return []agentik.Agent{ag.eng} }
	single := langgraph.New(one)
	var all *langgraph.Handler
	if ag == a.agents[0] {
		every := opts
		every.Agents = a.allowedAgents
		all = langgraph.New(every)
	}
	return &door{mount: func(mux *http.ServeMux, prefix, path string) {
		h, rt := single, edge.Route{Access: edge.Stream, Agent: ag.ID}
		if prefix == "" {
			h, rt = all, edge.Route{Access: edge.Stream}
		}
		h.Mount(mux, path, func(next http.Handler) http.Handler {
			return a.edge.Guard(asFacade("langgraph", next), rt)
		})
	}}, nil
}

// allowedAgents are the engines of the agents the caller may use, the
// default first.
func (a *app) allowedAgents(ctx context.Context) []agentik.Agent {
	p := agentik.PrincipalFrom(ctx)
	var out []agentik.Agent
	for _, ag := range a.agents {
		if a.edge.Allows(p, ag.ID) {
			out = append(out, ag.eng)
		}
	}
	return out
}

// memoryOf is agent id's memory blocks (nil: memory is off for it), the
// LangGraph door's store API.
func (a *app) memoryOf(id string) agentik.Memory {
	for _, ag := range a.agents {
		if ag.ID == id {
			return ag.memoryAPI()
		}
	}
	return nil
}

// schedulesOf is agent id's schedules API (nil: none), the LangGraph
// door's crons.
func (a *app) schedulesOf(id string) agentik.Schedules {
	for _, ag := range a.agents {
		if ag.ID == id && ag.schedules != nil {
			return ag.schedules
		}
	}
	return nil
}
