package openaiapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

var testKey = respKey{conv: "0190a0b0-0000-7000-8000-000000000001", turn: "0190a0b0-0000-7000-8000-000000000002", fromSeq: 3, cursor: 7}

// odd is text that json.Marshal escapes: HTML characters, controls,
// quotes, U+2028, invalid UTF-8 and more than ASCII.
const odd = "<b>a & b</b> \"q\" \\ \n\t\x01 \u2028\u2029 é😀 \xff\xfe end"

// projectAll feeds p a turn with reasoning, text, client and server tool
// calls, an approval request, and its end.
func projectAll(p *projector) {
	p.begin()
	p.event(agentik.Event{Type: agentik.EvStartReasoning})
	p.event(agentik.Event{Type: agentik.EvAppendText, Text: "thinking " + odd})
	p.event(agentik.Event{Type: agentik.EvStartResponse})
	for _, w := range strings.Fields("Sure, here is a short <answer> & more " + odd) {
		p.event(agentik.Event{Type: agentik.EvAppendText, Text: w + " "})
	}
	p.event(agentik.Event{Type: agentik.EvToolCall, Message: &agentik.Message{Name: "lookup", CallID: "c1", Arguments: json.RawMessage(`{"q":"<x>"}`)}})
	p.event(agentik.Event{Type: agentik.EvToolCall, Message: &agentik.Message{Name: "search", CallID: "c2", Arguments: json.RawMessage(`{"q":"a&b"}`)}})
	p.event(agentik.Event{Type: agentik.EvToolResult, Message: &agentik.Message{Name: "search", CallID: "c2", Content: []agentik.Content{{Type: "text", Text: "found " + odd}}}})
	p.event(agentik.Event{Type: agentik.EvToolFailed, Message: &agentik.Message{Name: "search", CallID: "c3", IsError: true, Content: []agentik.Content{{Type: "text", Text: "failed"}}}})
	p.event(agentik.Event{Type: agentik.EvApprovalRequested, CallID: "c4", Name: "send_mail", Arguments: json.RawMessage(`{"to":"a@b"}`)})
	p.event(agentik.Event{Type: agentik.EvStartResponse})
	p.event(agentik.Event{Type: agentik.EvAppendText, Text: "done"})
	p.event(agentik.Event{Type: agentik.EvAssistantMessage, Message: &agentik.Message{Type: agentik.MsgAssistant, Reasoning: "late", Content: []agentik.Content{{Type: "text", Text: "done, " + odd}},
		Tokens: &agentik.TurnTokens{Input: 12, Output: 34}}})
}

// TestEventBytes: every event of a response's stream is written as
// json.Marshal writes its body, for responses with and without the
// optional fields, and a delta cut for a resumed stream too.
func TestEventBytes(t *testing.T) {
	temp, topP, instr, prev := 0.7, 1e-7, "be <brief>", "resp_x"
	for _, resp := range []*response{
		newResponse(testKey, "agentik"),
		func() *response {
			r := newResponse(testKey, "agent & <co>")
			r.Temperature, r.TopP, r.Instructions, r.PreviousResponseID = temp, topP, &instr, &prev
			r.Metadata = map[string]string{"b": "2", "a": "<1>", "c": odd}
			r.Tools = []ResponseTool{{Type: "function", Name: "lookup", Description: "<d>", Parameters: json.RawMessage(`{"type":"object"}`)}}
			r.Background, r.Store = true, false
			r.Text = nil
			return r
		}(),
	} {
		n := 0
		p := newProjector(resp, map[string]bool{"lookup": true}, "agentik")
		p.check = func(body map[string]any, data []byte) {
			n++
			want, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, want) {
				t.Errorf("event %s:\n got %s\nwant %s", body["type"], data, want)
			}
		}
		projectAll(p)
		if !p.done || n < 30 || n != len(p.out) {
			t.Fatalf("done %v, %d events checked of %d", p.done, n, len(p.out))
		}
		// Every cut of every delta, as a resumed stream writes it.
		for _, ev := range p.out {
			if ev.typ != textDelta && ev.typ != reasoningDelta {
				continue
			}
			for n := ev.prev; n < ev.seq; n++ {
				got := after([]streamEvent{ev}, n)
				if len(got) != 1 {
					t.Fatalf("after %d: %d events", n, len(got))
				}
				d, skip := ev.delta, n-ev.prev // cut as the old projector did: by characters, as range reads them
				for i := range d {
					if skip == 0 {
						d = d[i:]
						break
					}
					skip--
				}
				want, _ := json.Marshal(deltaBody(ev.typ, ev.itemID, ev.index, d, ev.seq))
				if !bytes.Equal(got[0].data, want) {
					t.Errorf("delta cut after %d:\n got %s\nwant %s", n, got[0].data, want)
				}
			}
		}
	}
}

// TestAppendJSONFallback: a value the hand encoder does not know is
// refused (the caller marshals it), never written wrong.
func TestAppendJSONFallback(t *testing.T) {
	for _, v := range []any{struct{}{}, []string{"a"}, map[string]any{"a": 1.5, "b": []any{uint8(1)}}} {
		if _, ok := appendJSON(nil, v); ok {
			t.Errorf("%#v: taken", v)
		}
	}
	for _, f := range []float64{0, 1, -2.5, 1e-7, 1e21, 123456789.125, 1e-300} {
		got, ok := appendFloat(nil, f)
		want, _ := json.Marshal(f)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}

func BenchmarkProjectTurn(b *testing.B) {
	words := strings.Fields("Sure, here is a short scripted answer of twenty words that stands in for what a real model would say.")
	b.ReportAllocs()
	for b.Loop() {
		p := newProjector(newResponse(testKey, "agentik"), map[string]bool{}, "agentik")
		p.begin()
		p.event(agentik.Event{Type: agentik.EvStartResponse})
		for _, w := range words {
			p.event(agentik.Event{Type: agentik.EvAppendText, Text: w + " "})
			after(p.drain(), -1)
		}
		p.event(agentik.Event{Type: agentik.EvAssistantMessage, Message: &agentik.Message{Content: []agentik.Content{{Type: "text", Text: strings.Join(words, " ") + " "}}, Tokens: &agentik.TurnTokens{Input: 10, Output: 20}}})
		after(p.drain(), -1)
	}
}
