package config

// AGUIConfig configures the AG-UI facade (POST /agui).
type AGUIConfig struct {
	// FrontDoor: AGENTIK_AGUI (on or off), AGENTIK_AGUI_PATH and
	// AGENTIK_AGUI_IF_BUSY, the busy policy of a run's message when its
	// thread has a turn running.
	FrontDoor
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
	*c = AGUIConfig{OnDisconnect: DefaultAGUIOnDisconnect}
	c.FrontDoor = r.frontDoor("AGENTIK_AGUI", FrontDoor{Enabled: true, Path: DefaultAGUIPath, IfBusy: DefaultAGUIIfBusy})
	r.oneOf("AGENTIK_AGUI_ON_DISCONNECT", &c.OnDisconnect, "interrupt", "continue")
}
