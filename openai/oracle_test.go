package openai

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentik/agentik"
)

// The request as openai-go's param types build it: the oracle the direct
// encoder (request.go) is checked against. It was the adapter's encoder
// until the direct one replaced it.

// params builds the Chat Completions request for req.
func (l *LLM) params(req agentik.ModelRequest) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{
		Model:         l.opts.Model,
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}
	if n := maxTokens(l.opts.MaxTokens, req.Params); n > 0 {
		if l.opts.MaxTokensField == MaxTokens {
			p.MaxTokens = oai.Int(n)
		} else {
			p.MaxCompletionTokens = oai.Int(n)
		}
	}
	if q := req.Params; q != nil {
		if q.Temperature != nil {
			p.Temperature = oai.Float(*q.Temperature)
		}
		if q.TopP != nil {
			p.TopP = oai.Float(*q.TopP)
		}
		if q.Seed != nil {
			p.Seed = oai.Int(*q.Seed)
		}
	}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	// Images returned by tools wait here until the run of tool messages
	// ends: a user message between two tool answers would break the rule
	// that an assistant's tool calls are followed by their tool messages.
	var toolImages []oai.ChatCompletionContentPartUnionParam
	flush := func() {
		if len(toolImages) > 0 {
			p.Messages = append(p.Messages, oai.UserMessage(toolImages))
			toolImages = nil
		}
	}
	for i, m := range req.Messages {
		if m.Role != "tool" {
			flush()
		}
		switch m.Role {
		case "user":
			p.Messages = append(p.Messages, l.userMessage(m.Content))
		case "assistant":
			p.Messages = append(p.Messages, l.assistantMessage(m))
		case "tool":
			text := agentik.JoinText(m.Content)
			if m.IsError {
				text = "Error: " + text
			}
			if text == "" {
				text = "(no output)" // some servers reject empty tool content
			}
			p.Messages = append(p.Messages, oai.ToolMessage(text, m.CallID))
			if agentik.HasImage(m.Content) {
				if len(toolImages) == 0 {
					toolImages = append(toolImages, oai.TextContentPart("Images returned by the tool calls above:"))
				}
				toolImages = append(toolImages, oai.TextContentPart(fmt.Sprintf("From %s (%s):", m.Name, m.CallID)))
				for _, c := range m.Content {
					if c.Type == agentik.ContentImage {
						toolImages = append(toolImages, l.imagePart(c))
					}
				}
			}
		case "summary":
			p.Messages = append(p.Messages, oai.SystemMessage(summaryPrefix+agentik.JoinText(m.Content)))
		default:
			return p, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
	}
	flush()
	for _, t := range req.Tools {
		schema := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			schema = shared.FunctionParameters{}
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = oai.String(t.Description)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

// userMessage sends plain text as a string (understood by every server) and
// switches to content parts only when there is an image.
func (l *LLM) userMessage(content []agentik.Content) oai.ChatCompletionMessageParamUnion {
	if !agentik.HasImage(content) {
		return oai.UserMessage(agentik.JoinText(content))
	}
	parts := make([]oai.ChatCompletionContentPartUnionParam, 0, len(content))
	for _, c := range content {
		if c.Type == agentik.ContentImage {
			parts = append(parts, l.imagePart(c))
		} else {
			parts = append(parts, oai.TextContentPart(c.Text))
		}
	}
	return oai.UserMessage(parts)
}

// imagePart is an image_url part with a data URI, or, for a model without
// image input, a short text note: such a model answers image parts with 400,
// and images reach it only from tool results (the engine refuses user images).
func (l *LLM) imagePart(c agentik.Content) oai.ChatCompletionContentPartUnionParam {
	if !l.opts.ImageInput {
		return oai.TextContentPart(fmt.Sprintf("[%s image omitted: this model does not take images]", c.MIME))
	}
	return oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{
		URL: "data:" + c.MIME + ";base64," + c.Data,
	})
}

// assistantMessage always carries content (an empty string when the turn was
// only tool calls): openai-go would omit it, and some servers reject that.
func (l *LLM) assistantMessage(m agentik.ModelMessage) oai.ChatCompletionMessageParamUnion {
	a := oai.ChatCompletionAssistantMessageParam{
		Content: oai.ChatCompletionAssistantMessageParamContentUnion{OfString: oai.String(agentik.JoinText(m.Content))},
	}
	for _, tc := range m.ToolCalls {
		args := string(tc.Arguments)
		if args == "" {
			args = "{}"
		}
		a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
			},
		})
	}
	if l.opts.SendReasoning && m.Reasoning != "" {
		a.SetExtraFields(map[string]any{"reasoning_content": m.Reasoning})
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// oracleJSON is the request params builds, with the stream flag the
// adapter used to set on top, decoded for comparison.
func (l *LLM) oracleJSON(t *testing.T, req agentik.ModelRequest) any {
	t.Helper()
	p, err := l.params(req)
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	v["stream"] = true
	if _, ok := v["messages"]; !ok {
		v["messages"] = []any{} // omitted by openai-go; the API requires the field
	}
	return v
}

func decoded(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return v
}

// TestBodyMatchesParams: the direct encoder writes what openai-go's param
// types wrote, for every message shape and option.
func TestBodyMatchesParams(t *testing.T) {
	png := agentik.Image("image/png", []byte("\x89PNG"))
	jpg := agentik.Image("image/jpeg", []byte("\xff\xd8"))
	odd := "quote\" back\\ nl\n tab\t nul\x00 bell\x07 bad\xff utf8 é 😀 ls\u2028 ps\u2029 <&>"
	reqs := map[string]agentik.ModelRequest{
		"empty": {},
		"plain": {System: "be brief", Messages: []agentik.ModelMessage{
			{Role: "user", Content: []agentik.Content{agentik.Text("hi")}},
			{Role: "assistant", Content: []agentik.Content{agentik.Text("hello")}},
			{Role: "user", Content: []agentik.Content{agentik.Text("a"), agentik.Text("b")}},
		}},
		"odd strings": {System: odd, Messages: []agentik.ModelMessage{
			{Role: "user", Content: []agentik.Content{agentik.Text(odd)}},
			{Role: "assistant", Reasoning: odd, ToolCalls: []agentik.ToolCall{{ID: odd, Name: odd, Arguments: agentik.RawJSON(`{"s":"` + "\\n" + `"}`)}}},
			{Role: "tool", CallID: odd, Name: odd, Content: []agentik.Content{agentik.Text(odd)}},
		}},
		"everything": {
			System: "sys",
			Messages: []agentik.ModelMessage{
				{Role: "summary", Content: []agentik.Content{agentik.Text("we talked")}},
				{Role: "user", Content: []agentik.Content{agentik.Text("look"), png, jpg}},
				{Role: "assistant", Reasoning: "hmm", ToolCalls: []agentik.ToolCall{
					{ID: "c1", Name: "shot", Arguments: agentik.RawJSON(`{"w":1}`)},
					{ID: "c2", Name: "fail", Arguments: nil},
					{ID: "c3", Name: "empty", Arguments: agentik.RawJSON(``)},
				}},
				{Role: "tool", CallID: "c1", Name: "shot", Content: []agentik.Content{agentik.Text("here"), png}},
				{Role: "tool", CallID: "c2", Name: "fail", IsError: true, Content: []agentik.Content{agentik.Text("boom")}},
				{Role: "tool", CallID: "c3", Name: "empty"},
				{Role: "tool", CallID: "c4", Name: "pics", Content: []agentik.Content{jpg, png}},
				{Role: "assistant", Content: []agentik.Content{agentik.Text("Done.")}},
				{Role: "user", Content: []agentik.Content{png}},
				{Role: "assistant", Reasoning: "thinking", Content: []agentik.Content{agentik.Text("ok")}},
				{Role: "assistant"},
			},
			Tools: []agentik.ToolSpec{
				{Name: "shot", Description: "screenshot", Parameters: agentik.RawJSON(`{"type":"object","properties":{"w":{"type":"integer","maximum":10}},"required":["w"]}`)},
				{Name: "bare"},
				{Name: "null", Parameters: agentik.RawJSON(`null`)},
				{Name: "spaced", Parameters: agentik.RawJSON(" \n{ \"type\" : \"object\" }\n")},
			},
		},
		"sampling": {Messages: []agentik.ModelMessage{{Role: "user", Content: []agentik.Content{agentik.Text("hi")}}},
			Params: &agentik.ModelParams{Temperature: ptr(0.25), TopP: ptr(1e-7), Seed: ptr(int64(-42)), MaxTokens: ptr(int64(7))}},
		"temperature 0": {Params: &agentik.ModelParams{Temperature: ptr(0.0), MaxTokens: ptr(int64(500))}},
		"tool images at the end": {Messages: []agentik.ModelMessage{
			{Role: "assistant", ToolCalls: []agentik.ToolCall{{ID: "c", Name: "shot", Arguments: agentik.RawJSON(`{}`)}}},
			{Role: "tool", CallID: "c", Name: "shot", Content: []agentik.Content{png}},
		}},
	}
	options := map[string]Options{
		"defaults":       {Model: "m"},
		"images, reason": {Model: "gpt-x", ImageInput: true, SendReasoning: true, MaxTokens: 99, MaxTokensField: MaxCompletionTokens},
		"max_tokens":     {Model: odd, MaxTokens: 5, MaxTokensField: MaxTokens},
	}
	for on, o := range options {
		l, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for rn, req := range reqs {
			body, err := l.body(req)
			if err != nil {
				t.Fatalf("%s/%s: %v", on, rn, err)
			}
			if got, want := decoded(t, body), l.oracleJSON(t, req); !reflect.DeepEqual(got, want) {
				wantRaw, _ := json.Marshal(want)
				t.Errorf("%s/%s:\n got %s\nwant %s", on, rn, body, wantRaw)
			}
		}
	}
}

func TestBodyRefusesWhatParamsRefused(t *testing.T) {
	l, err := New(Options{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []agentik.ModelRequest{
		{Messages: []agentik.ModelMessage{{Role: "robot"}}},
		{Tools: []agentik.ToolSpec{{Name: "t", Parameters: agentik.RawJSON(`[1]`)}}},
		{Tools: []agentik.ToolSpec{{Name: "t", Parameters: agentik.RawJSON(`{"a":`)}}},
		{Tools: []agentik.ToolSpec{{Name: "t", Parameters: agentik.RawJSON(`"s"`)}}},
	} {
		if _, perr := l.params(req); perr == nil {
			t.Fatalf("the oracle took %+v", req)
		}
		if b, err := l.body(req); err == nil {
			t.Errorf("body took %+v: %s", req, b)
		}
	}
}

// benchRequest is a chat of 20 exchanges with one tool, the size of a
// turn's request in the benchmarks.
func benchRequest() agentik.ModelRequest {
	req := agentik.ModelRequest{System: "You are a helpful assistant.",
		Tools: []agentik.ToolSpec{{Name: "current_time", Description: "the time now", Parameters: agentik.RawJSON(`{"type":"object","properties":{"zone":{"type":"string"}}}`)}}}
	for range 20 {
		req.Messages = append(req.Messages,
			agentik.ModelMessage{Role: "user", Content: []agentik.Content{agentik.Text("what is the weather like today in the city?")}},
			agentik.ModelMessage{Role: "assistant", Content: []agentik.Content{agentik.Text("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty")}})
	}
	return req
}

// BenchmarkRequestBody: the direct encoder against openai-go's param
// types (go test -run '^$' -bench RequestBody -benchmem ./openai).
func BenchmarkRequestBody(b *testing.B) {
	l, err := New(Options{Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := l.body(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("params", func(b *testing.B) {
		for b.Loop() {
			p, err := l.params(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
