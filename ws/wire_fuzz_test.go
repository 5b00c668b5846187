package ws

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeClientMessage: any frame decodes to a message or an *Error with
// one of the stable codes; never a panic. A decoded message re-encodes to a
// frame that decodes to the same message.
func FuzzDecodeClientMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"USER_MESSAGE","text":"hi"}`,
		`{"type":"USER_MESSAGE","text":"hi","if_busy":"interrupt"}`,
		`{"type":"USER_MESSAGE","text":""}`,
		`{"type":"USER_MESSAGE","text":42}`,
		`{"type":"USER_MESSAGE"}`,
		`{"type":"INTERRUPT"}`,
		`{"type":"APPROVAL","call_id":"call_1","approved":true}`,
		`{"type":"APPROVAL","call_id":"call_1","approved":false,"reason":"not now"}`,
		`{"type":"APPROVAL","call_id":"call_1","approved":true,"arguments":{ "to" : "<b>" }}`,
		`{"type":"APPROVAL","call_id":"call_1","approved":false,"arguments":{}}`,
		`{"type":"APPROVAL","call_id":"call_1","approved":true,"arguments":[1]}`,
		`{"type":"APPROVAL","call_id":"","approved":true}`,
		`{"type":"APPROVAL","call_id":7,"approved":true}`,
		`{"type":"APPROVAL","call_id":"c","approved":"yes"}`,
		`{"type":"APPROVAL","call_id":"c"}`,
		`{"type":"APPROVAL","call_id":"c","approved":null}`,
		`{"type":"NOPE"}`,
		`{"type":null}`,
		`[1]`, `null`, `"x"`, ``, `{`, `{"type":"USER_MESSAGE","text":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeClientMessage(b)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || m != nil {
				t.Fatalf("error %T %v with message %v", err, err, m)
			}
			switch e.Code {
			case CodeMalformed, CodeUnknownType, CodeInvalid:
			default:
				t.Fatalf("unstable code %q", e.Code)
			}
			return
		}
		if um, ok := m.(*UserMessage); ok && um.Text == "" {
			t.Fatal("empty text accepted")
		}
		if a, ok := m.(*Approval); ok {
			if a.CallID == "" || len(a.CallID) > MaxCallID {
				t.Fatalf("bad call_id %q accepted", a.CallID)
			}
			if err := a.Resolution().Validate(); err != nil {
				t.Fatalf("decoded an invalid resolution: %v", err)
			}
		}
		enc, err := EncodeClientMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeClientMessage(enc)
		if a, ok := m.(*Approval); ok && err == nil {
			// Encoding escapes HTML in the arguments; compare their values.
			a2, ok := m2.(*Approval)
			if !ok || !sameJSON(a.Arguments, a2.Arguments) {
				t.Fatalf("round trip: %#v -> %s -> %#v", m, enc, m2)
			}
			c1, c2 := *a, *a2
			c1.Arguments, c2.Arguments = nil, nil
			m, m2 = &c1, &c2
		}
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %#v -> %s -> %#v %v", m, enc, m2, err)
		}
	})
}

// FuzzDecodeServerMessage: the SDK's decoder never panics, and what it
// decodes re-encodes to an equivalent frame.
func FuzzDecodeServerMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"STATUS"}`,
		`{"type":"STATUS","conversation_id":"c1","working":true,"events":["tools"]}`,
		`{"type":"AGENT_EVENT","subtype":"TEXT_CHUNK","text":"Фрагмент"}`,
		`{"type":"AGENT_EVENT","subtype":"END","tokens_used":42}`,
		`{"type":"AGENT_EVENT","subtype":"TOOL_CALL","call_id":"c","name":"n","arguments":{"a":1}}`,
		`{"type":"AGENT_EVENT","subtype":"TOOL_RESULT","call_id":"c","name":"n","text":"t","is_error":true}`,
		`{"type":"AGENT_EVENT","subtype":"REASONING_CHUNK","text":"r"}`,
		`{"type":"AGENT_EVENT","subtype":"APPROVAL_REQUEST","call_id":"c","name":"send_mail","arguments":{"to":"bob"}}`,
		`{"type":"AGENT_EVENT","subtype":"APPROVAL_REQUEST","call_id":"c","name":"n","arguments":{},"expires_at":"2026-12-01T14:00:00Z"}`,
		`{"type":"AGENT_EVENT","subtype":"APPROVAL_REQUEST","call_id":1}`,
		`{"type":"AGENT_EVENT","subtype":"FUTURE"}`,
		`{"type":"ERROR","code":"error_code","details":"d"}`,
		`{"type":"GRACEFUL_DISCONNECT"}`,
		`{"type":"AGENT_EVENT","subtype":"END","tokens_used":"x"}`,
		`{}`, `[]`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeServerMessage(b)
		if err != nil {
			return
		}
		enc, err := EncodeServerMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*Unknown); ok {
			if !bytes.Equal(enc, b) {
				t.Fatal("unknown frame not kept verbatim")
			}
			return
		}
		m2, err := DecodeServerMessage(enc)
		if err != nil {
			t.Fatalf("re-decode %s: %v", enc, err)
		}
		if ar, ok := m2.(*ApprovalRequest); ok {
			a := m.(*ApprovalRequest)
			if a.CallID != ar.CallID || a.Name != ar.Name || a.ExpiresAt != ar.ExpiresAt || !sameJSON(a.Arguments, ar.Arguments) {
				t.Fatalf("round trip: %#v -> %s -> %#v", m, enc, m2)
			}
			return
		}
		if tc, ok := m2.(*ToolCall); ok && tc.Arguments != nil {
			// RawMessage keeps the input's spacing, and encoding escapes
			// HTML characters ("&" as "\u0026"): compare the values.
			if a := m.(*ToolCall).Arguments; !sameJSON(a, tc.Arguments) {
				t.Fatalf("arguments %s vs %s", a, tc.Arguments)
			}
			return
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %#v -> %s -> %#v", m, enc, m2)
		}
	})
}

// sameJSON reports whether a and b are the same JSON value (both absent
// counts as the same).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
