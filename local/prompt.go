package local

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hybridgroup/yzma/pkg/llama"

	"github.com/agentik/agentik"
)

// The tool protocol told to a model whose template has no tool format of
// its own (llama.cpp's template engine offers none): the model answers with
// toolCallTag and one JSON object, which a grammar then enforces.
const toolCallTag = "<tool_call>"

// chatMessage is one message for the chat template.
type chatMessage struct{ role, content string }

// messages renders req as the roles every chat template knows (system,
// user, assistant): tool calls and results are written in the tool
// protocol's tags, a compaction summary is a system note, an image a text
// note.
func messages(req agentik.ModelRequest) []chatMessage {
	var out []chatMessage
	system := req.System
	if len(req.Tools) > 0 {
		system = strings.TrimSpace(system + "\n\n" + toolPrompt(req.Tools))
	}
	if system != "" {
		out = append(out, chatMessage{"system", system})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			out = append(out, chatMessage{"user", text(m.Content)})
		case "assistant":
			var b strings.Builder
			b.WriteString(text(m.Content))
			for _, c := range m.ToolCalls {
				call, _ := json.Marshal(struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				}{c.Name, json.RawMessage(orEmpty(c.Arguments))})
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(toolCallTag + string(call) + "</tool_call>")
			}
			out = append(out, chatMessage{"assistant", b.String()})
		case "tool":
			status := ""
			if m.IsError {
				status = " error"
			}
			out = append(out, chatMessage{"user", fmt.Sprintf("<tool_response name=%q%s>\n%s\n</tool_response>", m.Name, status, text(m.Content))})
		case "summary":
			out = append(out, chatMessage{"system", "Summary of the conversation so far:\n" + text(m.Content)})
		}
	}
	return out
}

func orEmpty(raw agentik.RawJSON) []byte {
	if len(raw) == 0 || !json.Valid(raw) {
		return []byte("{}")
	}
	return raw
}

// text joins a message's text parts; an image becomes a note (the local
// model takes no images).
func text(parts []agentik.Content) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case agentik.ContentText:
			b.WriteString(p.Text)
		case agentik.ContentImage:
			b.WriteString("[an image the model cannot see]")
		}
	}
	return b.String()
}

// toolPrompt tells the model its tools and how to call one.
func toolPrompt(tools []agentik.ToolSpec) string {
	var b strings.Builder
	b.WriteString("# Tools\n\nYou may call one of these tools. To call one, answer with nothing but " + toolCallTag +
		` followed by a JSON object {"name": <tool name>, "arguments": <arguments object>}. The result comes back in <tool_response>.` + "\n")
	for _, t := range tools {
		spec, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{t.Name, t.Description, json.RawMessage(orEmpty(t.Parameters))})
		b.WriteString("\n" + string(spec))
	}
	return b.String()
}

// applyTemplate renders msgs with the chat template tmpl (llama.cpp's
// built-in engine, which recognises the common templates by their text)
// and opens the assistant's answer.
func applyTemplate(tmpl string, msgs []chatMessage) (string, error) {
	chat := make([]llama.ChatMessage, len(msgs))
	size := 256
	for i, m := range msgs {
		chat[i] = llama.NewChatMessage(m.role, strings.ReplaceAll(m.content, "\x00", ""))
		size += 2 * (len(m.role) + len(m.content))
	}
	buf := make([]byte, size)
	n := llama.ChatApplyTemplate(tmpl, chat, true, buf)
	if int(n) > len(buf) {
		buf = make([]byte, n)
		n = llama.ChatApplyTemplate(tmpl, chat, true, buf)
	}
	if n < 0 {
		return "", fmt.Errorf("llama.cpp does not know this model's chat template")
	}
	return string(buf[:n]), nil
}
