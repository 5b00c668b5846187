package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentik/agentik"
)

// CurrentTime is the built-in current_time tool: the current time as RFC 3339
// text, in an optional IANA time zone. An unknown zone is an error result the
// model sees.
type CurrentTime struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

var _ agentik.Tool = CurrentTime{}

// Spec describes current_time.
func (CurrentTime) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{
		Name:        "current_time",
		Description: "Returns the current date and time as RFC 3339 text. Pass an IANA time zone such as Europe/Paris to get the local time there; the default is UTC.",
		Parameters:  agentik.RawJSON(`{"type":"object","properties":{"timezone":{"type":"string","description":"IANA time zone name, e.g. Europe/Paris"}}}`),
		Source:      "builtin",
	}
}

// Call answers with the current time.
func (c CurrentTime) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	var in struct {
		Timezone string `json:"timezone"`
	}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return agentik.ErrorResult("arguments must be a JSON object with an optional string field timezone"), nil
		}
	}
	loc := time.UTC
	if in.Timezone != "" {
		l, err := time.LoadLocation(in.Timezone)
		if err != nil {
			return agentik.ErrorResult("unknown time zone " + in.Timezone), nil
		}
		loc = l
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text(now().In(loc).Format(time.RFC3339))}}, nil
}
