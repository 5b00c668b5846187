package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/a2a"
	"github.com/agentik/agentik/config"
	"github.com/agentik/agentik/edge"
)

// frontDoors is the table of the process's front doors: the protocols it
// speaks to clients, one row each. The table mounts every door the
// configuration turns on, lists it in GET /agents and stops it with the
// process (openDoors, hold); a row only builds its door. Its order is the
// order of the endpoints in GET /agents and of the doors' shutdown
// (docs/design.md, "Adding a front door").
var frontDoors = []frontDoor{
	{ // native REST+SSE, and GET …/tools (serve.go)
		name: "agentik", home: fixed(apiHome), build: buildAPI,
	},
	{ // AG-UI runs (agui.go)
		name: "agui", sub: "/agui", build: buildAGUI,
		on:   func(c config.Config) bool { return c.AGUI.Enabled },
		home: func(c config.Config) string { return c.AGUI.Path },
	},
	{ // A2A JSON-RPC and its agent card (a2a.go)
		name: "a2a", sub: "/a2a", build: buildA2A, more: []endpoint{{"agent_card", a2a.CardPath}}, refuse: rpcRefusal,
		on:   func(c config.Config) bool { return c.A2A.Enabled },
		home: func(c config.Config) string { return c.A2A.Path },
	},
	{ // Agent Protocol / LangGraph API (langgraph.go)
		name: "langgraph", sub: "/langgraph", build: buildLangGraph,
		on:   func(c config.Config) bool { return c.LangGraph.Enabled },
		home: func(c config.Config) string { return c.LangGraph.Path },
	},
	{ // WebSocket chat (ws.go)
		name: "ws", sub: "/ws", home: fixed(apiHome + "/ws"), build: buildWS,
	},
	{ // MCP server over Streamable HTTP (mcpserver.go)
		name: "mcp", sub: "/mcp", build: buildMCPServer, refuse: rpcRefusal,
		on:   func(c config.Config) bool { return c.MCPServer.Enabled },
		home: func(c config.Config) string { return c.MCPServer.Path },
	},
	{ // OpenAI-compatible API: every agent a model (openaicompat.go)
		name: "openai", sub: "/v1", build: buildOpenAI,
		on:   func(c config.Config) bool { return c.OpenAICompat.Enabled },
		home: func(c config.Config) string { return c.OpenAICompat.Path },
	},
	{ // IRC on a listener of its own, every agent a nick (irc.go)
		name: "irc", buildAll: buildIRC,
		on: func(c config.Config) bool { return c.IRC.Addr != "" },
	},
}

// apiHome is where the default agent's native API answers.
const apiHome = "/agentik"

// fixed is the home of a door whose default path is not configurable.
func fixed(path string) func(config.Config) string {
	return func(config.Config) string { return path }
}

// A frontDoor is one row of frontDoors. A door that serves one agent has
// build; one that serves every agent at once has buildAll and no path.
type frontDoor struct {
	// name names the door: its key in the endpoints of GET /agents.
	name string
	// on reports whether the configuration turns the door on; nil: always.
	on func(config.Config) bool
	// sub is the door's path under an agent's prefix (/agents/{id}/agui);
	// home its path for the default agent at today's paths
	// (AGENTIK_AGUI_PATH). A door without home has no HTTP path and is not
	// listed in GET /agents.
	sub  string
	home func(config.Config) string
	// more are further endpoints GET /agents lists for the door, at paths
	// under the agent's prefix (the A2A card).
	more []endpoint
	// build makes the door of one agent, once: the default agent's door
	// serves both its paths, so what it keeps per agent (AG-UI's thread
	// locks, WebSocket connections, MCP sessions) is shared by the two.
	build func(a *app, ag *agent) (*door, error)
	// refuse answers, in the door's wire format, a request under its path
	// that no route takes (an unknown path, a method the path does not
	// take); nil: the native JSON error body.
	refuse refusal
	// buildAll makes the door of every agent of the process.
	buildAll func(a *app) (*door, error)
}

// enabled reports whether cfg turns the door on.
func (f *frontDoor) enabled(cfg config.Config) bool { return f.on == nil || f.on(cfg) }

// path is where the door answers under prefix: an agent's /agents/{id},
// or "" for the default agent at today's paths.
func (f *frontDoor) path(cfg config.Config, prefix string) string {
	if prefix == "" {
		return f.home(cfg)
	}
	return prefix + f.sub
}

// A door is what a row builds: its routes and its part in the process's
// start and stop. Every field may be nil.
type door struct {
	// mount registers the door's routes at path, under an agent's prefix
	// ("" for the default agent at today's paths). It is called once per
	// place the door answers at.
	mount func(mux *http.ServeMux, prefix, path string)
	// start begins serving a listener of the door's own, once the engines
	// have started (recovered turns keep their place ahead of new ones).
	start func()
	// begin runs when the process begins to stop, before the engines
	// drain: the door stops taking new work and tells its clients.
	begin func()
	// end runs at close, after the engines have stopped, within
	// doorCloseTimeout: the door waits for its last clients, then drops
	// them.
	end func(ctx context.Context)
}

