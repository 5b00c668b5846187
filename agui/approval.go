package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik"
)

// Tool approval over AG-UI (SPEC §10, docs/approvals.md).
//
// AG-UI 1.0: a run whose turn parks on approvals ends with
// RUN_FINISHED{outcome:{type:"interrupt", interrupts}}, one interrupt per
// pending call (id = toolCallId = the call id, reason "tool_approval"); the
// client answers with a new run on the same thread whose
// RunAgentInput.resume holds one entry per interrupt:
// {interruptId, status:"resolved", payload:{approved, reason?, arguments?}}
// or {interruptId, status:"cancelled"} (a denial, reason "cancelled"). The
// run then follows the resumed turn to its end.
//
// Before 1.0 (Dialect00, e.g. CopilotKit's pinned @ag-ui/client 0.0.59) the
// same run ends as a plain success: the client sees the call without a
// result, as it sees a frontend tool call (CopilotKit's useHumanInTheLoop),
// and answers with a tool message for it whose content is the same payload
// as JSON, or a plain "yes"/"no"; a tool message with an error is a denial
// with the error as reason. Either form is taken from any client.

// ReasonCancelled is the denial reason of an interrupt the client cancelled.
const ReasonCancelled = "cancelled"

// answer is one resolution a run brings for a pending call.
type answer struct {
	callID string
	res    agentik.Resolution
}

// interruptOf is the AG-UI interrupt of a pending approval.
func interruptOf(p agentik.PendingApproval) Interrupt {
	in := Interrupt{ID: p.CallID, Reason: ReasonToolApproval, Message: p.Prompt(), ToolCallID: p.CallID,
		ResponseSchema: responseSchema(p.Schema),
		Metadata:       map[string]any{"toolName": p.Name, "arguments": json.RawMessage(argsOrEmpty(p.Arguments))}}
	if !p.ExpiresAt.IsZero() {
		in.ExpiresAt = p.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return in
}

// pendingOfEvent is what an approval_requested event says of its call.
func pendingOfEvent(ev agentik.Event) agentik.PendingApproval {
	return agentik.PendingApproval{ConversationID: ev.ConversationID, CallID: ev.CallID, Name: ev.Name,
		Arguments: ev.Arguments, ReplyTo: ev.ReplyTo, RequestedAt: ev.Date, ExpiresAt: ev.ExpiresAt}
}

func argsOrEmpty(a agentik.RawJSON) agentik.RawJSON {
	if len(bytes.TrimSpace(a)) == 0 {
		return agentik.RawJSON(`{}`)
	}
	return a
}

// responseSchema is the JSON Schema of an approval's resume payload; the
// edited arguments follow the tool's own schema when it is known.
func responseSchema(tool agentik.RawJSON) json.RawMessage {
	args := json.RawMessage(`{"type":"object"}`)
	if t := bytes.TrimSpace(tool); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		args = json.RawMessage(t)
	}
	s := map[string]any{
		"type":     "object",
		"required": []string{"approved"},
		"properties": map[string]any{
			"approved":  map[string]any{"type": "boolean"},
			"reason":    map[string]any{"type": "string"},
			"arguments": args,
		},
	}
	b, _ := json.Marshal(s)
	return b
}

// resolutionOfResume turns a resume entry into a resolution. A resolved
// entry's payload is {approved, reason?, arguments?} (editedArgs is taken
// for arguments); a cancelled one is a denial.
func resolutionOfResume(e ResumeEntry) (agentik.Resolution, error) {
	if e.Status == ResumeCancelled {
		return agentik.Resolution{Reason: ReasonCancelled}, nil
	}
	if len(e.Payload) == 0 {
		return agentik.Resolution{}, agentik.Errorf(agentik.EInvalid, "resume %q: payload {\"approved\": bool} is required", e.InterruptID)
	}
	res, err := decodePayload(e.Payload)
	if err != nil {
		return res, agentik.Errorf(agentik.ErrorCode(err), "resume %q: %s", e.InterruptID, agentik.ErrorMessage(err))
	}
	return res, nil
}

