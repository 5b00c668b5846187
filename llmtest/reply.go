package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Reply is one scripted answer to one HTTP request.
//
// With Status 0 or 200 the answer is an SSE stream that plays Steps in order
// (for a non-streaming request the content steps are folded into one JSON
// body). Any other Status answers with Body and Headers and no stream, which
// is how tests script 429, 500 or context-overflow errors.
//
// Reply values are immutable in practice: every builder method returns a new
// Reply with its own Steps slice, so a Reply can be shared and enqueued many
// times.
type Reply struct {
	Status  int         // 0 means 200
	Headers http.Header // extra response headers (Retry-After, …)
	Body    string      // body of a non-200 reply
	Model   string      // model echoed in chunks; empty echoes the request's model
	Steps   []Step

	// FirstTokenDelay is waited before the first step; ChunkDelay between
	// steps. Both stop early when the client goes away. For benchmarks.
	FirstTokenDelay time.Duration
	ChunkDelay      time.Duration
}

// StepKind says what a Step does.
type StepKind int

// Step kinds.
const (
	StepDelta  StepKind = iota // a chunk with choices[0].delta = Delta
	StepFinish                 // a chunk with an empty delta and finish_reason = Text
	StepUsage                  // a usage chunk with choices: [] (or null when NullChoices)
	StepDone                   // data: [DONE]
	StepData                   // a verbatim "data: Text" event (malformed chunks, in-stream errors)
	StepRaw                    // Text written verbatim (comments, CRLF experiments)
	StepReset                  // hijack the connection and reset it
	StepPause                  // signal Gate as reached, wait for its release (or the client to leave)
	StepHang                   // wait until the client goes away or the server closes
	StepSleep                  // wait Duration (or until the client goes away)
)

// Step is one action of a streamed Reply. Build steps with the Reply
// methods; the fields are exported so unusual shapes can be written by hand.
type Step struct {
	Kind     StepKind
	Delta    Delta
	Text     string // finish reason, data payload or raw bytes, by Kind
	Usage    Usage
	Null     bool // StepUsage: send "choices": null (vLLM) instead of []
	Gate     *Gate
	Duration time.Duration
}

