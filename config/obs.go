package config

// ObsConfig configures metrics and the admin API (docs/observability.md).
type ObsConfig struct {
	// MetricsAddr, when set (":9090"), serves GET /metrics on a listener
	// of its own, unauthenticated (bind it to a private interface).
	MetricsAddr string // AGENTIK_METRICS_ADDR
	// MetricsPublic serves GET /metrics on the main port without
	// authentication; otherwise it needs an admin principal there.
	MetricsPublic bool // AGENTIK_METRICS_PUBLIC: on/off
	// Admins are the principals that may use /admin/* and /metrics.
	Admins []string // AGENTIK_ADMINS: principal,…
}

func (c *ObsConfig) read(r *reader) {
	*c = ObsConfig{}
	r.str("AGENTIK_METRICS_ADDR", &c.MetricsAddr)
	public := ""
	r.oneOf("AGENTIK_METRICS_PUBLIC", &public, "on", "off", "true", "false", "1", "0")
	c.MetricsPublic = public == "on" || public == "true" || public == "1"
	r.list("AGENTIK_ADMINS", &c.Admins)
}
