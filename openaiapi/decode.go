package openaiapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// ChatRequest is the body of POST /v1/chat/completions: the fields Agentik
// reads. The sampling parameters (temperature, top_p, seed, max_tokens or
// max_completion_tokens) go to the model for the turn; other fields that do
// not change the meaning of a request (user, …) are accepted and not used.
type ChatRequest struct {
	Model          string          `json:"model"`
	Messages       []ChatMessage   `json:"messages"`
	Stream         bool            `json:"stream"`
	StreamOptions  *StreamOptions  `json:"stream_options"`
	N              *int            `json:"n"`
	ResponseFormat *ResponseFormat `json:"response_format"`
	Tools          []ChatTool      `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	Temperature    *float64        `json:"temperature"`
	TopP           *float64        `json:"top_p"`
	Seed           *int64          `json:"seed"`
	User           string          `json:"user"`
	// MaxTokens is the older name of MaxCompletionTokens.
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
}

// StreamOptions are a streamed completion's options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ResponseFormat is a completion's response_format: only text is taken.
type ResponseFormat struct {
	Type string `json:"type"`
}

// ChatMessage is one message of a Chat Completions history. Content is a
// string, an array of parts or null.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []ChatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ChatToolCall is a tool call of an assistant message.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ChatFunction `json:"function"`
}

// ChatFunction is the function of a tool call.
type ChatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool is a tool of the request: a client tool.
type ChatTool struct {
	Type     string       `json:"type"`
	Function FunctionSpec `json:"function"`
}

// FunctionSpec describes a function tool.
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// contentPart is one part of an array content, in either API's naming.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// Bounds of what a request may carry.
const (
	maxToolNameLen = 64
	maxTools       = 128
)

// decodeStrict decodes outside JSON into v: CheckJSON first (duplicate keys,
// invalid UTF-8, depth), then encoding/json, whose type errors name the
// field that has the wrong type.
func decodeStrict(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return agentik.Errorf(agentik.EMalformed, "the request body is empty")
	}
	if err := agentik.CheckJSON(b); err != nil {
		return err
	}
	if !json.Valid(b) {
		return agentik.Errorf(agentik.EMalformed, "the request body is not valid JSON")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return edge.OpenAIParam(agentik.Errorf(agentik.EMalformed, "%s: want %s", te.Field, te.Type), te.Field, "invalid_type")
		}
		return agentik.Errorf(agentik.EMalformed, "the request body is not what this endpoint takes")
	}
	return nil
}

// DecodeChat decodes and checks a Chat Completions request.
func DecodeChat(b []byte) (ChatRequest, error) {
	var req ChatRequest
	if err := decodeStrict(b, &req); err != nil {
		return req, err
	}
	if req.N != nil && *req.N != 1 {
		return req, param(agentik.EInvalid, "n", "n: only 1 choice is produced")
	}
	if f := req.ResponseFormat; f != nil && f.Type != "" && f.Type != "text" {
		return req, param(agentik.EInvalid, "response_format", "response_format: only text is supported, not %q", f.Type)
	}
	if len(req.Messages) == 0 {
		return req, param(agentik.EInvalid, "messages", "messages: at least one message is required")
	}
	if err := checkSampling(req.Temperature, req.TopP); err != nil {
		return req, err
	}
	if err := checkMax("max_tokens", req.MaxTokens); err != nil {
		return req, err
	}
	if err := checkMax("max_completion_tokens", req.MaxCompletionTokens); err != nil {
		return req, err
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return req, param(agentik.EInvalid, fmt.Sprintf("messages[%d].role", i), "messages[%d]: unknown role %q", i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return req, param(agentik.EInvalid, fmt.Sprintf("messages[%d].tool_call_id", i), "messages[%d]: a tool message needs tool_call_id", i)
		}
	}
	tools := make([]FunctionSpec, 0, len(req.Tools))
	for i, t := range req.Tools {
		if t.Type != "function" {
			return req, param(agentik.EInvalid, fmt.Sprintf("tools[%d].type", i), "tools[%d]: only function tools are taken, not %q", i, t.Type)
		}
		tools = append(tools, t.Function)
	}
	if err := checkTools(tools, "tools"); err != nil {
		return req, err
	}
	return req, nil
}

// checkTools refuses client tools without a usable name or with
// parameters that are not a JSON object.
func checkTools(tools []FunctionSpec, field string) error {
	if len(tools) > maxTools {
		return param(agentik.EInvalid, field, "%s: at most %d tools", field, maxTools)
	}
	for i, t := range tools {
		if t.Name == "" || len(t.Name) > maxToolNameLen || strings.ContainsAny(t.Name, " \t\n/") {
			return param(agentik.EInvalid, fmt.Sprintf("%s[%d].name", field, i), "%s[%d]: a tool needs a name of 1 to %d characters without spaces", field, i, maxToolNameLen)
		}
		if len(t.Parameters) > 0 && !bytes.HasPrefix(bytes.TrimSpace(t.Parameters), []byte("{")) {
			return param(agentik.EInvalid, fmt.Sprintf("%s[%d].parameters", field, i), "%s[%d]: parameters must be a JSON Schema object", field, i)
		}
	}
	return nil
}

// toolSpecs are the client tools of a request as the core takes them.
func toolSpecs(tools []FunctionSpec) []agentik.ToolSpec {
	if len(tools) == 0 {
		return nil
	}
	out := make([]agentik.ToolSpec, len(tools))
	for i, t := range tools {
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = agentik.RawJSON(`{"type":"object","properties":{}}`)
		}
		out[i] = agentik.ToolSpec{Name: t.Name, Description: t.Description, Parameters: params, Source: "client"}
	}
	return out
}

// param is a refusal about one request parameter.
func param(code, name, format string, args ...any) error {
	return edge.OpenAIParam(agentik.Errorf(code, format, args...), name, "")
}

// contentOf turns a message content (a string, an array of text and image
// parts, or null) into the core's content.
func contentOf(raw json.RawMessage, field string) ([]agentik.Content, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, param(agentik.EMalformed, field, "%s: not a string", field)
		}
		if s == "" {
			return nil, nil
		}
		return []agentik.Content{agentik.Text(s)}, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, param(agentik.EMalformed, field, "%s: want a string or an array of content parts", field)
	}
	var out []agentik.Content
	for i, p := range parts {
		c, err := partOf(p)
		if err != nil {
			return nil, param(agentik.EInvalid, fmt.Sprintf("%s[%d]", field, i), "%s[%d]: %s", field, i, agentik.ErrorMessage(err))
		}
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// partOf is one content part; nil for an empty text.
func partOf(p contentPart) (*agentik.Content, error) {
	switch p.Type {
	case "text", "input_text", "output_text", "refusal":
		if p.Text == "" {
			return nil, nil
		}
		c := agentik.Text(p.Text)
		return &c, nil
	case "image_url", "input_image":
		url, err := imageURL(p.ImageURL)
		if err != nil {
			return nil, err
		}
		return imagePart(url)
	}
	return nil, agentik.Errorf(agentik.EInvalid, "content parts of type %q are not supported", p.Type)
}

// imageURL reads image_url: {"url": …} (Chat Completions) or a string
// (Responses).
func imageURL(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var o struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(raw, &o) != nil || o.URL == "" {
		return "", agentik.Errorf(agentik.EInvalid, "image_url needs a url")
	}
	return o.URL, nil
}

// imagePart takes an image given inline as a data: URL; the server fetches
// no URLs.
func imagePart(url string) (*agentik.Content, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	meta, data, ok2 := strings.Cut(rest, ",")
	mime, isB64 := strings.CutSuffix(meta, ";base64")
	if !ok || !ok2 || !isB64 {
		return nil, agentik.Errorf(agentik.EInvalid, "images are taken as base64 data: URLs only")
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, agentik.Errorf(agentik.EInvalid, "the image is not valid base64")
	}
	c := agentik.Content{Type: agentik.ContentImage, MIME: mime, Data: base64.StdEncoding.EncodeToString(raw)}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkSampling refuses a temperature outside 0 to 2 or a top_p outside 0
// to 1, as OpenAI does.
func checkSampling(temperature, topP *float64) error {
	if t := temperature; t != nil && (*t < 0 || *t > 2) {
		return param(agentik.EInvalid, "temperature", "temperature: want 0 to 2, not %g", *t)
	}
	if p := topP; p != nil && (*p < 0 || *p > 1) {
		return param(agentik.EInvalid, "top_p", "top_p: want 0 to 1, not %g", *p)
	}
	return nil
}

// checkMax refuses a token limit below 1.
func checkMax(name string, n *int64) error {
	if n != nil && *n < 1 {
		return param(agentik.EInvalid, name, "%s: want at least 1, not %d", name, *n)
	}
	return nil
}

// modelParams are the sampling parameters of a request for its turn (nil
// when it sets none).
func modelParams(temperature, topP *float64, seed, maxTokens *int64) *agentik.ModelParams {
	p := &agentik.ModelParams{Temperature: temperature, TopP: topP, Seed: seed, MaxTokens: maxTokens}
	if p.Empty() {
		return nil
	}
	return p
}

// params are the chat request's sampling parameters.
func (req *ChatRequest) params() *agentik.ModelParams {
	limit := req.MaxCompletionTokens
	if limit == nil {
		limit = req.MaxTokens
	}
	return modelParams(req.Temperature, req.TopP, req.Seed, limit)
}
