package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/jsonw"
)

// summaryPrefix introduces a compaction summary to the model.
const summaryPrefix = "Summary of the earlier conversation:\n"

// body writes the streaming Chat Completions request for req as JSON.
//
// It is written directly rather than built from openai-go's param types:
// their reflection-based encoder was a tenth of the server's CPU per turn.
// The shapes are the same (oracle_test.go checks the two agree):
//   - plain text goes as a string (understood by every server), content
//     parts only when there is an image;
//   - an assistant message always carries content, "" when it only called
//     tools (some servers reject a missing one);
//   - images returned by tools follow the run of tool messages as one user
//     message: a user message between two tool answers would break the rule
//     that an assistant's tool calls are followed by their tool messages.
func (l *LLM) body(req agentik.ModelRequest) ([]byte, error) {
	return l.appendBody(make([]byte, 0, 256+requestSize(req)), req)
}

// appendBody appends body's request to b.
func (l *LLM) appendBody(b []byte, req agentik.ModelRequest) ([]byte, error) {
	b = append(b, `{"model":`...)
	b = appendString(b, l.opts.Model)
	b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	if l.opts.MaxTokens > 0 {
		b = append(b, ',')
		b = appendString(b, l.opts.MaxTokensField)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(l.opts.MaxTokens), 10)
	}
	b = append(b, `,"messages":[`...)
	n := 0 // messages written
	open := func(role string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"role":"`...)
		b = append(b, role...)
		b = append(b, `","content":`...)
	}
	var toolImages []agentik.Content // tool image parts, with their captions as text parts
	flush := func() {
		if len(toolImages) > 0 {
			open("user")
			b = l.appendParts(b, toolImages)
			b = append(b, '}')
			toolImages = toolImages[:0]
		}
	}
	if req.System != "" {
		open("system")
		b = appendString(b, req.System)
		b = append(b, '}')
	}
	for i, m := range req.Messages {
		if m.Role != "tool" {
			flush()
		}
		switch m.Role {
		case "user":
			open("user")
			if agentik.HasImage(m.Content) {
				b = l.appendParts(b, m.Content)
			} else {
				b = appendString(b, agentik.JoinText(m.Content))
			}
			b = append(b, '}')
		case "assistant":
			open("assistant")
			b = appendString(b, agentik.JoinText(m.Content))
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for j, tc := range m.ToolCalls {
					if j > 0 {
						b = append(b, ',')
					}
					args := string(tc.Arguments)
					if args == "" {
						args = "{}"
					}
					b = append(b, `{"id":`...)
					b = appendString(b, tc.ID)
					b = append(b, `,"type":"function","function":{"name":`...)
					b = appendString(b, tc.Name)
					b = append(b, `,"arguments":`...)
					b = appendString(b, args)
					b = append(b, `}}`...)
				}
				b = append(b, ']')
			}
			if l.opts.SendReasoning && m.Reasoning != "" {
				b = append(b, `,"reasoning_content":`...)
				b = appendString(b, m.Reasoning)
			}
			b = append(b, '}')
		case "tool":
			text := agentik.JoinText(m.Content)
			if m.IsError {
				text = "Error: " + text
			}
			if text == "" {
				text = "(no output)" // some servers reject empty tool content
			}
			open("tool")
			b = appendString(b, text)
			b = append(b, `,"tool_call_id":`...)
			b = appendString(b, m.CallID)
			b = append(b, '}')
			if agentik.HasImage(m.Content) {
				if len(toolImages) == 0 {
					toolImages = append(toolImages, agentik.Text("Images returned by the tool calls above:"))
				}
				toolImages = append(toolImages, agentik.Text(fmt.Sprintf("From %s (%s):", m.Name, m.CallID)))
				for _, c := range m.Content {
					if c.Type == agentik.ContentImage {
						toolImages = append(toolImages, c)
					}
				}
			}
		case "summary":
			open("system")
			b = appendString(b, summaryPrefix+agentik.JoinText(m.Content))
			b = append(b, '}')
		default:
			return nil, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
	}
	flush()
	b = append(b, ']')
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = appendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = appendString(b, t.Description)
			}
			b = append(b, `,"parameters":`...)
			schema := bytes.TrimSpace(t.Parameters)
			switch {
			case len(schema) == 0 || string(schema) == "null":
				b = append(b, `{"type":"object","properties":{}}`...)
			case schema[0] == '{' && json.Valid(schema):
				b = append(b, schema...)
			default:
				return nil, fmt.Errorf("tool %s: parameters are not a JSON object", t.Name)
			}
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendParts writes content as an array of text and image_url parts.
func (l *LLM) appendParts(b []byte, content []agentik.Content) []byte {
	b = append(b, '[')
	for i, c := range content {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case c.Type != agentik.ContentImage:
			b = appendTextPart(b, c.Text)
		case !l.opts.ImageInput:
			// A model without image input answers image parts with 400;
			// images reach it only from tool results (the engine refuses
			// user images for such a model), as this note.
			b = appendTextPart(b, fmt.Sprintf("[%s image omitted: this model does not take images]", c.MIME))
		default:
			b = append(b, `{"type":"image_url","image_url":{"url":`...)
			b = appendString(b, "data:"+c.MIME+";base64,"+c.Data)
			b = append(b, `}}`...)
		}
	}
	return append(b, ']')
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = appendString(b, text)
	return append(b, '}')
}

// requestSize estimates the request's length, to allocate it once.
func requestSize(req agentik.ModelRequest) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += 48 + len(m.Reasoning)
		for _, c := range m.Content {
			n += len(c.Text) + len(c.Data) + 32
		}
		for _, tc := range m.ToolCalls {
			n += 80 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)*5/4
		}
	}
	for _, t := range req.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

func appendString(b []byte, s string) []byte { return jsonw.AppendString(b, s, false) }