// Delta is the delta object of a chunk. Nil/empty fields are omitted.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is one fragment of a streamed tool call. Index nil omits the
// field (old Ollama, Gemini proxies).
type ToolCallDelta struct {
	Index    *int          `json:"index,omitempty"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta. Arguments is always
// sent, as OpenAI does ("" in the first fragment).
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Usage is the token count of a usage chunk.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Stream returns an empty 200 streaming reply to build on:
//
//	llmtest.Stream().Role().Reasoning("hm").Content("Hel", "lo").Finish("stop").Usage(5, 2).Done()
func Stream() Reply { return Reply{} }

// with returns a copy of r with steps appended; the copy never shares its
// backing array with r, so builders can branch from a common prefix.
func (r Reply) with(steps ...Step) Reply {
	s := make([]Step, 0, len(r.Steps)+len(steps))
	r.Steps = append(append(s, r.Steps...), steps...)
	return r
}

// Role adds the usual first chunk: role "assistant" with empty content.
func (r Reply) Role() Reply {
	empty := ""
	return r.with(Step{Kind: StepDelta, Delta: Delta{Role: "assistant", Content: &empty}})
}

// Content adds one text chunk per piece.
func (r Reply) Content(pieces ...string) Reply {
	steps := make([]Step, len(pieces))
	for i, p := range pieces {
		steps[i] = Step{Kind: StepDelta, Delta: Delta{Content: &p}}
	}
	return r.with(steps...)
}

// Words adds s as text chunks of one word each (with its trailing space).
func (r Reply) Words(s string) Reply { return r.Content(SplitWords(s)...) }

// Reasoning adds one reasoning chunk per piece in the reasoning_content
// field (DeepSeek, llama.cpp).
func (r Reply) Reasoning(pieces ...string) Reply {
	return r.ReasoningField("reasoning_content", pieces...)
}

// ReasoningField adds reasoning chunks in the given field: "reasoning_content"
// or "reasoning" (vLLM, Ollama, OpenRouter).
func (r Reply) ReasoningField(field string, pieces ...string) Reply {
	steps := make([]Step, len(pieces))
	for i, p := range pieces {
		d := Delta{}
		if field == "reasoning" {
			d.Reasoning = &p
		} else {
			d.ReasoningContent = &p
		}
		steps[i] = Step{Kind: StepDelta, Delta: d}
	}
	return r.with(steps...)
}

// ToolCall adds one streamed tool call the OpenAI way: a first chunk with
// index, id, type and name (arguments ""), then one chunk per argument piece.
// An empty id is omitted from the wire. A negative index omits the index and
// sends the whole call in one chunk, as old Ollama does.
func (r Reply) ToolCall(index int, id, name string, argPieces ...string) Reply {
	if index < 0 {
		return r.with(Step{Kind: StepDelta, Delta: Delta{ToolCalls: []ToolCallDelta{{
			ID: id, Type: "function",
			Function: FunctionDelta{Name: name, Arguments: strings.Join(argPieces, "")},
		}}}})
	}
	steps := []Step{{Kind: StepDelta, Delta: Delta{ToolCalls: []ToolCallDelta{{
		Index: &index, ID: id, Type: "function", Function: FunctionDelta{Name: name},
	}}}}}
	for _, p := range argPieces {
		steps = append(steps, Step{Kind: StepDelta, Delta: Delta{ToolCalls: []ToolCallDelta{{
			Index: &index, Function: FunctionDelta{Arguments: p},
		}}}})
	}
	return r.with(steps...)
}

// Delta adds one chunk with an arbitrary delta (e.g. several tool calls in one
// delta array).
func (r Reply) Delta(d Delta) Reply { return r.with(Step{Kind: StepDelta, Delta: d}) }

// Finish adds a chunk with an empty delta and the given finish_reason.
func (r Reply) Finish(reason string) Reply { return r.with(Step{Kind: StepFinish, Text: reason}) }

// Usage adds the usage chunk (choices: []).
func (r Reply) Usage(prompt, completion int) Reply {
	return r.with(Step{Kind: StepUsage, Usage: Usage{prompt, completion, prompt + completion}})
}

// UsageNullChoices adds a usage chunk with "choices": null, as vLLM sends.
func (r Reply) UsageNullChoices(prompt, completion int) Reply {
	return r.with(Step{Kind: StepUsage, Null: true, Usage: Usage{prompt, completion, prompt + completion}})
}

// Done adds the terminating "data: [DONE]".
func (r Reply) Done() Reply { return r.with(Step{Kind: StepDone}) }

// Data adds a verbatim SSE data event: "data: payload\n\n".
func (r Reply) Data(payload string) Reply { return r.with(Step{Kind: StepData, Text: payload}) }

// StreamError adds an OpenAI-style error object inside the 200 stream.
func (r Reply) StreamError(message string) Reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "server_error", "param": nil, "code": nil,
	}})
	return r.Data(string(b))
}

// Raw adds bytes written to the stream verbatim (e.g. ": ping\n\n").
func (r Reply) Raw(s string) Reply { return r.with(Step{Kind: StepRaw, Text: s}) }

// Reset adds a step that hijacks the connection and resets it (TCP RST when
// possible), cutting the stream mid-answer.
func (r Reply) Reset() Reply { return r.with(Step{Kind: StepReset}) }

// Pause adds a step that marks g as reached and waits for g.Release, the
// client leaving, or the server closing. Earlier steps are flushed first, so
// a test that sees g.Reached knows the client could have read them.
func (r Reply) Pause(g *Gate) Reply { return r.with(Step{Kind: StepPause, Gate: g}) }

// Hang adds a step that never finishes on its own: it waits until the client
// goes away or the server closes. For timeout and interrupt tests.
func (r Reply) Hang() Reply { return r.with(Step{Kind: StepHang}) }

// Sleep adds a pause of d (cut short when the client leaves).
func (r Reply) Sleep(d time.Duration) Reply { return r.with(Step{Kind: StepSleep, Duration: d}) }

// WithHeader returns r with a response header added.
func (r Reply) WithHeader(key, value string) Reply {
	h := r.Headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	r.Headers = h
	return r
}

// WithDelays returns r with a time-to-first-token and a per-chunk delay.
func (r Reply) WithDelays(firstToken, perChunk time.Duration) Reply {
	r.FirstTokenDelay, r.ChunkDelay = firstToken, perChunk
	return r
}

// Text returns a complete answer: role chunk, s word by word, finish "stop",
// usage and [DONE].
func Text(s string) Reply {
	w := SplitWords(s)
	return Stream().Role().Content(w...).Finish("stop").Usage(10, len(w)).Done()
}

// CallSpec describes one tool call for ToolCalls.
type CallSpec struct {
	ID        string // empty: ToolCalls assigns a unique "call_<n>"
	Name      string
	Arguments string // JSON text; streamed in a few pieces
}

// Call returns a CallSpec for ToolCalls.
func Call(name, arguments string) CallSpec { return CallSpec{Name: name, Arguments: arguments} }

// WithID returns c with an explicit call id.
func (c CallSpec) WithID(id string) CallSpec { c.ID = id; return c }

var callSeq atomic.Int64

// ToolCalls returns a complete answer that asks for the given calls (in
// parallel when several), indexes 0, 1, …, arguments split in pieces, finish
// "tool_calls", usage and [DONE]. Calls without an ID get a process-unique one.
func ToolCalls(calls ...CallSpec) Reply {
	r := Stream().Role()
	for i, c := range calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", callSeq.Add(1))
		}
		r = r.ToolCall(i, id, c.Name, SplitN(c.Arguments, 3)...)
	}
	return r.Finish("tool_calls").Usage(10, 5*len(calls)).Done()
}

// Error returns a non-streamed error reply with a JSON body.
func Error(status int, body string) Reply {
	return Reply{Status: status, Body: body}.WithHeader("Content-Type", "application/json")
}

// APIError returns an error reply with an OpenAI-style body
// {"error":{"message","type","param","code"}}. An empty code is sent as null.
func APIError(status int, typ, code, message string) Reply {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": c,
	}})
	return Error(status, string(b))
}

// RateLimited returns a 429 rate_limit_exceeded reply with the given
// Retry-After header value (seconds), omitted when empty.
func RateLimited(retryAfter string) Reply {
	r := APIError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached, please retry later.")
	if retryAfter != "" {
		r = r.WithHeader("Retry-After", retryAfter)
	}
	return r
}

// InsufficientQuota returns the 429 that must never be retried.
func InsufficientQuota() Reply {
	return APIError(http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details.")
}

// ContextLengthExceeded returns OpenAI's 400 for a context too long.
func ContextLengthExceeded() Reply {
	return APIError(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
		"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.")
}

// ServerError returns a 500 with an OpenAI-style body.
func ServerError() Reply {
	return APIError(http.StatusInternalServerError, "server_error", "", "The server had an error while processing your request.")
}

// SplitWords splits s after each run of spaces, so the pieces concatenate
// back to s: "a b  c" → "a ", "b  ", "c".
func SplitWords(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && (i+1 == len(s) || s[i+1] != ' ') {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// SplitN splits s into at most n pieces of about equal byte length (never
// inside a UTF-8 sequence); "" gives one empty piece.
func SplitN(s string, n int) []string {
	if n <= 1 || len(s) <= 1 {
		return []string{s}
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utf8Start(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
