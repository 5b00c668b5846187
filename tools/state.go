package tools

import (
	"context"
	"encoding/json"

	"github.com/agentik/agentik"
)

// UpdateState is the built-in update_state tool (SPEC §19, docs/state.md):
// the agent changes the conversation's shared state with an RFC 6902
// patch. A patch that does not apply, or would make the state too large,
// is an error result the model sees, and nothing changes.
type UpdateState struct{}

var _ agentik.Tool = UpdateState{}

// Spec describes update_state.
func (UpdateState) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{
		Name: "update_state",
		Description: "Changes the state this conversation shares with the user's application (shown to you in <state>). " +
			"Pass a JSON Patch (RFC 6902): a list of operations such as " +
			`{"op":"replace","path":"/count","value":2}, {"op":"add","path":"/items/-","value":"x"} or {"op":"remove","path":"/done"}. ` +
			"The state must stay a JSON object. Returns the new state.",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"patch":{"type":"array","description":"RFC 6902 JSON Patch operations",` +
			`"items":{"type":"object","properties":{"op":{"type":"string","enum":["add","remove","replace","move","copy","test"]},` +
			`"path":{"type":"string"},"from":{"type":"string"},"value":{}},"required":["op","path"]}}},"required":["patch"]}`),
		Source: "builtin",
	}
}

// Call applies the patch to the state of the call's conversation.
func (UpdateState) Call(ctx context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	s := agentik.SharedStateFrom(ctx)
	if s == nil {
		return agentik.ErrorResult("this conversation has no shared state"), nil
	}
	var in struct {
		Patch json.RawMessage `json:"patch"`
	}
	if err := json.Unmarshal(args, &in); err != nil || len(in.Patch) == 0 {
		return agentik.ErrorResult(`arguments must be {"patch": [operations]}`), nil
	}
	st, err := s.PatchSharedState(ctx, agentik.RawJSON(in.Patch))
	if err != nil {
		if agentik.ErrorCode(err) == agentik.EInvalid || agentik.ErrorCode(err) == agentik.ETooLarge {
			return agentik.ErrorResult("the state did not change: " + agentik.ErrorMessage(err)), nil
		}
		return agentik.ToolResult{}, err
	}
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text(string(st))}}, nil
}

// StateContext is the context source that shows the model the
// conversation's shared state, as <state>{…}</state> after the system
// prompt, on every model call; nothing while the state is empty.
type StateContext struct{}

var _ agentik.ContextSource = StateContext{}

// SystemContext renders the state. Its JSON escapes <, > and &, so no
// value can close the element.
func (StateContext) SystemContext(ctx context.Context) (string, error) {
	s := agentik.SharedStateFrom(ctx)
	if s == nil {
		return "", nil
	}
	st, err := s.SharedState(ctx)
	if err != nil || string(st) == "{}" {
		return "", err
	}
	return "The state this conversation shares with the user's application:\n<state>" + string(st) + "</state>", nil
}
