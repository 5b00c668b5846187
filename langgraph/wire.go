package langgraph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
)

// LCMessage is a message in LangChain's serialised shape, as the LangGraph
// API carries it in thread values and streams.
type LCMessage struct {
	Type             string          `json:"type"`           // human | ai | tool | system
	Role             string          `json:"role,omitempty"` // input only: OpenAI-style role (user …) when type is absent
	ID               string          `json:"id,omitempty"`
	Content          json.RawMessage `json:"content"` // a string or content blocks
	Name             string          `json:"name,omitempty"`
	ToolCalls        []LCToolCall    `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	Status           string          `json:"status,omitempty"` // tool: success | error
	AdditionalKwargs json.RawMessage `json:"additional_kwargs,omitempty"`
	ResponseMetadata json.RawMessage `json:"response_metadata,omitempty"`
	UsageMetadata    *LCUsage        `json:"usage_metadata,omitempty"`
}

// LCToolCall is a tool call of an ai message.
type LCToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	Type string          `json:"type,omitempty"` // "tool_call"
}

// LCUsage is an ai message's token counts.
type LCUsage struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
	Total  int64 `json:"total_tokens"`
}

// lcBlock is one content block: text or an image (image_url with a data
// URL, LangChain's image shape, or the standard-block image with base64).
type lcBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	ImageURL json.RawMessage `json:"image_url,omitempty"`
	// Standard content blocks (langchain-core v1): {type:"image",
	// source_type:"base64", data, mime_type} and {type:"image", base64,
	// mime_type}.
	SourceType string `json:"source_type,omitempty"`
	Data       string `json:"data,omitempty"`
	Base64     string `json:"base64,omitempty"`
	MIMEType   string `json:"mime_type,omitempty"`
}

// toLangChain converts a head path (journal order) to LangChain messages:
// a user message is human; an assistant answer is ai, and the tool calls of
// its round join it (tool_calls); a tool result is tool. Error entries are
// not messages (the run says it failed).
func toLangChain(path []agentik.Message) []LCMessage {
	out := make([]LCMessage, 0, len(path))
	lastAI, lastReplyTo := -1, ""
	for i := range path {
		m := &path[i]
		switch m.Type {
		case agentik.MsgUser:
			out = append(out, LCMessage{Type: "human", ID: m.ID, Content: lcContent(ownContent(m))})
			lastAI = -1
		case agentik.MsgAssistant:
			out = append(out, aiMessage(m))
			lastAI, lastReplyTo = len(out)-1, m.ReplyTo
		case agentik.MsgToolCall:
			if lastAI < 0 || lastReplyTo != m.ReplyTo {
				out = append(out, LCMessage{Type: "ai", ID: m.ID, Content: jsonString("")})
				lastAI, lastReplyTo = len(out)-1, m.ReplyTo
			}
			out[lastAI].ToolCalls = append(out[lastAI].ToolCalls, toolCall(m))
		case agentik.MsgToolResult:
			status := "success"
			if m.IsError {
				status = "error"
			}
			out = append(out, LCMessage{Type: "tool", ID: m.ID, Name: m.Name, ToolCallID: m.CallID,
				Content: jsonString(agentik.JoinText(m.Content)), Status: status})
			lastAI = -1
		}
	}
	return out
}

// ownContent is a user message's content without the context parts a run
// sent with it (MetaContextParts).
func ownContent(m *agentik.Message) []agentik.Content {
	if m.Context == nil {
		return m.Content
	}
	n, _ := strconv.Atoi(m.Context.Metadata[MetaContextParts])
	if n <= 0 || n >= len(m.Content) {
		return m.Content
	}
	return m.Content[:len(m.Content)-n]
}

func aiMessage(m *agentik.Message) LCMessage {
	ai := LCMessage{Type: "ai", ID: m.ID, Content: jsonString(agentik.JoinText(m.Content))}
	if agentik.HasImage(m.Content) {
		ai.Content = lcContent(m.Content)
	}
	if m.Tokens != nil {
		ai.UsageMetadata = &LCUsage{Input: m.Tokens.Input, Output: m.Tokens.Output, Total: m.Tokens.Input + m.Tokens.Output}
	}
	return ai
}

func toolCall(m *agentik.Message) LCToolCall {
	args := json.RawMessage(m.Arguments)
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	return LCToolCall{ID: m.CallID, Name: m.Name, Args: args, Type: "tool_call"}
}

// lcContent is a plain string for text-only content (what clients render
// most simply) and blocks when images are present.
func lcContent(parts []agentik.Content) json.RawMessage {
	if !agentik.HasImage(parts) {
		return jsonString(agentik.JoinText(parts))
	}
	blocks := make([]lcBlock, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case agentik.ContentText:
			blocks = append(blocks, lcBlock{Type: "text", Text: p.Text})
		case agentik.ContentImage:
			url, _ := json.Marshal(map[string]string{"url": "data:" + p.MIME + ";base64," + p.Data})
			blocks = append(blocks, lcBlock{Type: "image_url", ImageURL: url})
		}
	}
	b, _ := json.Marshal(blocks)
	return b
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// fromLangChain converts a human input message to Agentik content.
func fromLangChain(m LCMessage) ([]agentik.Content, error) {
	switch lcType(m) {
	case "human", "user":
	case "system", "developer", "ai", "assistant":
		return nil, agentik.Errorf(agentik.EInvalid, "a %s message is no message of its own here: send it with a human message, which it is context of", lcType(m))
	default:
		return nil, agentik.Errorf(agentik.EInvalid, "input message of type %q: a run's input is human messages, after the history it resends (human, ai, tool) and with system messages", m.Type)
	}
	return decodeContent(m.Content)
}

func lcType(m LCMessage) string {
	if m.Type == "" {
		return m.Role
	}
	return m.Type
}

// MetaContextParts counts the trailing text parts of a stored user
// message that are a run's context — its earlier ai and human messages,
// its system messages — not what the person wrote: the model reads them,
// the thread's messages do not show them.
const MetaContextParts = "langgraph.context_parts"

// runInput converts a run's input messages to one user message: the
// trailing human messages are its content; the messages before them (a
// client that sends its whole history, as stateless clients do) and the
// system messages anywhere go with it as context, text parts the model
// reads after it — a system message adds to the assistant's
// instructions, never replaces them. ctxParts counts those parts. Input
// that ends with anything but human (or system) messages is refused: the
// assistant's answers and tool results are its own.
func runInput(msgs []LCMessage) (content []agentik.Content, ctxParts int, err error) {
	last := len(msgs)
	for last > 0 && (lcType(msgs[last-1]) == "human" || lcType(msgs[last-1]) == "user" || isSystem(msgs[last-1])) {
		last--
	}
	var prior, system []string
	for i, m := range msgs {
		switch {
		case isSystem(m):
			c, err := decodeContent(m.Content)
			if err != nil {
				return nil, 0, err
			}
			system = append(system, agentik.JoinText(c))
		case i >= last:
			c, err := fromLangChain(m)
			if err != nil {
				return nil, 0, err
			}
			content = append(content, c...)
		default:
			role, ok := priorRoles[lcType(m)]
			if !ok {
				_, err := fromLangChain(m)
				return nil, 0, err
			}
			text, err := priorText(m)
			if err != nil {
				return nil, 0, err
			}
			if text != "" { // an ai message with only tool calls says nothing
				prior = append(prior, role+": "+text)
			}
		}
	}
	if len(content) == 0 {
		return nil, 0, agentik.Errorf(agentik.EInvalid, "input.messages: the run's input ends with no human message to answer")
	}
	if len(prior) > 0 {
		content, ctxParts = append(content, agentik.Text("<earlier_messages>\n"+strings.Join(prior, "\n")+"\n</earlier_messages>")), ctxParts+1
	}
	if len(system) > 0 {
		content, ctxParts = append(content, agentik.Text("<instructions>\n"+strings.Join(system, "\n")+"\n</instructions>")), ctxParts+1
	}
	return content, ctxParts, nil
}

// priorRoles names the messages a resent history may hold before the
// run's human messages, as the model reads them.
var priorRoles = map[string]string{"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "tool": "tool"}

// priorText is the text of an earlier message of a resent history: empty
// content is no error there (an ai message that only called tools).
func priorText(m LCMessage) (string, error) {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var blocks []lcBlock
	if json.Unmarshal(m.Content, &blocks) == nil && len(blocks) == 0 {
		return "", nil
	}
	c, err := decodeContent(m.Content)
	if err != nil {
		return "", err
	}
	return agentik.JoinText(c), nil
}

func isSystem(m LCMessage) bool { t := lcType(m); return t == "system" || t == "developer" }

// decodeContent reads a string or an array of content blocks.
func decodeContent(raw json.RawMessage) ([]agentik.Content, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return nil, agentik.Errorf(agentik.EInvalid, "message content is empty")
		}
		return []agentik.Content{agentik.Text(s)}, nil
	}
	var blocks []lcBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "message content must be a string or an array of content blocks")
	}
	out := make([]agentik.Content, 0, len(blocks))
	for _, b := range blocks {
		c, err := blockContent(b)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, agentik.Errorf(agentik.EInvalid, "message content is empty")
	}
	return out, nil
}

func blockContent(b lcBlock) (agentik.Content, error) {
	switch b.Type {
	case "text":
		return agentik.Text(b.Text), nil
	case "image_url":
		var url string
		var obj struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(b.ImageURL, &url) != nil {
			if json.Unmarshal(b.ImageURL, &obj) != nil {
				return agentik.Content{}, agentik.Errorf(agentik.EInvalid, "image_url must be a string or {url}")
			}
			url = obj.URL
		}
		return dataURL(url)
	case "image":
		data := b.Data
		if data == "" {
			data = b.Base64
		}
		if data == "" || (b.SourceType != "" && b.SourceType != "base64") {
			return agentik.Content{}, agentik.Errorf(agentik.EInvalid, "an image block must carry base64 data (URLs are not fetched)")
		}
		return agentik.Content{Type: agentik.ContentImage, MIME: b.MIMEType, Data: data}, nil
	}
	return agentik.Content{}, agentik.Errorf(agentik.EInvalid, "content block of type %q is not supported (text, image_url, image)", b.Type)
}

// dataURL reads a data:<mime>;base64,<data> URL; other URLs are not
// fetched.
func dataURL(url string) (agentik.Content, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	mime, data, ok2 := strings.Cut(rest, ";base64,")
	if !ok || !ok2 {
		return agentik.Content{}, agentik.Errorf(agentik.EInvalid, "image_url must be a data: URL with base64 data (URLs are not fetched)")
	}
	return agentik.Content{Type: agentik.ContentImage, MIME: mime, Data: data}, nil
}

// Checkpoints. A thread's checkpoints are the boundaries of its head path:
// the empty thread, and after each message that ends a step (a user
// message: the input is in; a message that closes a turn or an interrupted
// answer: the turn is over). A checkpoint id is a UUID-shaped string: its
// first 20 hex digits are the thread's tag (derived from the thread's id,
// so that an id is its thread's only) and its last 12 the journal seq it
// ends at, of fixed width so that a thread's ids sort in the order they
// were made, as LangGraph's clients assume (they compare checkpoint ids as
// strings).
func checkpointID(thread string, seq int64) string {
	return fmt.Sprintf("%s%012x", checkpointTag(thread), seq)
}

// checkpointTag is the first 24 characters of the thread's checkpoint ids:
// 20 hex digits of the SHA-256 of its id, in a UUID's groups.
func checkpointTag(thread string) string {
	sum := sha256.Sum256([]byte(thread))
	h := hex.EncodeToString(sum[:10])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-"
}

// parseCheckpoint returns the seq a checkpoint id of the thread names; an
// id of another thread (or none) is false.
func parseCheckpoint(thread, id string) (int64, bool) {
	tag := checkpointTag(thread)
	digits, ok := strings.CutPrefix(id, tag)
	if !ok || len(digits) != 12 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 16, 64)
	// One spelling only: the one checkpointID writes (no sign, lower case).
	return n, err == nil && n >= 0 && checkpointID(thread, n) == id
}
