package config

import (
	"encoding/json"
	"net/url"
	"strings"
)

// A2AConfig configures the A2A facade and the remote A2A agents offered as
// tools. Its variables are read here.
type A2AConfig struct {
	// FrontDoor: AGENTIK_A2A, on (default) or off, serves the facade;
	// AGENTIK_A2A_PATH is the JSON-RPC endpoint's path, default /a2a. A2A
	// has no busy policy (IfBusy is ""). Both variables are older than
	// reader.frontDoor and keep their wider syntax: AGENTIK_A2A also takes
	// true, false, 1 and 0, and the path may hold a tab, ? or #.
	FrontDoor

	Port        int        // AGENTIK_A2A_PORT: also serve card + endpoint on this port (0: no)
	PublicURL   string     // AGENTIK_A2A_PUBLIC_URL: absolute endpoint URL written into the card
	Name        string     // AGENTIK_A2A_NAME: card name (default: the agent's)
	Description string     // AGENTIK_A2A_DESCRIPTION: card description
	Skills      []A2ASkill // AGENTIK_A2A_SKILLS: JSON array of skills for the card

	Agents      []string // AGENTIK_A2A_AGENTS: base URLs of remote agents
	AgentTokens []string // AGENTIK_A2A_AGENT_TOKENS: bearer tokens, same order ("" for none)
}

// DefaultA2APath is where the A2A facade's JSON-RPC endpoint is mounted.
const DefaultA2APath = "/a2a"

// A2ASkill is one skill of the agent card.
type A2ASkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

func (c *A2AConfig) read(r *reader) {
	c.FrontDoor = FrontDoor{Enabled: true, Path: DefaultA2APath}
	switch strings.ToLower(strings.TrimSpace(r.getenv("AGENTIK_A2A"))) {
	case "", "on", "true", "1":
	case "off", "false", "0":
		c.Enabled = false
	default:
		r.bad("AGENTIK_A2A", r.getenv("AGENTIK_A2A"), "want on or off")
	}
	r.str("AGENTIK_A2A_PATH", &c.Path)
	if !strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, " {}") || c.Path == "/" {
		r.bad("AGENTIK_A2A_PATH", c.Path, "want a path such as /a2a")
	}
	r.integer("AGENTIK_A2A_PORT", &c.Port, 0, 65535)
	r.str("AGENTIK_A2A_PUBLIC_URL", &c.PublicURL)
	if c.PublicURL != "" && !httpURL(c.PublicURL) {
		r.bad("AGENTIK_A2A_PUBLIC_URL", c.PublicURL, "want an absolute http:// or https:// URL of the JSON-RPC endpoint")
	}
	r.str("AGENTIK_A2A_NAME", &c.Name)
	r.str("AGENTIK_A2A_DESCRIPTION", &c.Description)
	if s := r.getenv("AGENTIK_A2A_SKILLS"); s != "" {
		if err := json.Unmarshal([]byte(s), &c.Skills); err != nil {
			r.bad("AGENTIK_A2A_SKILLS", "", `want a JSON array such as [{"id":"search","name":"Search","description":"…","tags":["web"]}]`)
		}
		for _, sk := range c.Skills {
			if sk.ID == "" || sk.Name == "" || sk.Description == "" {
				r.bad("AGENTIK_A2A_SKILLS", "", "every skill needs id, name and description")
				break
			}
		}
	}
	r.list("AGENTIK_A2A_AGENTS", &c.Agents)
	for _, u := range c.Agents {
		if !httpURL(u) {
			r.bad("AGENTIK_A2A_AGENTS", u, "want comma-separated http:// or https:// base URLs")
		}
	}
	if s := r.getenv("AGENTIK_A2A_AGENT_TOKENS"); s != "" {
		for _, t := range strings.Split(s, ",") {
			c.AgentTokens = append(c.AgentTokens, strings.TrimSpace(t))
		}
		if len(c.AgentTokens) > len(c.Agents) {
			r.bad("AGENTIK_A2A_AGENT_TOKENS", "", "more tokens than AGENTIK_A2A_AGENTS entries")
		}
	}
}

// AgentToken returns the bearer token for the i-th remote agent ("" if none).
func (c A2AConfig) AgentToken(i int) string {
	if i < len(c.AgentTokens) {
		return c.AgentTokens[i]
	}
	return ""
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
