package config

// AuthConfig configures bearer-token authentication and per-principal limits.
type AuthConfig struct {
	Tokens             string // AGENTIK_AUTH_TOKENS: principal:token,… (secret)
	TokensFile         string // AGENTIK_AUTH_TOKENS_FILE: one principal:token per line; reloaded on SIGHUP
	Mode               string // AGENTIK_AUTH: "optional" (open without tokens) or "required"
	MaxConcurrentTurns int    // AGENTIK_MAX_CONCURRENT_TURNS per principal; 0 = unlimited
	MessagesPerMinute  int    // AGENTIK_MESSAGES_PER_MINUTE per principal; 0 = unlimited
}

func (c *AuthConfig) read(r *reader) {
	c.Mode = "optional"
	r.str("AGENTIK_AUTH_TOKENS", &c.Tokens)
	r.str("AGENTIK_AUTH_TOKENS_FILE", &c.TokensFile)
	r.oneOf("AGENTIK_AUTH", &c.Mode, "optional", "required")
	r.integer("AGENTIK_MAX_CONCURRENT_TURNS", &c.MaxConcurrentTurns, 0, 1_000_000)
	r.integer("AGENTIK_MESSAGES_PER_MINUTE", &c.MessagesPerMinute, 0, 1_000_000)
	if c.Mode == "required" && c.Tokens == "" && c.TokensFile == "" {
		r.bad("AGENTIK_AUTH", "required", "needs AGENTIK_AUTH_TOKENS or AGENTIK_AUTH_TOKENS_FILE")
	}
}

// Enabled reports whether any tokens are configured.
func (c AuthConfig) Enabled() bool { return c.Tokens != "" || c.TokensFile != "" }
