package agui

import (
	"encoding/json"
	"testing"

	"github.com/agentik/agentik"
)

// FuzzDecodeInput: the RunAgentInput decoder never panics, refuses with a
// 4xx code only, and what it accepts is something the core can take.
func FuzzDecodeInput(f *testing.F) {
	for _, seed := range []string{
		`{"threadId":"thread-1","runId":"run-1","protocolVersion":"1.0","state":{},"messages":[{"id":"u1","role":"user","content":"What's the weather in Paris?"}],"tools":[{"name":"get_weather","description":"Get weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"context":[{"description":"user locale","value":"en-GB"}],"forwardedProps":{"scenario":"ok"}}`,
		`{"threadId":"t","runId":"r","messages":[]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":[{"type":"binary","mimeType":"image/png","data":"iVBORw0KGgo="}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"a1","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"t1","role":"tool","toolCallId":"c1","content":"ok","error":"boom"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"reasoning","content":"hm"},{"id":"y","role":"activity","activityType":"a","content":{}}],"resume":[{"interruptId":"i","status":"resolved"}]}`,
		`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"call_1","status":"resolved","payload":{"approved":true,"editedArgs":{"to":"x"}}},{"interruptId":"call_2","status":"cancelled","metadata":{}}]}`,
		`{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"resolved"},{"interruptId":"a","status":"cancelled"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":""}]}`,
		`{"threadId":"t","runId":"r","messages":null}`,
		`{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"a"},{"name":"a"}]}`,
		`{"threadId":"t","runId":"r","messages":[],"state":{"count":1,"items":["a",{"b":null}]}}`,
		`{"threadId":"t","runId":"r","messages":[],"state":[1]}`,
		`{"threadId":"t","runId":"r","messages":[],"state":null}`,
		`[1,2]`, `null`, `"x"`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := DecodeInput(b)
		if err != nil {
			code := agentik.ErrorCode(err)
			if code != agentik.EMalformed && code != agentik.EInvalid && code != agentik.ETooLarge {
				t.Fatalf("code %q for %q", code, b)
			}
			if agentik.ErrorMessage(err) == "" {
				t.Fatal("empty message")
			}
			return
		}
		if in.ThreadID == "" || in.RunID == "" {
			t.Fatalf("accepted without ids: %q", b)
		}
		if in.State != nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(in.State, &m); err != nil || len(m) == 0 {
				t.Fatalf("state %q to set is no object with members: %v", in.State, err)
			}
		}
		for _, m := range in.Messages {
			if m.ID == "" {
				t.Fatalf("message without id: %q", b)
			}
			switch m.Role {
			case RoleUser:
				if err := agentik.ValidateContent(m.Content); err != nil {
					t.Fatalf("accepted user content the core refuses: %v", err)
				}
			case RoleTool:
				if m.ToolCallID == "" {
					t.Fatalf("tool message without call id: %q", b)
				}
				for _, p := range m.Content {
					if err := p.Validate(); err != nil {
						t.Fatalf("accepted tool content the core refuses: %v", err)
					}
				}
			}
		}
		seen := map[string]bool{}
		for _, r := range in.Resume {
			if r.InterruptID == "" || seen[r.InterruptID] || (r.Status != ResumeResolved && r.Status != ResumeCancelled) {
				t.Fatalf("accepted resume entry %+v", r)
			}
			seen[r.InterruptID] = true
			// Its payload decodes to a valid resolution or is refused 422.
			if res, err := resolutionOfResume(r); err == nil {
				if err := res.Validate(); err != nil {
					t.Fatalf("resolution %+v: %v", res, err)
				}
			} else if agentik.ErrorCode(err) != agentik.EInvalid {
				t.Fatalf("resume %+v: code %q", r, agentik.ErrorCode(err))
			}
		}
		for _, m := range in.Messages {
			if m.Role != RoleTool {
				continue
			}
			if _, err := resolutionOfToolMessage(m); err != nil && agentik.ErrorCode(err) != agentik.EInvalid {
				t.Fatalf("tool answer %+v: code %q", m, agentik.ErrorCode(err))
			}
		}
		for _, tool := range in.Tools {
			if !validToolName(tool.Name) || !json.Valid(tool.Parameters) || tool.Parameters[0] != '{' {
				t.Fatalf("accepted tool %+v", tool)
			}
		}
	})
}
