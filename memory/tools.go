package memory

import (
	"context"
	"encoding/json"

	"github.com/agentik/agentik"
)

// Tools are the memory tools the agent is offered when it has memory:
// plain tools, so the approval policy and allow/deny apply to them as to
// any other.
func (s *Service) Tools() []agentik.Tool {
	if !s.Enabled() {
		return nil
	}
	return []agentik.Tool{appendTool{s}, replaceTool{s}}
}

type appendTool struct{ s *Service }

type replaceTool struct{ s *Service }

// Spec describes memory_append.
func (appendTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{
		Name:        "memory_append",
		Description: "Adds text, on a line of its own, to one of your memory blocks (shown in <memory>): it stays across conversations with this person. Use it for lasting facts and preferences, not for the conversation's details.",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"label":{"type":"string","description":"the block's label"},` +
			`"text":{"type":"string","description":"the text to add"}},"required":["label","text"],"additionalProperties":false}`),
		Source: "builtin",
	}
}

// Spec describes memory_replace.
func (replaceTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{
		Name:        "memory_replace",
		Description: "Replaces text in one of your memory blocks (shown in <memory>): old_text must occur exactly once in the block; new_text may be empty to delete it.",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"label":{"type":"string","description":"the block's label"},` +
			`"old_text":{"type":"string","description":"the exact text to replace, occurring once"},` +
			`"new_text":{"type":"string","description":"the text to put in its place"}},"required":["label","old_text","new_text"],"additionalProperties":false}`),
		Source: "builtin",
	}
}

// ToolArgs are the arguments of memory_append (Label, Text) and
// memory_replace (Label, OldText, NewText).
type ToolArgs struct {
	Label   *string `json:"label"`
	Text    *string `json:"text"`
	OldText *string `json:"old_text"`
	NewText *string `json:"new_text"`
}

// DecodeToolArgs decodes a memory tool's arguments: a JSON object whose
// fields named in want are strings; a message for the model otherwise.
func DecodeToolArgs(args agentik.RawJSON, want ...string) (ToolArgs, string) {
	var a ToolArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return a, "arguments must be a JSON object whose fields are strings"
	}
	have := map[string]*string{"label": a.Label, "text": a.Text, "old_text": a.OldText, "new_text": a.NewText}
	for _, w := range want {
		if have[w] == nil {
			return a, "the argument " + w + " (a string) is required"
		}
	}
	return a, ""
}

// Call appends.
func (t appendTool) Call(ctx context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	a, bad := DecodeToolArgs(args, "label", "text")
	if bad != "" {
		return agentik.ErrorResult(bad), nil
	}
	return result(t.s.Append(ctx, *a.Label, *a.Text))
}

// Call replaces.
func (t replaceTool) Call(ctx context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	a, bad := DecodeToolArgs(args, "label", "old_text", "new_text")
	if bad != "" {
		return agentik.ErrorResult(bad), nil
	}
	return result(t.s.Replace(ctx, *a.Label, *a.OldText, *a.NewText))
}

// result is the tool result of a change: the model sees why a change was
// refused and may try again; a store failure is a Go error.
func result(b agentik.MemoryBlock, err error) (agentik.ToolResult, error) {
	switch agentik.ErrorCode(err) {
	case "":
		return agentik.ToolResult{Content: []agentik.Content{agentik.Text(describe(b))}}, nil
	case agentik.ENotFound, agentik.EConflict, agentik.ETooLarge, agentik.EInvalid:
		return agentik.ErrorResult(agentik.ErrorMessage(err)), nil
	}
	return agentik.ToolResult{}, err
}
