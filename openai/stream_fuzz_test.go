package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// FuzzChunk feeds newline-separated chunk payloads to the accumulator. Any
// input may fail, but none may panic, and a successful result must keep the
// promises the engine relies on: deltas add up to the returned text and
// reasoning, every tool call has an id and valid JSON arguments.
func FuzzChunk(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"usage":null}
{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"a","reasoning":"a"}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}
{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
{"choices":null,"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}},{"id":"b","function":{"name":"g","arguments":""}}]},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1,"function":{"name":"f","arguments":"{"}}]},"finish_reason":"length"}]}`,
		`{"error":{"message":"boom","code":500}}`,
		`{"choices":[{"index":0,"delta":{"content":null},"finish_reason":""}]}`,
		`not json`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var text, reasoning strings.Builder
		acc := newAccumulator(func(d agentik.ModelDelta) {
			switch d.Kind {
			case agentik.DeltaText:
				text.WriteString(d.Text)
			case agentik.DeltaReasoning:
				reasoning.WriteString(d.Text)
			default:
				t.Fatalf("unknown delta kind %q", d.Kind)
			}
		})
		for line := range bytes.SplitSeq([]byte(in), []byte("\n")) {
			if err := acc.add(line); err != nil {
				return
			}
		}
		resp, err := acc.result()
		if err != nil {
			return
		}
		if resp.Text != text.String() || resp.Reasoning != reasoning.String() {
			t.Fatalf("deltas %q/%q differ from response %q/%q", text.String(), reasoning.String(), resp.Text, resp.Reasoning)
		}
		if resp.FinishReason == "" {
			t.Fatal("success without finish reason")
		}
		for _, c := range resp.ToolCalls {
			if c.ID == "" || !json.Valid(c.Arguments) {
				t.Fatalf("bad call %+v", c)
			}
		}
	})
}

// FuzzFastChunk: whenever the fast decoder takes a chunk, encoding/json
// takes it too and decodes exactly the same.
func FuzzFastChunk(f *testing.F) {
	for _, seed := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"héllo "},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null,"error":null}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
		`{"choices":null}`,
		`{"choices":[{"index":1,"delta":{"reasoning_content":"a","reasoning":null}}]}`,
		`{"Choices":[{"index":0,"delta":{"content":"x"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a\"b"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"x"}}],"choices":[]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}`,
		`{"x":[1,-2.5e+3,true,false,null,{"y":"\u00e9\n"}],"choices":[{"index":0,"delta":{"content":"ok"}}]}`,
		`{"choices":[{"index":0.5}]}`,
		` {"choices":[ ] } `,
		`null`,
		`{"choices":[null]}`,
		`{"choiceſ":[{"index":0,"delta":{"content":"x"}}]}`,
		`{"choices":[{"index":0,"delta":{"contenT":"x","ſ":1}}]}`,
		`{"choices":[{"ındex":3,"delta":{"content":"x"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"\u0041"}}]}`,
		"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad\xff\"}}]}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Decoded into a scratch that holds an earlier chunk, as a
		// stream's chunks are: nothing of that chunk may show.
		var s chunkScratch
		if _, ok := fastChunk([]byte(`{"choices":[{"index":0,"delta":{"content":"old","reasoning":"r"},"finish_reason":"stop"}]}`), &s); !ok {
			t.Fatal("the earlier chunk was not taken")
		}
		fast, ok := fastChunk(raw, &s)
		if !ok {
			return
		}
		var slow wireChunk
		if err := json.Unmarshal(raw, &slow); err != nil {
			t.Fatalf("fast took %q, encoding/json: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", raw, fast, slow)
		}
	})
}

// BenchmarkChunk: one text delta chunk, fast path and encoding/json
// (go test -run '^$' -bench Chunk -benchmem ./openai).
func BenchmarkChunk(b *testing.B) {
	raw := []byte(`{"id":"chatcmpl-abc123","object":"chat.completion.chunk","created":1733097600,"model":"llmtest","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"word "},"logprobs":null,"finish_reason":null}]}`)
	b.Run("fast", func(b *testing.B) {
		var s chunkScratch // a stream's, reused by its chunks
		for b.Loop() {
			if _, ok := fastChunk(raw, &s); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var c wireChunk
			if err := json.Unmarshal(raw, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
