package config

import "time"

// SchedulesConfig configures schedules and webhooks (SPEC §20,
// docs/schedules.md).
type SchedulesConfig struct {
	// MinInterval is the shortest interval a schedule may have.
	MinInterval time.Duration // AGENTIK_SCHEDULE_MIN_INTERVAL (default 1m)
	// Limit is the most schedules one principal may have per agent.
	Limit int // AGENTIK_SCHEDULE_LIMIT (default 100)
	// Lease is how long a claimed run may stay unfinished (its process
	// stopped) before another process takes it over.
	Lease time.Duration // AGENTIK_SCHEDULE_LEASE (default 1m)
	// Fault stops runs after their claim or their message, for the crash
	// tests only.
	Fault string // AGENTIK_SCHEDULE_FAULT: after_claim, after_send

	// WebhookLimit is the most webhooks one principal may have per agent.
	WebhookLimit int // AGENTIK_WEBHOOK_LIMIT (default 20)
	// AllowPrivate lets webhooks reach loopback, private, link-local and
	// metadata addresses.
	AllowPrivate bool // AGENTIK_WEBHOOK_ALLOW_PRIVATE=on
	// Timeout bounds one delivery attempt.
	WebhookTimeout time.Duration // AGENTIK_WEBHOOK_TIMEOUT (default 10s)
	// RetryWindow is how long after its event a delivery is retried.
	RetryWindow time.Duration // AGENTIK_WEBHOOK_RETRY_WINDOW (default 24h)
	// FirstRetry is the backoff after a first failure (doubling, with
	// jitter, up to an hour).
	FirstRetry time.Duration // AGENTIK_WEBHOOK_FIRST_RETRY (default 5s)
}

func (c *SchedulesConfig) read(r *reader) {
	*c = SchedulesConfig{MinInterval: time.Minute, Limit: 100, Lease: time.Minute, WebhookLimit: 20,
		WebhookTimeout: 10 * time.Second, RetryWindow: 24 * time.Hour, FirstRetry: 5 * time.Second}
	r.duration("AGENTIK_SCHEDULE_MIN_INTERVAL", &c.MinInterval)
	r.integer("AGENTIK_SCHEDULE_LIMIT", &c.Limit, 1, 1_000_000)
	r.duration("AGENTIK_SCHEDULE_LEASE", &c.Lease)
	r.oneOf("AGENTIK_SCHEDULE_FAULT", &c.Fault, "after_claim", "after_send")
	r.integer("AGENTIK_WEBHOOK_LIMIT", &c.WebhookLimit, 1, 100_000)
	allow := ""
	r.oneOf("AGENTIK_WEBHOOK_ALLOW_PRIVATE", &allow, "on", "off", "true", "false", "1", "0")
	c.AllowPrivate = allow == "on" || allow == "true" || allow == "1"
	r.duration("AGENTIK_WEBHOOK_TIMEOUT", &c.WebhookTimeout)
	r.duration("AGENTIK_WEBHOOK_RETRY_WINDOW", &c.RetryWindow)
	r.duration("AGENTIK_WEBHOOK_FIRST_RETRY", &c.FirstRetry)
}
