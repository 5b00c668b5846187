package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentik/agentik"
)

// watch translates one conversation's events into the A2A events of one
// task. The conversation stream carries every turn; online deltas have no
// reply_to, so the watch tracks which turn is current from working and
// start_* events and keeps only its own.
type watch struct {
	task   *Task
	userID string

	cur       string // reply_to of the turn that is running
	phase     string // start_reasoning or start_response of the current turn
	open      bool   // an artifact is being streamed
	streamed  bytes.Buffer
	artifacts int             // artifacts finished so far (numbers the next one)
	images    int             // images streamed
	skip      map[string]bool // journal entries already shown (resubscribe)
	errText   string
	errCode   string
	cancel    func() // called once when the turn is seen running (cancel)
	canceled  bool
	asking    []agentik.PendingApproval // the turn's calls waiting for approval
}

func newWatch(task *Task, userID string) *watch { return &watch{task: task, userID: userID} }

func (w *watch) status(state string, msg *Message, final bool) *StatusUpdate {
	return &StatusUpdate{TaskID: w.task.ID, ContextID: w.task.ContextID, Final: final,
		Status: Status{State: state, Message: msg, Timestamp: time.Now()}}
}

func (w *watch) note(parts ...Part) *Message {
	return &Message{ID: agentik.NewID(), ContextID: w.task.ContextID, TaskID: w.task.ID, Role: RoleAgent, Parts: parts}
}

func dataPart(v any) Part {
	b, _ := json.Marshal(v)
	return Part{Kind: "data", Data: b}
}

func (w *watch) running() {
	if w.cancel != nil && !w.canceled {
		w.canceled = true
		w.cancel()
	}
}

// handle returns the A2A events for ev and whether the task has ended.
func (w *watch) handle(ev agentik.Event) ([]Event, bool) {
	switch ev.Type {
	case agentik.EvWorking, agentik.EvStartResponse, agentik.EvStartReasoning:
		return w.started(ev), false
	case agentik.EvAppendText:
		return w.appendText(ev), false
	case agentik.EvAppendImage:
		return w.appendImage(ev), false
	case agentik.EvAssistantMessage, agentik.EvToolCall, agentik.EvToolResult, agentik.EvToolFailed, agentik.EvError:
		if !w.mine(ev.Message) {
			return nil, false
		}
		return w.journal(ev), false
	case agentik.EvEnd:
		if ev.ReplyTo != w.userID {
			return nil, false
		}
		return []Event{w.ended(ev.Reason)}, true
	case agentik.EvApprovalRequested, agentik.EvApprovalResolved, agentik.EvAwaitingApproval:
		return w.approval(ev)
	case agentik.EvConversationClosing:
		return []Event{w.status(StateFailed, w.note(TextPart("the conversation was closed")), true)}, true
	}
	return nil, false
}

// mine reports whether m is a journal message of the task's turn not shown
// yet.
func (w *watch) mine(m *agentik.Message) bool {
	return m != nil && m.ReplyTo == w.userID && !w.skip[m.ID]
}

// started follows which turn runs and in which phase (working, start_*).
// When it is the task's turn, the task is running (a pending cancel goes
// out) and working is told as a working status.
func (w *watch) started(ev agentik.Event) []Event {
	w.cur = ev.ReplyTo
	if ev.Type == agentik.EvWorking {
		w.phase, w.open = "", false
	} else {
		w.phase = ev.Type
	}
	if w.cur != w.userID {
		return nil
	}
	w.running()
	switch ev.Type {
	case agentik.EvWorking:
		return []Event{w.status(StateWorking, nil, false)}
	case agentik.EvStartResponse:
		w.open = false
		w.streamed.Reset()
	}
	return nil
}

// appendText streams a delta of the task's response as a chunk of the
// current artifact.
func (w *watch) appendText(ev agentik.Event) []Event {
	if w.cur != w.userID || w.phase != agentik.EvStartResponse || ev.Text == "" {
		return nil
	}
	a := &ArtifactUpdate{TaskID: w.task.ID, ContextID: w.task.ContextID, Append: w.open,
		Artifact: Artifact{ID: artifactID(w.task.ID, w.artifacts), Name: "response", Parts: []Part{TextPart(ev.Text)}}}
	w.open = true
	w.streamed.WriteString(ev.Text)
	return []Event{a}
}

// appendImage streams an image of the task's turn as an artifact of its
// own.
func (w *watch) appendImage(ev agentik.Event) []Event {
	if w.cur != w.userID {
		return nil
	}
	parts := fromContent([]agentik.Content{{Type: agentik.ContentImage, Data: ev.Data, MIME: ev.MIME}})
	if len(parts) == 0 {
		return nil
	}
	w.images++
	return []Event{&ArtifactUpdate{TaskID: w.task.ID, ContextID: w.task.ContextID, LastChunk: true,
		Artifact: Artifact{ID: w.task.ID + ":image-" + strconv.Itoa(w.images), Name: "image", Parts: parts}}}
}

