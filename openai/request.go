package openai

import (
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentik/agentik"
)

// summaryPrefix introduces a compaction summary to the model.
const summaryPrefix = "Summary of the earlier conversation:\n"

// params builds the Chat Completions request for req.
func (l *LLM) params(req agentik.ModelRequest) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{
		Model:         l.opts.Model,
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}
	if l.opts.MaxTokens > 0 {
		if l.opts.MaxTokensField == MaxTokens {
			p.MaxTokens = oai.Int(int64(l.opts.MaxTokens))
		} else {
			p.MaxCompletionTokens = oai.Int(int64(l.opts.MaxTokens))
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
