package config

import (
	"strings"
	"time"
)

// HTTPConfig configures the HTTP edge every facade sits behind (package
// edge, which takes these values as they are: they are checked here).
type HTTPConfig struct {
	// CORSOrigins are the exact origins whose browser pages may call the
	// HTTP facades cross-origin (native API, AG-UI, A2A, MCP); none by
	// default.
	CORSOrigins []string // AGENTIK_CORS_ORIGINS: comma-separated, e.g. https://app.example.com
	// BodyTimeout bounds the reading of one request body: a client that
	// sends its body slower is cut off with 408.
	BodyTimeout time.Duration // AGENTIK_BODY_TIMEOUT
}

// DefaultBodyTimeout is the default of AGENTIK_BODY_TIMEOUT (the edge's
// own default when it is given none).
const DefaultBodyTimeout = 60 * time.Second

func (c *HTTPConfig) read(r *reader) {
	*c = HTTPConfig{BodyTimeout: DefaultBodyTimeout}
	if s := r.getenv("AGENTIK_CORS_ORIGINS"); strings.TrimSpace(s) != "" {
		origins, err := parseOrigins(s)
		if err != nil {
			r.bad("AGENTIK_CORS_ORIGINS", s, err.Error())
		}
		c.CORSOrigins = origins
	}
	r.duration("AGENTIK_BODY_TIMEOUT", &c.BodyTimeout)
}

// parseOrigins reads a comma-separated list of exact origins
// (scheme://host[:port]); the error names the first invalid entry.
func parseOrigins(s string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(s, ",") {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		if !validOrigin(o) {
			return nil, &originError{o}
		}
		out = append(out, o)
	}
	return out, nil
}

type originError struct{ origin string }

func (e *originError) Error() string {
	return "invalid origin " + e.origin + ": want scheme://host[:port] such as https://app.example.com, without path or wildcard"
}

func validOrigin(o string) bool {
	scheme, host, ok := strings.Cut(o, "://")
	if !ok || (scheme != "http" && scheme != "https") || host == "" {
		return false
	}
	return !strings.ContainsAny(host, "/?#*@ ")
}
