package httpapi

import (
	"testing"

	"github.com/agentik/agentik"
)

// FuzzDecodeSchedule: any body decodes or is refused with a code of the
// vocabulary, never a panic; what decodes has valid content.
func FuzzDecodeSchedule(f *testing.F) {
	for _, s := range []string{`{"every":"1s","content":[{"type":"text","text":"x"}]}`, `{"cron":"0 8 * * *","timezone":"Europe/Paris"}`,
		`{"at":"2030-01-01T00:00:00Z"}`, `{"enabled":false}`, `{"content":[{"type":"image"}]}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeSchedule(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid && c != agentik.ETooLarge {
				t.Fatalf("code %q: %v", c, err)
			}
			return
		}
		if req.Content != nil && agentik.ValidateContent(req.Content) != nil {
			t.Fatal("invalid content passed")
		}
		if req.Cron != nil || req.Every != nil || req.At != nil {
			agentik.ParseTiming(agentik.Schedule{Cron: deref(req.Cron), Every: deref(req.Every), At: req.At, Timezone: deref(req.Timezone)}, 0) //nolint:errcheck // must not panic
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// FuzzDecodeWebhook: any body decodes to a webhook with a URL and known
// events, or is refused with a code of the vocabulary.
func FuzzDecodeWebhook(f *testing.F) {
	for _, s := range []string{`{"url":"https://example.com","events":["turn.completed"]}`, `{"url":"x","events":[]}`, `{"events":["a","a"]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeWebhook(b)
		if err != nil {
			if c := agentik.ErrorCode(err); c != agentik.EMalformed && c != agentik.EInvalid {
				t.Fatalf("code %q: %v", c, err)
			}
			return
		}
		if req.URL == "" || agentik.ValidateWebhookEvents(req.Events) != nil {
			t.Fatalf("passed: %+v", req)
		}
	})
}
