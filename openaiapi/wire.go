package openaiapi

import (
	"net/http"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// chatCompletion is a chat.completion or a chat.completion.chunk.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

// chatChoice is the one choice of a completion (Message) or chunk (Delta).
type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatOutMessage `json:"message,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
	Logprobs     *struct{}       `json:"logprobs"`
}

// chatOutMessage is the assistant message of a completion.
type chatOutMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ChatToolCall `json:"tool_calls,omitempty"`
	Refusal          *string        `json:"refusal"`
}

// chatDelta is the delta of a chunk.
type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          string          `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
}

// chunkToolCall is a tool call of a chunk: with its index.
type chunkToolCall struct {
	Index int `json:"index"`
	ChatToolCall
}

// chatUsage is a completion's token usage.
type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func usageOf(t *agentik.TurnTokens) *chatUsage {
	var u chatUsage
	if t != nil {
		u = chatUsage{PromptTokens: t.Input, CompletionTokens: t.Output, TotalTokens: t.Input + t.Output}
	}
	return &u
}

// writeJSON answers v.
func writeJSON(w http.ResponseWriter, status int, v any) { edge.WriteJSON(w, status, v) }

// openAIErrorBody is err in OpenAI's shape, for an error inside a stream.
func openAIErrorBody(err error) (int, edge.OpenAIErrorBody) { return edge.OpenAIError(err) }
