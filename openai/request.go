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
	if n := maxTokens(l.opts.MaxTokens, req.Params); n > 0 {
		b = append(b, ',')
		b = appendString(b, l.opts.MaxTokensField)
		b = append(b, ':')
		b = strconv.AppendInt(b, n, 10)
	}
	if p := req.Params; p != nil {
		if p.Temperature != nil {
			b = strconv.AppendFloat(append(b, `,"temperature":`...), *p.Temperature, 'g', -1, 64)
		}
		if p.TopP != nil {
			b = strconv.AppendFloat(append(b, `,"top_p":`...), *p.TopP, 'g', -1, 64)
		}
		if p.Seed != nil {
			b = strconv.AppendInt(append(b, `,"seed":`...), *p.Seed, 10)
		}
	}
	b = append(b, `,"messages":[`...)
	w := messagesWriter{l: l, b: b}
	if req.System != "" {
		w.open("system")
		w.b = appendString(w.b, req.System)
		w.b = append(w.b, '}')
	}
	for i := range req.Messages {
		if err := w.message(i, &req.Messages[i]); err != nil {
			return nil, err
		}
	}
	w.flush()
	b = append(w.b, ']')
	b, err := appendTools(b, req.Tools)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// maxTokens is the output limit of a call: the turn's (the client's), or
// the configured one, the smaller when both are set — the configured
// limit stays a bound. 0: none.
func maxTokens(configured int, p *agentik.ModelParams) int64 {
	n := int64(configured)
	if p != nil && p.MaxTokens != nil && *p.MaxTokens > 0 && (n <= 0 || *p.MaxTokens < n) {
		n = *p.MaxTokens
	}
	return n
}

// messagesWriter writes the messages array of a request.
type messagesWriter struct {
	l          *LLM
	b          []byte
	n          int               // messages written
	toolImages []agentik.Content // tool image parts, with their captions as text parts
}

// open starts a message of role, up to its content.
func (w *messagesWriter) open(role string) {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.b = append(w.b, `{"role":"`...)
	w.b = append(w.b, role...)
	w.b = append(w.b, `","content":`...)
}

// flush writes the images of the run of tool messages just written as one
// user message.
func (w *messagesWriter) flush() {
	if len(w.toolImages) > 0 {
		w.open("user")
		w.b = w.l.appendParts(w.b, w.toolImages)
		w.b = append(w.b, '}')
		w.toolImages = w.toolImages[:0]
	}
}

// message writes message i, m.
func (w *messagesWriter) message(i int, m *agentik.ModelMessage) error {
	if m.Role != "tool" {
		w.flush()
	}
	switch m.Role {
	case "user":
		w.open("user")
		if agentik.HasImage(m.Content) {
			w.b = w.l.appendParts(w.b, m.Content)
		} else {
			w.b = appendString(w.b, agentik.JoinText(m.Content))
		}
		w.b = append(w.b, '}')
	case "assistant":
		w.assistant(m)
	case "tool":
		w.tool(m)
	case "summary":
		w.open("system")
		w.b = appendString(w.b, summaryPrefix+agentik.JoinText(m.Content))
		w.b = append(w.b, '}')
	default:
		return fmt.Errorf("message %d has unknown role %q", i, m.Role)
	}
	return nil
}

func (w *messagesWriter) assistant(m *agentik.ModelMessage) {
	w.open("assistant")
	w.b = appendString(w.b, agentik.JoinText(m.Content))
	if len(m.ToolCalls) > 0 {
		w.b = append(w.b, `,"tool_calls":[`...)
		for j, tc := range m.ToolCalls {
			if j > 0 {
				w.b = append(w.b, ',')
			}
			args := string(tc.Arguments)
			if args == "" {
				args = "{}"
			}
			w.b = append(w.b, `{"id":`...)
			w.b = appendString(w.b, tc.ID)
			w.b = append(w.b, `,"type":"function","function":{"name":`...)
			w.b = appendString(w.b, tc.Name)
			w.b = append(w.b, `,"arguments":`...)
			w.b = appendString(w.b, args)
			w.b = append(w.b, `}}`...)
		}
		w.b = append(w.b, ']')
	}
	if w.l.opts.SendReasoning && m.Reasoning != "" {
		w.b = append(w.b, `,"reasoning_content":`...)
		w.b = appendString(w.b, m.Reasoning)
	}
	w.b = append(w.b, '}')
}

// tool writes a tool message, and keeps its images for the user message
// that follows the run of tool messages (flush).
func (w *messagesWriter) tool(m *agentik.ModelMessage) {
	text := agentik.JoinText(m.Content)
	if m.IsError {
		text = "Error: " + text
	}
	if text == "" {
		text = "(no output)" // some servers reject empty tool content
	}
	w.open("tool")
	w.b = appendString(w.b, text)
	w.b = append(w.b, `,"tool_call_id":`...)
	w.b = appendString(w.b, m.CallID)
	w.b = append(w.b, '}')
	if agentik.HasImage(m.Content) {
		if len(w.toolImages) == 0 {
			w.toolImages = append(w.toolImages, agentik.Text("Images returned by the tool calls above:"))
		}
		w.toolImages = append(w.toolImages, agentik.Text(fmt.Sprintf("From %s (%s):", m.Name, m.CallID)))
		for _, c := range m.Content {
			if c.Type == agentik.ContentImage {
				w.toolImages = append(w.toolImages, c)
			}
		}
	}
}

// appendTools appends the tools field, if there are tools.
func appendTools(b []byte, tools []agentik.ToolSpec) ([]byte, error) {
	if len(tools) == 0 {
		return b, nil
	}
	b = append(b, `,"tools":[`...)
	for i, t := range tools {
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
	return append(b, ']'), nil
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
