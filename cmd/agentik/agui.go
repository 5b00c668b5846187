package main

import (
	"net/http"
	"strings"

	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/edge"
)

// mountAGUI serves an agent's AG-UI facade at POST {prefix}/agui (the
// default agent's also at AGENTIK_AGUI_PATH), behind the edge. One handler
// per agent serves both paths: it serialises the runs of one thread.
func (a *app) mountAGUI(mux *http.ServeMux, prefix string, ag *agent) {
	c := a.cfg.AGUI
	if !c.Enabled {
		return
	}
	ag.once.agui.Do(func() {
		ag.agui = agui.NewHandler(ag.eng, agui.Options{
			MaxBodyBytes: a.cfg.MaxBodyBytes,
			KeepAlive:    a.cfg.KeepAlive,
			IfBusy:       ifBusy(ag, c.IfBusy),
			OnDisconnect: c.OnDisconnect,
			Logger:       a.log,
		})
	})
	mux.Handle("POST /"+strings.Trim(a.paths(prefix).AGUI, "/"), a.edge.Guard(asFacade("agui", ag.agui), edge.Route{Agent: ag.ID}))
}