// decodePayload decodes an approval payload: the native resolution, with
// editedArgs (AG-UI's name) accepted for arguments.
func decodePayload(b []byte) (agentik.Resolution, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return agentik.Resolution{}, agentik.Errorf(agentik.EInvalid, "the answer must be a JSON object {\"approved\": bool, \"reason\"?, \"arguments\"?}")
	}
	if err := agentik.CheckJSON(b); err != nil {
		return agentik.Resolution{}, agentik.Errorf(agentik.EInvalid, "%s", agentik.ErrorMessage(err))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return agentik.Resolution{}, agentik.Errorf(agentik.EInvalid, "the answer must be a JSON object")
	}
	if edited, ok := fields["editedArgs"]; ok {
		if _, both := fields["arguments"]; both {
			return agentik.Resolution{}, agentik.Errorf(agentik.EInvalid, "give arguments or editedArgs, not both")
		}
		fields["arguments"] = edited
		delete(fields, "editedArgs")
		b, _ = json.Marshal(fields)
	}
	res, err := agentik.DecodeResolution(b)
	if err != nil {
		return res, agentik.Errorf(agentik.EInvalid, "%s", agentik.ErrorMessage(err))
	}
	return res, nil
}

// yes and no are the plain answers a tool message may carry.
var (
	yesWords = []string{"yes", "y", "approve", "approved", "ok", "true"}
	noWords  = []string{"no", "n", "deny", "denied", "reject", "rejected", "false"}
)

// resolutionOfToolMessage reads the answer a tool message carries for a
// pending approval (the pre-1.0 round trip).
func resolutionOfToolMessage(m InputMessage) (agentik.Resolution, error) {
	if m.Error != "" {
		reason := m.Error
		if len(reason) > agentik.MaxApprovalReason {
			reason = reason[:agentik.MaxApprovalReason]
		}
		return agentik.Resolution{Reason: reason}, nil
	}
	text := strings.TrimSpace(agentik.JoinText(m.Content))
	if strings.HasPrefix(text, "{") {
		res, err := decodePayload([]byte(text))
		if err != nil {
			return res, agentik.Errorf(agentik.EInvalid, "tool message for %q: %s", m.ToolCallID, agentik.ErrorMessage(err))
		}
		return res, nil
	}
	word := strings.ToLower(strings.Trim(text, " .!\"'"))
	switch {
	case slices.Contains(yesWords, word):
		return agentik.Resolution{Approved: true}, nil
	case slices.Contains(noWords, word):
		return agentik.Resolution{}, nil
	}
	return agentik.Resolution{}, agentik.Errorf(agentik.EInvalid,
		"tool message for %q answers an approval: want {\"approved\": bool, \"reason\"?, \"arguments\"?} or yes/no", m.ToolCallID)
}

// approvalsOf lists conv's pending approvals, nil when there is no
// conversation yet.
func approvalsOf(ctx context.Context, conv agentik.Conversation) ([]agentik.PendingApproval, error) {
	if conv == nil {
		return nil, nil
	}
	return conv.Approvals(ctx)
}

// interruptOutcome is the outcome of a run that ends on pending approvals.
func interruptOutcome(pend []agentik.PendingApproval) *Outcome {
	o := &Outcome{Type: OutcomeInterrupt}
	for _, p := range pend {
		o.Interrupts = append(o.Interrupts, interruptOf(p))
	}
	return o
}

// enrich completes the interrupts the translator made from events with
// what only the core knows (the tool's schema for edited arguments).
func enrich(ctx context.Context, conv agentik.Conversation, o *Outcome) {
	pend, err := approvalsOf(ctx, conv)
	if err != nil || len(pend) == 0 {
		return
	}
	by := map[string]agentik.PendingApproval{}
	for _, p := range pend {
		by[p.CallID] = p
	}
	for i, in := range o.Interrupts {
		if p, ok := by[in.ID]; ok && len(p.Schema) > 0 {
			o.Interrupts[i].ResponseSchema = responseSchema(p.Schema)
		}
	}
}

// resolve answers the pending approvals, in order, for the principal in
// ctx. The first refusal stops it; the answers before it stand.
func (h *Handler) resolve(ctx context.Context, conv agentik.Conversation, answers []answer) error {
	for i, an := range answers {
		if err := conv.Resolve(ctx, an.callID, an.res); err != nil {
			if i > 0 {
				h.log.WarnContext(ctx, "agui: an answer was refused after others were taken", "conversation", conv.ID(), "call_id", an.callID, "err", err)
			}
			return err
		}
	}
	return nil
}

// unanswered lists the pending approvals the answers leave open.
func unanswered(pend []agentik.PendingApproval, answers []answer) []agentik.PendingApproval {
	done := map[string]bool{}
	for _, a := range answers {
		done[a.callID] = true
	}
	var rest []agentik.PendingApproval
	for _, p := range pend {
		if !done[p.CallID] {
			rest = append(rest, p)
		}
	}
	return rest
}
