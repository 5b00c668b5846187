package openaiapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentik/agentik"
)

// ResponseRequest is the body of POST /v1/responses: the fields Agentik
// reads. The sampling parameters (temperature, top_p, max_output_tokens)
// go to the model for the turn; other fields that do not change the
// meaning of a request (user, …) are accepted and not used.
type ResponseRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Stream             bool            `json:"stream"`
	Background         bool            `json:"background"`
	Store              *bool           `json:"store"`
	Tools              []ResponseTool  `json:"tools"`
	Text               *struct {
		Format *ResponseFormat `json:"format"`
	} `json:"text"`
	Metadata    map[string]string `json:"metadata"`
	Temperature *float64          `json:"temperature"`
	TopP        *float64          `json:"top_p"`
	User        string            `json:"user"`
	// MaxOutputTokens bounds each model call of the turn.
	MaxOutputTokens *int64 `json:"max_output_tokens"`

	items []InputItem // Input decoded
	conv  string      // Conversation decoded
}

// ResponseTool is a tool of a Responses request: a function tool is a
// client tool.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// InputItem is one item of a Responses input.
type InputItem struct {
	Type              string          `json:"type"`
	Role              string          `json:"role"`
	Content           json.RawMessage `json:"content"`
	CallID            string          `json:"call_id"`
	Output            json.RawMessage `json:"output"`
	ApprovalRequestID string          `json:"approval_request_id"`
	Approve           *bool           `json:"approve"`
	Reason            string          `json:"reason"`
	Name              string          `json:"name"`
	Arguments         string          `json:"arguments"`
}

// DecodeResponse decodes and checks a Responses request.
func DecodeResponse(b []byte) (ResponseRequest, error) {
	var req ResponseRequest
	if err := decodeStrict(b, &req); err != nil {
		return req, err
	}
	if t := req.Text; t != nil && t.Format != nil && t.Format.Type != "" && t.Format.Type != "text" {
		return req, param(agentik.EInvalid, "text.format", "text.format: only text is supported, not %q", t.Format.Type)
	}
	if err := checkSampling(req.Temperature, req.TopP); err != nil {
		return req, err
	}
	if err := checkMax("max_output_tokens", req.MaxOutputTokens); err != nil {
		return req, err
	}
	var tools []FunctionSpec
	for i, t := range req.Tools {
		if t.Type != "function" {
			return req, param(agentik.EInvalid, fmt.Sprintf("tools[%d].type", i), "tools[%d]: only function tools are taken (the agent's own tools are its own), not %q", i, t.Type)
		}
		tools = append(tools, FunctionSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if err := checkTools(tools, "tools"); err != nil {
		return req, err
	}
	if err := req.decodeConversation(); err != nil {
		return req, err
	}
	if req.conv != "" && req.PreviousResponseID != "" {
		return req, param(agentik.EInvalid, "conversation", "conversation and previous_response_id cannot both be set")
	}
	if req.Background && req.Store != nil && !*req.Store {
		return req, param(agentik.EInvalid, "background", "background responses must be stored")
	}
	items, err := decodeInput(req.Input)
	if err != nil {
		return req, err
	}
	req.items = items
	return req, nil
}

// decodeConversation reads conversation: an id or {"id": …}.
func (req *ResponseRequest) decodeConversation() error {
	raw := bytes.TrimSpace(req.Conversation)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if json.Unmarshal(raw, &req.conv) == nil {
		return nil
	}
	var o struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &o) != nil || o.ID == "" {
		return param(agentik.EMalformed, "conversation", "conversation: want an id or {\"id\": …}")
	}
	req.conv = o.ID
	return nil
}

// decodeInput reads input: a text (one user message) or an array of items.
func decodeInput(raw json.RawMessage) ([]InputItem, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, param(agentik.EInvalid, "input", "input: required")
	}
	if raw[0] == '"' {
		return []InputItem{{Type: "message", Role: "user", Content: raw}}, nil
	}
	var items []InputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, param(agentik.EMalformed, "input", "input: want a string or an array of items")
	}
	if len(items) == 0 {
		return nil, param(agentik.EInvalid, "input", "input: required (an empty list brings nothing to answer)")
	}
	for i := range items {
		it := &items[i]
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			switch it.Role {
			case "user", "system", "developer", "assistant":
			default:
				return nil, param(agentik.EInvalid, fmt.Sprintf("input[%d].role", i), "input[%d]: unknown role %q", i, it.Role)
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, param(agentik.EInvalid, fmt.Sprintf("input[%d].call_id", i), "input[%d]: call_id is required", i)
			}
		case "mcp_approval_response":
			if it.ApprovalRequestID == "" || it.Approve == nil {
				return nil, param(agentik.EInvalid, fmt.Sprintf("input[%d]", i), "input[%d]: approval_request_id and approve are required", i)
			}
		case "function_call", "item_reference", "reasoning", "mcp_call", "mcp_approval_request":
			// History the client echoes; the conversation holds it.
		default:
			return nil, param(agentik.EInvalid, fmt.Sprintf("input[%d].type", i), "input[%d]: items of type %q are not taken", i, it.Type)
		}
	}
	return items, nil
}

// outputText reads a function_call_output's output: a text or content
// parts.
func outputText(raw json.RawMessage) ([]agentik.Content, error) {
	return contentOf(raw, "output")
}
