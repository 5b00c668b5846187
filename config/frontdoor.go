package config

import "strings"

// FrontDoor holds the settings every front door mounted on the HTTP
// server shares; each such facade's configuration embeds it (AGUIConfig,
// MCPServerConfig, A2AConfig), so cfg.AGUI.Path and cfg.AGUI.FrontDoor
// both read them. For a door whose variables start with AGENTIK_X they are
// AGENTIK_X (on or off), AGENTIK_X_PATH and AGENTIK_X_IF_BUSY, read by
// reader.frontDoor.
type FrontDoor struct {
	// Enabled mounts the facade; off removes its endpoint.
	Enabled bool
	// Path is where the default agent's facade is mounted.
	Path string
	// IfBusy is the busy policy of the facade's messages when their
	// conversation has a turn running: enqueue, interrupt or reject; ""
	// for a door without a policy of its own (A2A).
	IfBusy string
}

// busyPolicies are the values of a busy policy: every facade's IF_BUSY
// variable and an agent's if_busy in the file.
var busyPolicies = []string{"enqueue", "interrupt", "reject"}

// frontDoor reads the settings of the front door whose variables start
// with env over def: env is "on" or "off", env_PATH a path to mount at,
// env_IF_BUSY a busy policy. Each mistake is reported with the variable
// that holds it.
func (r *reader) frontDoor(env string, def FrontDoor) FrontDoor {
	d := def
	enabled := "on"
	if !def.Enabled {
		enabled = "off"
	}
	r.oneOf(env, &enabled, "on", "off")
	d.Enabled = enabled == "on"
	r.str(env+"_PATH", &d.Path)
	if p := d.Path; !strings.HasPrefix(p, "/") || p == "/" || strings.ContainsAny(p, " \t{}?#") {
		r.bad(env+"_PATH", p, "want an absolute path such as "+def.Path+", without spaces, braces, ? or #")
	}
	r.busy(env+"_IF_BUSY", &d.IfBusy)
	return d
}

// busy reads the busy policy of variable v into dst.
func (r *reader) busy(v string, dst *string) { r.oneOf(v, dst, busyPolicies...) }
