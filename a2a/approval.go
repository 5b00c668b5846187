package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// Tool approval over A2A (SPEC §10, docs/approvals.md). A task whose turn
// parks on approvals is input-required: its status message states the
// call(s) in text and carries one DataPart per waiting call,
// {"call_id","name","arguments","expires_at"?}; a stream ends there (final).
// The client answers with a message on the same taskId carrying a DataPart
// {"call_id","approved","reason"?,"arguments"?} per call (call_id may be
// left out when one call waits), or the text "yes"/"no" for every waiting
// call. The task then goes on as the same turn, to completed or to
// input-required again.

// pendingFor lists the calls of the turn answering userID that wait for
// approval (none when the agent takes no approvals).
func pendingFor(ctx context.Context, conv agentik.Conversation, userID string) ([]agentik.PendingApproval, error) {
	all, err := conv.Approvals(ctx)
	if err != nil {
		return nil, err
	}
	var out []agentik.PendingApproval
	for _, p := range all {
		if p.ReplyTo == userID {
			out = append(out, p)
		}
	}
	return out, nil
}

// approvalNote is the status message of an input-required task.
func approvalNote(conv, task string, pend []agentik.PendingApproval) *Message {
	var text strings.Builder
	parts := make([]Part, 0, 1+len(pend))
	for i, p := range pend {
		if i > 0 {
			text.WriteString("\n")
		}
		text.WriteString(p.Prompt())
		fmt.Fprintf(&text, " [call_id %s]", p.CallID)
	}
	text.WriteString("\nAnswer on this task with a data part {\"call_id\", \"approved\": true|false, \"reason\"?, \"arguments\"?} for each call, or the text yes or no.")
	parts = append(parts, TextPart(text.String()))
	for _, p := range pend {
		args := json.RawMessage(p.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		d := map[string]any{"call_id": p.CallID, "name": p.Name, "arguments": args}
		if !p.ExpiresAt.IsZero() {
			d["expires_at"] = p.ExpiresAt.UTC().Format(time.RFC3339Nano)
		}
		parts = append(parts, dataPart(d))
	}
	return &Message{ID: agentik.NewID(), ContextID: conv, TaskID: task, Role: RoleAgent, Parts: parts,
		Metadata: map[string]any{"reason": "tool_approval"}}
}

// answer is one resolution a message brings for a waiting call.
type answer struct {
	callID string
	res    agentik.Resolution
}

// Plain answers a text part may carry.
var (
	yesWords = []string{"yes", "y", "approve", "approved", "ok"}
	noWords  = []string{"no", "n", "deny", "denied", "reject", "rejected"}
)

// answersOf reads the answers of a message sent to an input-required task:
// data parts {call_id?, approved, reason?, arguments?} or a text yes/no for
// every waiting call. Errors are invalid params.
func answersOf(parts []Part, pend []agentik.PendingApproval) ([]answer, *Error) {
	var out []answer
	seen := map[string]bool{}
	var words []string
	for i, p := range parts {
		switch p.Kind {
		case "data":
			// Keys are matched exactly here (the decoder would take
			// "CALL_ID" for call_id), and an explicit call id is never empty.
			fields := map[string]json.RawMessage{}
			if d := bytes.TrimSpace(p.Data); len(d) == 0 || d[0] != '{' || agentik.CheckJSON(d) != nil || json.Unmarshal(d, &fields) != nil {
				return nil, rpcErr(CodeInvalidParams, "part %d: an answer is a JSON object {\"call_id\", \"approved\", \"reason\"?, \"arguments\"?}", i)
			}
			id := ""
			raw, named := fields["call_id"]
			switch {
			case named:
				if json.Unmarshal(raw, &id) != nil || id == "" {
					return nil, rpcErr(CodeInvalidParams, "part %d: call_id is a non-empty string", i)
				}
			case len(pend) == 1:
				id = pend[0].CallID
			default:
				return nil, rpcErr(CodeInvalidParams, "part %d: call_id is required: %d calls wait", i, len(pend))
			}
			delete(fields, "call_id")
			b, _ := json.Marshal(fields)
			res, err := agentik.DecodeResolution(b)
			if err != nil {
				return nil, rpcErr(CodeInvalidParams, "part %d: %s", i, agentik.ErrorMessage(err))
			}
			if seen[id] {
				return nil, rpcErr(CodeInvalidParams, "part %d answers %q a second time", i, truncate(id, 80))
			}
			seen[id] = true
			out = append(out, answer{callID: id, res: res})
		case "text":
			if w := strings.ToLower(strings.Trim(strings.TrimSpace(p.Text), " .!\"'")); w != "" {
				words = append(words, w)
			}
		default:
			return nil, rpcErr(CodeInvalidParams, "part %d: answer the waiting tool call(s) with data or text parts", i)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if len(words) == 1 {
		approved := slices.Contains(yesWords, words[0])
		if approved || slices.Contains(noWords, words[0]) {
			for _, p := range pend {
				out = append(out, answer{callID: p.CallID, res: agentik.Resolution{Approved: approved}})
			}
			return out, nil
		}
	}
	return nil, rpcErr(CodeInvalidParams, "the task waits for tool approval: answer with a data part {\"call_id\", \"approved\", \"reason\"?, \"arguments\"?} or the text yes or no")
}

// approvalErr is a refused answer: the core's code is also in error.data,
// the name the native API answers with.
func approvalErr(err error) *Error {
	e := coreErr(err)
	if code, _ := edge.Public(err); code != "" {
		e.Data, _ = json.Marshal(map[string]string{"code": code})
	}
	return e
}

// resolve answers the waiting calls for the principal in ctx, unknown ids
// first (nothing changes when one is refused), then edited approvals, then
// the rest; the first refusal stops it.
func resolve(ctx context.Context, conv agentik.Conversation, answers []answer, pend []agentik.PendingApproval) *Error {
	waiting := map[string]bool{}
	for _, p := range pend {
		waiting[p.CallID] = true
	}
	rank := func(x answer) int {
		switch {
		case !waiting[x.callID]:
			return 0
		case len(x.res.Arguments) > 0:
			return 1
		}
		return 2
	}
	answers = slices.Clone(answers)
	slices.SortStableFunc(answers, func(x, y answer) int { return rank(x) - rank(y) })
	for _, an := range answers {
		if err := conv.Resolve(ctx, an.callID, an.res); err != nil {
			return approvalErr(err)
		}
	}
	return nil
}

// unanswered lists the waiting calls the answers leave open.
func unanswered(pend []agentik.PendingApproval, answers []answer) []agentik.PendingApproval {
	var rest []agentik.PendingApproval
	for _, p := range pend {
		if !slices.ContainsFunc(answers, func(a answer) bool { return a.callID == p.CallID }) {
			rest = append(rest, p)
		}
	}
	return rest
}

// answerTask takes a message sent to an existing task: the answers to the
// tool calls its turn waits for. It subscribes before answering, so that
// no event of the resumed turn can be missed, and returns the task as it
// was and the calls the answers leave waiting.
func (s *Server) answerTask(ctx context.Context, p *sendParams) (agentik.Conversation, agentik.Stream[agentik.Event], *turnView, []agentik.PendingApproval, *Error) {
	conv, seq, rerr := s.openTask(ctx, p.msg.TaskID)
	if rerr != nil {
		return nil, nil, nil, nil, rerr
	}
	fail := func(e *Error) (agentik.Conversation, agentik.Stream[agentik.Event], *turnView, []agentik.PendingApproval, *Error) {
		conv.Close()
		return nil, nil, nil, nil, e
	}
	if p.msg.ContextID != "" && p.msg.ContextID != conv.ID() {
		return fail(rpcErr(CodeInvalidParams, "task %s belongs to another contextId", truncate(p.msg.TaskID, 80)))
	}
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		return fail(coreErr(err))
	}
	tv, rerr := readTask(ctx, conv, seq, p.history)
	if rerr == nil && tv.task.Status.State != StateInputRequired {
		// One task is one turn: a finished turn takes no more input, and a
		// running one takes none until it asks.
		rerr = rpcErr(CodeInvalidParams, "task %s is %s and takes no further input: send a new message with the contextId only",
			truncate(p.msg.TaskID, 80), tv.task.Status.State)
	}
	var answers []answer
	if rerr == nil {
		answers, rerr = answersOf(p.msg.Parts, tv.pending)
	}
	if rerr == nil {
		rerr = resolve(ctx, conv, answers, tv.pending)
	}
	if rerr != nil {
		st.Close()
		return fail(rerr)
	}
	return conv, st, tv, unanswered(tv.pending, answers), nil
}
