package openaiapi

import (
	"testing"

	"github.com/agentik/agentik"
)

// FuzzDecodeChat: any body either decodes into a request the door can
// act on or is refused with a client error; never a panic, never an
// internal error.
func FuzzDecodeChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"n":2}`,
		`{"model":"m","messages":[{"role":"tool","tool_call_id":"c","content":null}],"tools":[{"type":"function","function":{"name":"x","parameters":[]}}]}`,
		`{"messages":"x"}`, `[]`, `{"model":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeChat(b)
		if err != nil {
			if code := agentik.ErrorCode(err); code == agentik.EInternal {
				t.Fatalf("internal error for %q: %v", b, err)
			}
			return
		}
		if len(req.Messages) == 0 {
			t.Fatalf("accepted without messages: %q", b)
		}
		for _, m := range req.Messages {
			if _, err := contentOf(m.Content, "content"); err != nil && agentik.ErrorCode(err) == agentik.EInternal {
				t.Fatalf("content: %v", err)
			}
		}
	})
}

// FuzzDecodeResponse: the same for a Responses request and its input.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"model":"m","input":[{"type":"mcp_approval_response","approval_request_id":"mcpr_x","approve":true}],"conversation":{"id":"c"}}`,
		`{"model":"m","input":[{"type":"web_search_call"}],"tools":[{"type":"web_search"}]}`,
		`{"input":null}`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeResponse(b)
		if err != nil {
			if agentik.ErrorCode(err) == agentik.EInternal {
				t.Fatalf("internal error for %q: %v", b, err)
			}
			return
		}
		if len(req.items) == 0 {
			t.Fatalf("accepted without input: %q", b)
		}
		if _, ok := parseRespID(req.PreviousResponseID); ok && req.conv != "" {
			t.Fatalf("both previous_response_id and conversation accepted: %q", b)
		}
	})
}

// FuzzRespID: a response id parses back into the key it was made from,
// and nothing else parses into a key that prints differently.
func FuzzRespID(f *testing.F) {
	k := respKey{conv: agentik.NewID(), turn: agentik.NewID(), fromSeq: 3, cursor: 17}
	f.Add(k.id())
	f.Add("resp_x_y_1_2")
	f.Fuzz(func(t *testing.T, s string) {
		key, ok := parseRespID(s)
		if !ok {
			return
		}
		if again, ok := parseRespID(key.id()); !ok || again != key {
			t.Fatalf("%q parses to %+v, which prints %q", s, key, key.id())
		}
	})
}
