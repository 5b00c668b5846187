package config

// LangGraphConfig configures the Agent Protocol / LangGraph API front door
// (SPEC §17).
type LangGraphConfig struct {
	// FrontDoor: AGENTIK_LANGGRAPH (on or off), AGENTIK_LANGGRAPH_PATH and
	// AGENTIK_LANGGRAPH_IF_BUSY, the busy policy of a run that names no
	// multitask_strategy.
	FrontDoor
}

// Defaults of LangGraphConfig.
const (
	DefaultLangGraphPath   = "/langgraph"
	DefaultLangGraphIfBusy = "enqueue"
)

func (c *LangGraphConfig) read(r *reader) {
	c.FrontDoor = r.frontDoor("AGENTIK_LANGGRAPH", FrontDoor{Enabled: true, Path: DefaultLangGraphPath, IfBusy: DefaultLangGraphIfBusy})
}
