package main

import (
	"context"

	"github.com/agentik/agentik/agui"
)

// mountAGUI serves the AG-UI facade at AGENTIK_AGUI_PATH (POST, behind the
// same authentication as the native API).
func (a *app) mountAGUI(ctx context.Context) error {
	c := a.cfg.AGUI
	if !c.Enabled {
		return nil
	}
	agui.Mount(a.mux, c.Path, a.eng, agui.Options{
		MaxBodyBytes: a.cfg.MaxBodyBytes,
		KeepAlive:    a.cfg.KeepAlive,
		IfBusy:       c.IfBusy,
		OnDisconnect: c.OnDisconnect,
		Authenticate: a.auth,
		Logger:       a.log,
	})
	a.log.Info("AG-UI facade mounted", "path", c.Path)
	return nil
}
