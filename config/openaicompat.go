package config

// OpenAICompatConfig configures the OpenAI-compatible front door (SPEC
// §16): every agent offered as a model through Chat Completions, Responses
// and Conversations, at /v1 for every agent (chosen by model) and under
// /agents/{id}/v1 for one.
type OpenAICompatConfig struct {
	// FrontDoor: AGENTIK_OPENAI_COMPAT (on or off), AGENTIK_OPENAI_COMPAT_PATH
	// (where every agent answers, chosen by model) and
	// AGENTIK_OPENAI_COMPAT_IF_BUSY, the busy policy of a request's message
	// when its conversation runs a turn.
	FrontDoor
	// MaxMessages bounds the messages of one resent Chat Completions
	// history; more is 413.
	MaxMessages int // AGENTIK_OPENAI_COMPAT_MAX_MESSAGES
}

// Defaults of OpenAICompatConfig.
const (
	DefaultOpenAICompatPath        = "/v1"
	DefaultOpenAICompatIfBusy      = "enqueue"
	DefaultOpenAICompatMaxMessages = 2048
)

func (c *OpenAICompatConfig) read(r *reader) {
	*c = OpenAICompatConfig{MaxMessages: DefaultOpenAICompatMaxMessages}
	c.FrontDoor = r.frontDoor("AGENTIK_OPENAI_COMPAT", FrontDoor{Enabled: true, Path: DefaultOpenAICompatPath, IfBusy: DefaultOpenAICompatIfBusy})
	r.integer("AGENTIK_OPENAI_COMPAT_MAX_MESSAGES", &c.MaxMessages, 1, 1<<20)
}
