// Package tokens estimates how many tokens a model request takes, for
// deciding when working memory must be compacted.
//
// No pure-Go tokenizer for the model families Agentik talks to is available
// to this build, and the model behind an OpenAI-compatible endpoint is not
// known anyway (Llama, Qwen, GPT and DeepSeek tokenise differently). So the
// count is a documented estimate that errs on the high side:
//
//   - text: one token per 3 bytes of UTF-8, rounded up. English averages
//     about 4 bytes per token and code about 3; CJK text takes about one
//     token per 3-byte character. Over-counting only makes compaction start
//     a little early; under-counting would let a request overflow.
//   - every message: 4 tokens of framing (role and separators).
//   - every tool call: its name and arguments as text, plus 8.
//   - every image: ImageTokens, the cost OpenAI charges for a 1024×1024
//     picture at high detail.
//   - every offered tool: its name, description and JSON Schema as text,
//     plus 8.
//
// Guarantee: the estimate is deterministic, allocation-free and monotone —
// adding content never lowers it.
package tokens

import "github.com/agentik/agentik"

// Estimation constants (see the package comment).
const (
	BytesPerToken   = 3
	MessageOverhead = 4
	ToolOverhead    = 8
	ImageTokens     = 765
)

// Text estimates the tokens of s.
func Text(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// Content estimates the tokens of content parts.
func Content(parts []agentik.Content) int {
	n := 0
	for _, p := range parts {
		if p.Type == agentik.ContentImage {
			n += ImageTokens
		} else {
			n += Text(p.Text)
		}
	}
	return n
}

// Message estimates one model message. Reasoning counts only when it is
// sent back (sendReasoning).
func Message(m agentik.ModelMessage, sendReasoning bool) int {
	n := MessageOverhead + Content(m.Content)
	if sendReasoning {
		n += Text(m.Reasoning)
	}
	for _, tc := range m.ToolCalls {
		n += ToolOverhead + Text(tc.ID) + Text(tc.Name) + Text(string(tc.Arguments))
	}
	if m.CallID != "" {
		n += Text(m.CallID)
	}
	return n
}

// Tools estimates the tool definitions offered to the model.
func Tools(specs []agentik.ToolSpec) int {
	n := 0
	for _, t := range specs {
		n += ToolOverhead + Text(t.Name) + Text(t.Description) + Text(string(t.Parameters))
	}
	return n
}

// Request estimates a whole model request: system prompt, messages and tools.
func Request(req agentik.ModelRequest, sendReasoning bool) int {
	n := Tools(req.Tools)
	if req.System != "" {
		n += MessageOverhead + Text(req.System)
	}
	for _, m := range req.Messages {
		n += Message(m, sendReasoning)
	}
	return n
}