// doorCloseTimeout bounds how long a door's end waits for its clients.
const doorCloseTimeout = 5 * time.Second

// openDoors builds every front door the configuration turns on, in the
// table's order: a door of one agent for each agent, mounted under
// /agents/{id} and, for the default agent, also at today's paths; a door
// of every agent once. The first error (a listener that cannot listen)
// stops it; what was built is stopped by a.close.
func (a *app) openDoors(mux *http.ServeMux) error {
	for _, ag := range a.agents {
		for i := range frontDoors {
			f := &frontDoors[i]
			if f.build == nil || !f.enabled(a.cfg) {
				continue
			}
			d, err := f.build(a, ag)
			if err != nil {
				return err
			}
			a.hold(d)
			for _, prefix := range a.places(ag) {
				if d.mount != nil {
					d.mount(mux, prefix, f.path(a.cfg, prefix))
					a.wires = append(a.wires, wirePath{f.path(a.cfg, prefix), f.refuse})
				}
			}
		}
	}
	for i := range frontDoors {
		f := &frontDoors[i]
		if f.buildAll == nil || !f.enabled(a.cfg) {
			continue
		}
		d, err := f.buildAll(a)
		if err != nil {
			return err
		}
		a.hold(d)
	}
	return nil
}

// places are the prefixes an agent's doors answer under: its own, and ""
// (today's paths) for the default agent.
func (a *app) places(ag *agent) []string {
	if ag == a.agents[0] {
		return []string{agentPrefix(ag.ID), ""}
	}
	return []string{agentPrefix(ag.ID)}
}

// hold puts d's start and stop in the process's: start once the engines
// have started, begin before they drain (in the table's order), end at
// close (in the reverse order).
func (a *app) hold(d *door) {
	if d.start != nil {
		a.onStart = append(a.onStart, d.start)
	}
	if d.begin != nil {
		a.onShutdown = append(a.onShutdown, func(context.Context) { d.begin() })
	}
	if d.end != nil {
		a.onClose = append(a.onClose, func() {
			ctx, cancel := context.WithTimeout(context.Background(), doorCloseTimeout)
			defer cancel()
			d.end(ctx)
		})
	}
}

// agentPrefix is where every front door of an agent is mounted.
func agentPrefix(id string) string { return "/agents/" + id }

// agentEntry is one agent of GET /agents (SPEC §9).
type agentEntry struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Model       string    `json:"model"`
	Default     bool      `json:"default"`
	Endpoints   endpoints `json:"endpoints"`
}

// endpoint is one door's path in GET /agents.
type endpoint struct{ name, path string }

// endpoints encode as one JSON object, in the table's order.
type endpoints []endpoint

// MarshalJSON writes {"name":"path",…} in order.
func (es endpoints) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range es {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(e.name) // a string always encodes
		path, _ := json.Marshal(e.path)
		b.Write(name)
		b.WriteByte(':')
		b.Write(path)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// endpointsOf lists the paths of every door with a path that the
// configuration turns on, under prefix.
func (a *app) endpointsOf(prefix string) endpoints {
	var out endpoints
	for i := range frontDoors {
		f := &frontDoors[i]
		if f.home == nil || !f.enabled(a.cfg) {
			continue
		}
		out = append(out, endpoint{f.name, f.path(a.cfg, prefix)})
		for _, m := range f.more {
			out = append(out, endpoint{m.name, prefix + m.path})
		}
	}
	return out
}

// listAgents answers GET /agents: the agents the caller may use, each with
// the paths of its front doors.
func (a *app) listAgents(w http.ResponseWriter, r *http.Request) {
	principal := agentik.PrincipalFrom(r.Context())
	list := struct {
		Agents []agentEntry `json:"agents"`
	}{Agents: []agentEntry{}}
	for _, ag := range a.agents {
		if !ag.Allows(principal) {
			continue
		}
		info := ag.eng.Info()
		list.Agents = append(list.Agents, agentEntry{ID: ag.ID, Name: info.Name, Description: info.Description, Model: info.Model,
			Default: ag.Default, Endpoints: a.endpointsOf(agentPrefix(ag.ID))})
	}
	edge.WriteJSON(w, http.StatusOK, list)
}

// ifBusy is the busy policy of an agent's door: the agent's if_busy, else
// the door's own setting.
func ifBusy(ag *agent, facade string) string {
	if ag.cfg.IfBusy != "" {
		return ag.cfg.IfBusy
	}
	return facade
}