// journal translates a journal message of the task's turn (mine): the
// answer, a tool call or result, or the error the end will report.
func (w *watch) journal(ev agentik.Event) []Event {
	m := ev.Message
	switch ev.Type {
	case agentik.EvAssistantMessage:
		return w.answer(m)
	case agentik.EvToolCall:
		args := json.RawMessage(m.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		return []Event{w.status(StateWorking, w.note(dataPart(map[string]any{
			"tool_call": map[string]any{"id": m.CallID, "name": m.Name, "arguments": args}})), false)}
	case agentik.EvToolResult, agentik.EvToolFailed:
		return []Event{w.status(StateWorking, w.note(dataPart(map[string]any{
			"tool_result": map[string]any{"id": m.CallID, "name": m.Name, "is_error": m.IsError}})), false)}
	case agentik.EvError:
		w.errText = agentik.TurnErrorMessage(m.Code, m.Details)
		w.errCode = m.Code
	}
	return nil
}

// answer finishes the current artifact with an assistant message.
func (w *watch) answer(m *agentik.Message) []Event {
	parts := fromContent(m.Content)
	if len(parts) == 0 {
		return nil
	}
	var out []Event
	// The streamed chunks already show this text unless some were
	// lost (a resumed stream) or it was never streamed: then the whole
	// artifact replaces what the client has.
	if !w.open || w.streamed.String() != agentik.JoinText(m.Content) || agentik.HasImage(m.Content) {
		out = append(out, &ArtifactUpdate{TaskID: w.task.ID, ContextID: w.task.ContextID, LastChunk: true,
			Artifact: Artifact{ID: artifactID(w.task.ID, w.artifacts), Name: "response", Parts: parts}})
	}
	w.artifacts++
	w.open = false
	w.streamed.Reset()
	return out
}

// ended is the final status of the task whose turn ended for reason.
func (w *watch) ended(reason string) *StatusUpdate {
	switch reason {
	case agentik.EndCompleted:
		return w.status(StateCompleted, nil, true)
	case agentik.EndInterrupted:
		return w.status(StateCanceled, w.note(TextPart("the turn was interrupted")), true)
	case agentik.EndError:
		text := w.errText
		if text == "" {
			text = "the turn failed"
		}
		return w.status(StateFailed, withCode(w.note(TextPart(text)), w.errCode), true)
	default:
		// A turn that waits for client-side tools cannot be continued
		// over A2A; it is reported as failed rather than faked as
		// input-required.
		return w.status(StateFailed, w.note(TextPart("the turn stopped: "+reason)), true)
	}
}

// approval follows the calls of the task's turn that wait for approval;
// when the turn parks on them the task is input-required, which ends a
// stream (final) as a terminal state does.
func (w *watch) approval(ev agentik.Event) ([]Event, bool) {
	switch ev.Type {
	case agentik.EvApprovalRequested:
		if ev.ReplyTo == w.userID && !slices.ContainsFunc(w.asking, func(p agentik.PendingApproval) bool { return p.CallID == ev.CallID }) {
			w.asking = append(w.asking, agentik.PendingApproval{ConversationID: ev.ConversationID, CallID: ev.CallID,
				Name: ev.Name, Arguments: ev.Arguments, ReplyTo: ev.ReplyTo, RequestedAt: ev.Date, ExpiresAt: ev.ExpiresAt})
		}
	case agentik.EvApprovalResolved:
		w.asking = slices.DeleteFunc(w.asking, func(p agentik.PendingApproval) bool { return p.CallID == ev.CallID })
	case agentik.EvAwaitingApproval:
		if ev.ReplyTo == w.userID && len(w.asking) > 0 {
			return []Event{w.status(StateInputRequired, approvalNote(w.task.ContextID, w.task.ID, w.asking), true)}, true
		}
	}
	return nil, false
}

// ---- SSE ----

// sseWriteTimeout bounds each write: a client that stops reading is cut off
// instead of pinning the handler.
const sseWriteTimeout = 30 * time.Second

// sseOut writes one JSON-RPC streaming response: every event is an SSE
// data line holding a JSON-RPC response with the request's id.
type sseOut struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	id      json.RawMessage
	v       Version
	started bool
	buf     bytes.Buffer
}

func (s *Server) newSSE(w http.ResponseWriter, req *request) *sseOut {
	return &sseOut{w: w, rc: http.NewResponseController(w), id: req.ID, v: req.v}
}

func (o *sseOut) start() {
	if o.started {
		return
	}
	o.started = true
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	o.w.WriteHeader(http.StatusOK)
}

func (o *sseOut) write(b []byte) error {
	o.start()
	o.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	return o.rc.Flush()
}

func (o *sseOut) send(ev Event) error {
	return o.frame(response{JSONRPC: "2.0", ID: o.id, Result: encodeEvent(o.v, ev)})
}

func (o *sseOut) fail(e *Error) { o.frame(response{JSONRPC: "2.0", ID: o.id, Error: e}) }

func (o *sseOut) frame(r response) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	o.buf.Reset()
	o.buf.WriteString("data: ")
	o.buf.Write(data)
	o.buf.WriteString("\n\n")
	return o.write(o.buf.Bytes())
}

func (o *sseOut) ping() error { return o.write([]byte(": keep-alive\n\n")) }
