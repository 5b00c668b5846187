package config

import "slices"

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

// AdminPrincipals are the principals of AGENTIK_ADMINS and those of the
// file's auth.tokens with admin: true.
func (c Config) AdminPrincipals() []string {
	out := append([]string(nil), c.Obs.Admins...)
	for _, t := range c.Tokens {
		if t.Admin && !slices.Contains(out, t.Principal) {
			out = append(out, t.Principal)
		}
	}
	return out
}
