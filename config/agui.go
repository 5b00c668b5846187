package config

import "strings"

// AGUIConfig configures the AG-UI facade (POST /agui).
type AGUIConfig struct {
	// Enabled mounts the facade; off removes the endpoint.
	Enabled bool // AGENTIK_AGUI: on or off
	// Path is where the facade is mounted.
	Path string // AGENTIK_AGUI_PATH
	// IfBusy is the busy policy of a run's message when its thread has a
	// turn running.
	IfBusy string // AGENTIK_AGUI_IF_BUSY: enqueue, interrupt, reject
	// OnDisconnect is what a client disconnect before RUN_FINISHED does to
	// the run's turn: interrupt it (what AG-UI's abortRun means) or let it
	// finish (the answer is then in the thread's history).
	OnDisconnect string // AGENTIK_AGUI_ON_DISCONNECT: interrupt or continue
}

// Defaults of AGUIConfig.
const (
	DefaultAGUIPath         = "/agui"
	DefaultAGUIIfBusy       = "enqueue"
	DefaultAGUIOnDisconnect = "interrupt"
)

func (c *AGUIConfig) read(r *reader) {
	*c = AGUIConfig{Enabled: true, Path: DefaultAGUIPath, IfBusy: DefaultAGUIIfBusy, OnDisconnect: DefaultAGUIOnDisconnect}
	enabled := "on"
	r.oneOf("AGENTIK_AGUI", &enabled, "on", "off")
	c.Enabled = enabled == "on"
	r.str("AGENTIK_AGUI_PATH", &c.Path)
	if p := c.Path; !strings.HasPrefix(p, "/") || p == "/" || strings.ContainsAny(p, " \t{}?#") {
		r.bad("AGENTIK_AGUI_PATH", p, "want an absolute path such as /agui, without spaces, braces, ? or #")
	}
	r.oneOf("AGENTIK_AGUI_IF_BUSY", &c.IfBusy, "enqueue", "interrupt", "reject")
	r.oneOf("AGENTIK_AGUI_ON_DISCONNECT", &c.OnDisconnect, "interrupt", "continue")
}
