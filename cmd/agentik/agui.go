package main

import (
	"net/http"
	"strings"

	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/edge"
)

// buildAGUI is ag's AG-UI door: POST {path}, behind the edge (the default
// agent's also at AGENTIK_AGUI_PATH). Its one handler serves both paths: it
// serialises the runs of one thread.
func buildAGUI(a *app, ag *agent) (*door, error) {
	c := a.cfg.AGUI
	h := agui.NewHandler(ag.eng, agui.Options{
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		IfBusy:       ifBusy(ag, c.IfBusy),
		OnDisconnect: c.OnDisconnect,
		Logger:       a.log,
	})
	return &door{mount: func(mux *http.ServeMux, _, path string) {
		mux.Handle("POST /"+strings.Trim(path, "/"), a.edge.Guard(asFacade("agui", h), edge.Route{Agent: ag.ID}))
	}}, nil
}
