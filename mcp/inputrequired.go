package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/agentik/agentik"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// askState is the requestState of an ask that returned input_required
// (2026-07-28, SEP-2322): the parked turn, for the retry that carries the
// answers. It grants nothing: the retry reaches the conversation only
// through the caller's own principal, like any call.
type askState struct {
	Conversation string `json:"c"`
	Message      string `json:"m"` // the user message the turn answers
	Seq          int64  `json:"s"`
}

func (s askState) encode() string {
	b, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeAskState reads a requestState; ok is false for one this server
// did not hand out.
func decodeAskState(raw string) (askState, bool) {
	var s askState
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(b) > 1024 || json.Unmarshal(b, &s) != nil {
		return s, false
	}
	return s, agentik.ValidID(s.Conversation) && agentik.ValidID(s.Message) && s.Seq > 0
}

// inputRequired is the input_required result of a parked turn: an
// elicitation per pending call, keyed by call id, and the state the retry
// echoes.
func inputRequired(conv string, t *turn) *sdk.CallToolResult {
	reqs := sdk.InputRequestMap{}
	for id, p := range t.pending {
		reqs[id] = &sdk.ElicitParams{Mode: "form", Message: p.Prompt() + ". Allow it?", RequestedSchema: approvalSchema}
	}
	return &sdk.CallToolResult{InputRequests: reqs, RequestState: askState{Conversation: conv, Message: t.userID, Seq: t.userSeq}.encode()}
}

// resolution is the answer an elicitation result gives; ok is false for a
// cancel (no answer).
func resolution(res *sdk.ElicitResult) (agentik.Resolution, bool) {
	var r agentik.Resolution
	switch res.Action {
	case "accept":
		r.Approved, _ = res.Content["approved"].(bool)
		r.Reason, _ = res.Content["reason"].(string)
		if r.Approved {
			r.Reason = ""
		}
	case "decline":
		r.Reason = "declined in the MCP client"
	default:
		return r, false
	}
	if len(r.Reason) > agentik.MaxApprovalReason {
		r.Reason = r.Reason[:agentik.MaxApprovalReason]
	}
	return r, true
}

// resume is the retry of an ask that returned input_required: it answers
// the turn's pending calls with the client's responses, then follows the
// turn on as the first call would have.
func (f *front) resume(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, AskOutput, error) {
	st, ok := decodeAskState(req.Params.RequestState)
	if !ok {
		return toolError("requestState is not one this server handed out"), AskOutput{}, nil
	}
	conv, err := f.h.agent.Conversation(ctx, st.Conversation)
	if agentik.IsNotFound(err) {
		return toolError("conversation %q not found", st.Conversation), AskOutput{}, nil
	}
	if err != nil {
		return f.coreError(ctx, "open conversation", err), AskOutput{}, nil
	}
	defer conv.Close()
	stream, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		return f.coreError(ctx, "subscribe", err), AskOutput{}, nil
	}
	t := &turn{userID: st.Message, userSeq: st.Seq, pending: map[string]agentik.PendingApproval{}, resolved: map[string]bool{}}
	if fail := f.answer(ctx, req, conv, t); fail != nil {
		stream.Close()
		return fail, AskOutput{}, nil
	}
	return f.finish(ctx, req, conv, stream, t)
}

// answer reads what the turn wrote so far and its pending calls, and
// resolves those the client answered.
func (f *front) answer(ctx context.Context, req *sdk.CallToolRequest, conv agentik.Conversation, t *turn) *sdk.CallToolResult {
	if err := f.settle(ctx, conv, t); err != nil {
		return f.coreError(ctx, "read the turn", err)
	}
	pending, err := conv.Approvals(ctx)
	if err != nil {
		return f.coreError(ctx, "read approvals", err)
	}
	for _, p := range pending {
		if p.ReplyTo == t.userID {
			t.pending[p.CallID] = p
		}
	}
	for id, resp := range req.Params.InputResponses {
		er, ok := resp.(*sdk.ElicitResult)
		if _, mine := t.pending[id]; !ok || !mine {
			continue // answered meanwhile, or not a call of this turn
		}
		r, ok := resolution(er)
		if !ok {
			// Cancel: the client gives no answer (a bridge whose client
			// cannot be asked); say where else to give it.
			return waitingElsewhere(conv.ID(), t.pending[id])
		}
		if err := conv.Resolve(ctx, id, r); err != nil && agentik.ErrorCode(err) != agentik.EConflict {
			return f.coreError(ctx, "resolve approval", err)
		}
		delete(t.pending, id)
		t.resolved[id] = true
	}
	// Calls still pending (a cancel, or one the client skipped) park the
	// turn again: the loop asks once more.
	t.awaiting = len(t.pending) > 0 && !t.ended
	return nil
}
