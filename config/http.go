package config

import (
	"strings"
	"time"

	"github.com/agentik/agentik/edge"
)

// HTTPConfig configures the HTTP edge every facade sits behind (package edge).
type HTTPConfig struct {
	// CORSOrigins are the exact origins whose browser pages may call the
	// HTTP facades cross-origin (native API, AG-UI, A2A, MCP); none by
	// default.
	CORSOrigins []string // AGENTIK_CORS_ORIGINS: comma-separated, e.g. https://app.example.com
	// BodyTimeout bounds the reading of one request body: a client that
	// sends its body slower is cut off with 408.
	BodyTimeout time.Duration // AGENTIK_BODY_TIMEOUT
}

func (c *HTTPConfig) read(r *reader) {
	*c = HTTPConfig{BodyTimeout: edge.DefaultBodyTimeout}
	if s := r.getenv("AGENTIK_CORS_ORIGINS"); strings.TrimSpace(s) != "" {
		origins, err := edge.ParseOrigins(s)
		if err != nil {
			r.bad("AGENTIK_CORS_ORIGINS", s, err.Error())
		}
		c.CORSOrigins = origins
	}
	r.duration("AGENTIK_BODY_TIMEOUT", &c.BodyTimeout)
}
