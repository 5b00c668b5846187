package config

// AuthConfig configures bearer-token authentication and the limits of what
// one principal may do (without tokens every caller is the one anonymous
// principal, so the limits hold for the whole server).
type AuthConfig struct {
	Tokens                 string // AGENTIK_AUTH_TOKENS: principal:token,… (secret)
	TokensFile             string // AGENTIK_AUTH_TOKENS_FILE: one principal:token per line; reloaded on SIGHUP
	Mode                   string // AGENTIK_AUTH: "optional" (open without tokens) or "required"
	MaxConcurrentTurns     int    // AGENTIK_MAX_CONCURRENT_TURNS per principal; 0 = unlimited
	MessagesPerMinute      int    // AGENTIK_MESSAGES_PER_MINUTE per principal; 0 = unlimited
	ConversationsPerMinute int    // AGENTIK_CONVERSATIONS_PER_MINUTE per principal; 0 = unlimited
	TemporalBytes          int64  // AGENTIK_TEMPORAL_MAX_BYTES per principal; 0 = unlimited
	TemporalBytesTotal     int64  // AGENTIK_TEMPORAL_MAX_BYTES_TOTAL for the server; 0 = unlimited
	MaxTextBytes           int    // AGENTIK_MAX_TEXT_BYTES: text of one user message
}

// Default limits: what an operator of a public server would want from the
// start. Each is configurable; 0 turns a limit off.
const (
	DefaultMaxConcurrentTurns     = 8
	DefaultMessagesPerMinute      = 60
	DefaultConversationsPerMinute = 30
	DefaultTemporalBytes          = 64 << 20
	DefaultTemporalBytesTotal     = 512 << 20
	DefaultMaxTextBytes           = 1 << 20
)

func (c *AuthConfig) read(r *reader) {
	c.Mode = "optional"
	c.MaxConcurrentTurns, c.MessagesPerMinute, c.ConversationsPerMinute = DefaultMaxConcurrentTurns, DefaultMessagesPerMinute, DefaultConversationsPerMinute
	c.TemporalBytes, c.TemporalBytesTotal, c.MaxTextBytes = DefaultTemporalBytes, DefaultTemporalBytesTotal, DefaultMaxTextBytes
	r.str("AGENTIK_AUTH_TOKENS", &c.Tokens)
	r.str("AGENTIK_AUTH_TOKENS_FILE", &c.TokensFile)
	r.oneOf("AGENTIK_AUTH", &c.Mode, "optional", "required")
	r.integer("AGENTIK_MAX_CONCURRENT_TURNS", &c.MaxConcurrentTurns, 0, 1_000_000)
	r.integer("AGENTIK_MESSAGES_PER_MINUTE", &c.MessagesPerMinute, 0, 1_000_000)
	r.integer("AGENTIK_CONVERSATIONS_PER_MINUTE", &c.ConversationsPerMinute, 0, 1_000_000)
	r.integer("AGENTIK_MAX_TEXT_BYTES", &c.MaxTextBytes, 1024, 1<<30)
	var temporal, total int = int(c.TemporalBytes), int(c.TemporalBytesTotal)
	r.integer("AGENTIK_TEMPORAL_MAX_BYTES", &temporal, 0, 1<<40)
	r.integer("AGENTIK_TEMPORAL_MAX_BYTES_TOTAL", &total, 0, 1<<40)
	c.TemporalBytes, c.TemporalBytesTotal = int64(temporal), int64(total)
	if c.Mode == "required" && c.Tokens == "" && c.TokensFile == "" {
		r.bad("AGENTIK_AUTH", "required", "needs AGENTIK_AUTH_TOKENS or AGENTIK_AUTH_TOKENS_FILE")
	}
}

// Enabled reports whether any tokens are configured.
func (c AuthConfig) Enabled() bool { return c.Tokens != "" || c.TokensFile != "" }
