package main

import (
	"context"
	"strings"

	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/edge"
)

// mountAGUI serves the AG-UI facade at AGENTIK_AGUI_PATH (POST, behind the
// same authentication as the native API).
func (a *app) mountAGUI(ctx context.Context) error {
	c := a.cfg.AGUI
	if !c.Enabled {
		return nil
	}
	h := agui.NewHandler(a.eng, agui.Options{
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		IfBusy:       c.IfBusy,
		OnDisconnect: c.OnDisconnect,
		Logger:       a.log,
	})
	a.mux.Handle("POST /"+strings.Trim(c.Path, "/"), a.edge.Guard(h, edge.Route{}))
	a.log.Info("AG-UI facade mounted", "path", c.Path)
	return nil
}
