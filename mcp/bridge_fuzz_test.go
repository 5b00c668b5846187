package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// FuzzContinueConversation: the bridge's rewrite of ask arguments either
// passes them on byte for byte, or sets conversation_id on an object that
// named none and asked for no new conversation, keeping every other member.
func FuzzContinueConversation(f *testing.F) {
	for _, s := range []string{
		`{"message":"hi"}`, `{"message":"hi","conversation_id":"x"}`, `{"message":"hi","new_conversation":true}`,
		`{"message":"hi","new_conversation":false}`, `{"message":"hi","new_conversation":null}`, `null`, `[]`, `"s"`, `{`,
		`{"message":"a","message":"b"}`, `{"Conversation_ID":"x"}`, `{"NEW_conversation":1}`, ``, `{"message":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	conv := agentik.NewID()
	f.Fuzz(func(t *testing.T, in []byte) {
		out := continueConversation(json.RawMessage(in), conv)
		if bytes.Equal(out, in) {
			return
		}
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal(in, &before); err != nil || before == nil {
			t.Fatalf("rewrote what is not an object: %q → %q", in, out)
		}
		for k, v := range before {
			if strings.EqualFold(k, "conversation_id") {
				t.Fatalf("replaced a conversation_id: %q → %q", in, out)
			}
			if strings.EqualFold(k, "new_conversation") && !bytes.Equal(bytes.TrimSpace(v), []byte("false")) {
				t.Fatalf("continued although new_conversation is %s", v)
			}
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("rewrote %q into invalid JSON %q", in, out)
		}
		var id string
		if json.Unmarshal(after["conversation_id"], &id) != nil || id != conv {
			t.Fatalf("conversation_id %s, want %s", after["conversation_id"], conv)
		}
		if len(after) != len(before)+1 {
			t.Fatalf("members lost: %q → %q", in, out)
		}
		if continueConversation(json.RawMessage(in), "") == nil && in != nil {
			t.Fatal("no conversation to continue lost the arguments")
		}
	})
}

// FuzzAnswerConversation: any structured content yields a valid id or "".
func FuzzAnswerConversation(f *testing.F) {
	for _, s := range []string{
		`{"conversation_id":"` + agentik.NewID() + `","answer":"x"}`, `{"conversation_id":"../x"}`, `{"conversation_id":7}`,
		`null`, `[]`, `{`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, v := range []any{json.RawMessage(in), decoded(in)} {
			if id := answerConversation(v); id != "" && !agentik.ValidID(id) {
				t.Fatalf("%q gave %q", in, id)
			}
		}
	})
}

func decoded(b []byte) any {
	var v any
	json.Unmarshal(b, &v)
	return v
}
