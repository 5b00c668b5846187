package config

import (
	"fmt"

	"github.com/agentik/agentik"
)

// ScheduleSpec is a schedule of an agent in the configuration file
// (agents[].schedules[]): made again at each start, owned by Principal.
type ScheduleSpec struct {
	Name           string
	Cron           string
	Every          string
	At             *agentik.Time
	Timezone       string
	ConversationID string
	Text           string
	IfBusy         string
	CatchUp        string
	Principal      string
	Enabled        bool
}

// WebhookSpec is a webhook of an agent in the configuration file
// (agents[].webhooks[]): it receives the events of every conversation of
// the agent.
type WebhookSpec struct {
	Name        string
	URL         string
	Events      []string
	Description string
	Secret      string // whsec_…, from secret_env or secret_file (or inline, warned about)
}

type fileSchedule struct {
	Name           string `yaml:"name"`
	Cron           string `yaml:"cron"`
	Every          string `yaml:"every"`
	At             string `yaml:"at"`
	Timezone       string `yaml:"timezone"`
	ConversationID string `yaml:"conversation_id"`
	Text           string `yaml:"text"`
	IfBusy         string `yaml:"if_busy"`
	CatchUp        string `yaml:"catch_up"`
	Principal      string `yaml:"principal"`
	Enabled        *bool  `yaml:"enabled"`
}

type fileWebhook struct {
	Name        string   `yaml:"name"`
	URL         string   `yaml:"url"`
	Events      []string `yaml:"events"`
	Description string   `yaml:"description"`
	SecretEnv   string   `yaml:"secret_env"`
	SecretFile  string   `yaml:"secret_file"`
	Secret      string   `yaml:"secret"`
}

// schedules checks and sets the entry's schedules.
func (e *agentEntry) schedules(key string) {
	seen := map[string]bool{}
	for i, f := range e.f.Schedules {
		p := fmt.Sprintf("%s[%d]", key, i)
		s := ScheduleSpec{Name: f.Name, Cron: f.Cron, Every: f.Every, Timezone: f.Timezone, ConversationID: f.ConversationID,
			Text: f.Text, IfBusy: f.IfBusy, CatchUp: f.CatchUp, Principal: f.Principal, Enabled: f.Enabled == nil || *f.Enabled}
		if s.CatchUp == "" {
			s.CatchUp = agentik.CatchUpOne
		}
		switch {
		case f.Name == "" || seen[f.Name]:
			e.bad(p+".name", "each schedule needs a name of its own")
		case f.Text == "":
			e.bad(p+".text", "the message to send is required")
		case !agentik.ValidBusyPolicy(f.IfBusy):
			e.bad(p+".if_busy", "want enqueue, interrupt or reject")
		case s.CatchUp != agentik.CatchUpOne && s.CatchUp != agentik.CatchUpNone:
			e.bad(p+".catch_up", "want one or none")
		case f.ConversationID != "" && !agentik.ValidID(f.ConversationID):
			e.bad(p+".conversation_id", "not a conversation id")
		}
		seen[f.Name] = true
		if f.At != "" {
			var at agentik.Time
			if err := at.UnmarshalJSON([]byte(`"` + f.At + `"`)); err != nil {
				e.bad(p+".at", "want an RFC 3339 time")
			}
			s.At = &at
		}
		if _, err := agentik.ParseTiming(agentik.Schedule{Cron: s.Cron, Every: s.Every, At: s.At, Timezone: s.Timezone}, 0); err != nil {
			e.bad(p, agentik.ErrorMessage(err))
		}
		e.a.Schedules = append(e.a.Schedules, s)
	}
}

// webhooks checks and sets the entry's webhooks.
func (e *agentEntry) webhooks(key string) {
	seen := map[string]bool{}
	for i, f := range e.f.Webhooks {
		p := fmt.Sprintf("%s[%d]", key, i)
		w := WebhookSpec{Name: f.Name, URL: f.URL, Events: f.Events, Description: f.Description}
		if f.Name == "" || seen[f.Name] {
			e.bad(p+".name", "each webhook needs a name of its own")
		}
		seen[f.Name] = true
		if f.URL == "" {
			e.bad(p+".url", "required")
		}
		if err := agentik.ValidateWebhookEvents(f.Events); err != nil {
			e.bad(p+".events", agentik.ErrorMessage(err))
		}
		switch {
		case btoi(f.SecretEnv != "")+btoi(f.SecretFile != "")+btoi(f.Secret != "") != 1:
			e.bad(p, "give one of secret_env, secret_file and secret (whsec_ and a base64 key)")
		case f.SecretEnv != "":
			w.Secret = e.l.fromEnv(p+".secret_env", f.SecretEnv)
		case f.SecretFile != "":
			w.Secret = e.l.readFile(p+".secret_file", e.l.path(f.SecretFile))
		default:
			w.Secret = f.Secret
			e.l.warn(p+".secret", "a webhook secret of agent "+e.f.ID+" is written in the file: prefer secret_env or secret_file")
		}
		e.a.Webhooks = append(e.a.Webhooks, w)
	}
}
