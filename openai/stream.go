package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
)

// ErrIncomplete marks a stream that ended without a finish_reason: the
// connection closed (with or without [DONE]) before the model said it was
// done, so the answer may be cut short and must not count as complete.
var ErrIncomplete = errors.New("stream ended before the model finished (no finish_reason)")

// The wire shapes the accumulator reads. They are decoded from the raw chunk
// JSON rather than taken from openai-go's typed chunk because the fields that
// matter most across providers (reasoning, reasoning_content, an absent tool
// call index) are not modelled there.
type wireChunk struct {
	Choices []wireChoice    `json:"choices"` // [] or null in the usage chunk
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content"`
	Reasoning        *string        `json:"reasoning"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON string of JSON text per the spec; a few servers
		// send the object itself, which is accepted too.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// accumulator folds raw chunks into one response, emitting text and
// reasoning deltas as they come. It tolerates the provider deviations listed
// in the package doc. The zero value is not usable; use newAccumulator.
type accumulator struct {
	onDelta   func(agentik.ModelDelta)
	text      strings.Builder
	reasoning strings.Builder
	calls     []*callAcc
	byIndex   map[int]*callAcc
	finish    string
	finished  bool
	usage     agentik.TurnTokens
	started   bool // something the caller sees was received: no retry after this
	// id and model of the response, read from the first chunk only (they
	// are the same in every chunk); identified: read, or not wanted.
	id, model  string
	identified bool
	scratch    chunkScratch // what each chunk is decoded into, in turn
}

type callAcc struct {
	index int // stream index, or position for index-less calls
	id    string
	name  string
	args  strings.Builder
}

func newAccumulator(onDelta func(agentik.ModelDelta)) *accumulator {
	if onDelta == nil {
		onDelta = func(agentik.ModelDelta) {}
	}
	return &accumulator{onDelta: onDelta}
}

// add folds one chunk (the JSON of one SSE data event).
func (a *accumulator) add(raw []byte) error {
	c, ok := fastChunk(raw, &a.scratch)
	if !ok {
		var slow wireChunk // on the heap, as encoding/json needs it
		if err := json.Unmarshal(raw, &slow); err != nil {
			return fmt.Errorf("malformed stream chunk: %w", err)
		}
		c = slow
	}
	if len(c.Error) > 0 && !bytes.Equal(c.Error, []byte("null")) {
		return streamError(c.Error)
	}
	if !a.identified {
		a.identified = true
		var id struct {
			ID    string `json:"id"`
			Model string `json:"model"`
		}
		if json.Unmarshal(raw, &id) == nil {
			a.id, a.model = id.ID, id.Model
		}
	}
	if c.Usage != nil {
		// Providers send usage once (OpenAI) or cumulatively; the last wins.
		a.usage = agentik.TurnTokens{Input: c.Usage.PromptTokens, Output: c.Usage.CompletionTokens}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only one choice is ever requested (n=1)
		}
		if err := a.addDelta(ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish, a.finished = *ch.FinishReason, true
		}
	}
	return nil
}

func (a *accumulator) addDelta(d wireDelta) error {
	// Some servers fill both reasoning fields with the same text; take one.
	r := d.ReasoningContent
	if r == nil || *r == "" {
		r = d.Reasoning
	}
	if r != nil && *r != "" {
		a.started = true
		a.reasoning.WriteString(*r)
		a.onDelta(agentik.ModelDelta{Kind: agentik.DeltaReasoning, Text: *r})
	}
	if d.Content != nil && *d.Content != "" {
		a.started = true
		a.text.WriteString(*d.Content)
		a.onDelta(agentik.ModelDelta{Kind: agentik.DeltaText, Text: *d.Content})
	}
	for _, tc := range d.ToolCalls {
		a.started = true
		call := a.callFor(tc)
		if call.name == "" {
			call.name = tc.Function.Name
		}
		if err := appendArgs(&call.args, tc.Function.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// callFor finds the call a fragment belongs to. With an index, the index
// decides, unless the fragment brings a new non-empty id for an index already
// taken (proxies that send index 0 for every call). Without an index, a new
// non-empty id starts a new call and anything else continues the last one.
func (a *accumulator) callFor(tc wireToolCall) *callAcc {
	if tc.Index != nil && *tc.Index >= 0 {
		if c := a.byIndex[*tc.Index]; c != nil && (tc.ID == "" || c.id == "" || tc.ID == c.id) {
			if c.id == "" {
				c.id = tc.ID
			}
			return c
		}
		c := &callAcc{index: *tc.Index, id: tc.ID}
		a.calls = append(a.calls, c)
		if a.byIndex == nil {
			a.byIndex = map[int]*callAcc{} // most answers call no tool
		}
		a.byIndex[*tc.Index] = c
		return c
	}
	if n := len(a.calls); n > 0 {
		last := a.calls[n-1]
		if tc.ID == "" || tc.ID == last.id {
			return last
		}
	}
	c := &callAcc{index: len(a.calls), id: tc.ID}
	a.calls = append(a.calls, c)
	return c
}

func appendArgs(b *strings.Builder, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("malformed tool call arguments: %w", err)
		}
		b.WriteString(s)
	case raw[0] == '{':
		b.Write(raw) // already an object (decoded by json, so valid)
	default:
		return fmt.Errorf("malformed tool call arguments: %.40s", raw)
	}
	return nil
}

// result returns the complete response once the stream ended cleanly.
func (a *accumulator) result() (agentik.ModelResponse, error) {
	if !a.finished {
		return agentik.ModelResponse{}, ErrIncomplete
	}
	resp := agentik.ModelResponse{
		Text:         a.text.String(),
		Reasoning:    a.reasoning.String(),
		Tokens:       a.usage,
		FinishReason: a.finish,
		ID:           a.id,
		Model:        a.model,
	}
	for _, c := range a.calls {
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			if a.finish == "length" {
				return agentik.ModelResponse{}, fmt.Errorf("model hit its output limit inside the arguments of tool call %q: not executed", c.name)
			}
			// Keep the text as a JSON string: ToolCall.Arguments must stay
			// valid JSON for the journal, and the tool then rejects a
			// non-object, which the model sees and can correct.
			b, _ := json.Marshal(args)
			args = string(b)
		}
		id := c.id
		if id == "" {
			id = "call_" + strconv.Itoa(c.index)
		}
		resp.ToolCalls = append(resp.ToolCalls, agentik.ToolCall{ID: id, Name: c.name, Arguments: agentik.RawJSON(args)})
	}
	return resp, nil
}
