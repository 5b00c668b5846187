package agui

import (
	"slices"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/jsonpatch"
)

// translator turns the core's conversation events into the AG-UI events of
// one run. It is a pure state machine (no I/O, not safe for concurrent use):
// the handler feeds it every event of the conversation in order, and it picks
// out those of the run's own turns.
//
// The run covers the turns in turns, in order; it ends at the end event of
// the last one, or at the first that fails. Whatever the core does, the
// output keeps the AG-UI rules: text, reasoning and tool calls are closed
// before they are left, the run ends exactly once, and nothing follows.
type translator struct {
	threadID, runID string
	turns           []string        // user message ids of the run's turns, in order
	skipResults     map[string]bool // call ids whose results came from this client
	newID           func() string

	ended    map[string]bool
	current  string // the turn the latest working/start event belongs to
	ours     bool   // whether current is one of turns
	textID   string // open TEXT_MESSAGE, "" when none
	text     strings.Builder
	reasonID string // open REASONING span and message, "" when none
	reason   strings.Builder
	// rejoining is set when the handler resubscribed: the core then repeats
	// working, the phase start and the phase's text so far (soFar), which
	// continue what is open instead of opening anew.
	rejoining bool
	soFar     bool
	parentID  string // assistant message the round's tool calls belong to
	started   []string
	results   map[string]bool
	cancelled bool
	done      bool
	// finalErr, when set, ends the run with RUN_ERROR instead of
	// RUN_FINISHED once its turns are over.
	finalErr error
	// called: the run's turns that called tools in this run.
	called map[string]bool
	// asking: calls of the run's turns waiting for approval, in request
	// order, until answered.
	asking []agentik.PendingApproval
	// state is the conversation's shared state as the client has it: the
	// run's STATE_SNAPSHOT, then each STATE_DELTA sent (nil: {}).
	state any
}

func newTranslator(threadID, runID string, turns []string, skip map[string]bool, newID func() string) *translator {
	return &translator{threadID: threadID, runID: runID, turns: turns, skipResults: skip, newID: newID,
		ended: map[string]bool{}, called: map[string]bool{}, results: map[string]bool{}}
}

func (t *translator) isOurs(turn string) bool {
	for _, id := range t.turns {
		if id == turn {
			return true
		}
	}
	return false
}

// event translates one core event. It returns nothing once the run is done.
func (t *translator) event(ev agentik.Event) []Event {
	if t.done {
		return nil
	}
	if t.rejoining {
		if out, ok := t.rejoin(ev); ok {
			return out
		}
	}
	switch ev.Type {
	case agentik.EvWorking:
		t.current, t.ours = ev.ReplyTo, t.isOurs(ev.ReplyTo)
		t.parentID = ""
		return t.closeAll(nil)
	case agentik.EvStartReasoning, agentik.EvStartResponse:
		return t.startPhase(ev)
	case agentik.EvAppendText:
		return t.appendText(ev.Text)
	case agentik.EvAssistantMessage:
		return t.assistantMessage(ev.Message)
	case agentik.EvToolCall:
		return t.toolCall(ev.Message)
	case agentik.EvToolResult, agentik.EvToolFailed:
		return t.toolResult(ev.Message)
	case agentik.EvError:
		if !t.isOurs(ev.Message.ReplyTo) {
			return nil
		}
		return t.fail(nil, agentik.TurnErrorMessage(ev.Message.Code, ev.Message.Details), ev.Message.Code)
	case agentik.EvApprovalRequested:
		if t.isOurs(ev.ReplyTo) && !slices.ContainsFunc(t.asking, func(p agentik.PendingApproval) bool { return p.CallID == ev.CallID }) {
			t.asking = append(t.asking, pendingOfEvent(ev))
		}
	case agentik.EvApprovalResolved:
		t.asking = slices.DeleteFunc(t.asking, func(p agentik.PendingApproval) bool { return p.CallID == ev.CallID })
	case agentik.EvAwaitingApproval:
		return t.awaitingApproval(ev)
	case agentik.EvInterrupted:
		if t.isOurs(ev.ReplyTo) {
			t.cancelled = true
		}
	case agentik.EvEnd:
		return t.end(ev)
	case agentik.EvStateUpdated:
		return t.stateUpdated(ev.State)
	}
	return nil
}

// snapshot starts the client's state: a STATE_SNAPSHOT when the state
// is not empty.
func (t *translator) snapshot(state []byte) []Event {
	v, err := jsonpatch.Unmarshal(state)
	if err != nil {
		return nil
	}
	t.state = v
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return []Event{{Type: StateSnapshot, Snapshot: state}}
}

// stateUpdated shows a change of the shared state, by anyone, as the
// patch from what the client has to the new state. The event's own patch
// goes from the state before it, which the client may not have had: the
// run's snapshot, read once the run began, may already hold this change
// or later ones (the patch is then empty, or takes it back until the
// later change arrives).
func (t *translator) stateUpdated(state []byte) []Event {
	v, err := jsonpatch.Unmarshal(state)
	if err != nil {
		return nil
	}
	old := t.state
	if old == nil {
		old = map[string]any{}
	}
	ops := jsonpatch.Diff(old, v)
	t.state = v
	if len(ops) == 0 {
		return nil
	}
	return []Event{{Type: StateDelta, Patch: jsonpatch.Marshal(ops)}}
}

// startPhase opens the reasoning or the text of one of the run's turns.
func (t *translator) startPhase(ev agentik.Event) []Event {
	t.current, t.ours = ev.ReplyTo, t.isOurs(ev.ReplyTo)
	if !t.ours {
		return nil
	}
	out := t.closeAll(nil)
	if ev.Type == agentik.EvStartReasoning {
		t.reasonID = t.newID()
		t.parentID = ""
		return append(out,
			Event{Type: ReasoningStart, MessageID: t.reasonID},
			Event{Type: ReasoningMessageStart, MessageID: t.reasonID, Role: RoleReasoning})
	}
	t.textID = t.newID()
	t.text.Reset()
	t.parentID = t.textID
	return append(out, Event{Type: TextMessageStart, MessageID: t.textID, Role: RoleAssistant})
}

// appendText continues the open phase. Online deltas carry no turn: they
// belong to the phase opened last, and only if that phase is ours. Empty
// deltas are never sent.
func (t *translator) appendText(text string) []Event {
	switch {
	case !t.ours || text == "":
	case t.textID != "":
		t.text.WriteString(text)
		return []Event{{Type: TextMessageContent, MessageID: t.textID, Delta: text}}
	case t.reasonID != "":
		t.reason.WriteString(text)
		return []Event{{Type: ReasoningMessageContent, MessageID: t.reasonID, Delta: text}}
	}
	return nil
}

// assistantMessage closes the answer of one of the run's turns.
func (t *translator) assistantMessage(m *agentik.Message) []Event {
	if !t.isOurs(m.ReplyTo) {
		return nil
	}
	out := t.closeReasoning(nil)
	full := agentik.JoinText(m.Content)
	if t.textID != "" {
		// Deltas may have been dropped for a slow reader; the durable
		// message completes the text when what was shown is a prefix.
		if shown := t.text.String(); len(full) > len(shown) && strings.HasPrefix(full, shown) {
			out = append(out, Event{Type: TextMessageContent, MessageID: t.textID, Delta: full[len(shown):]})
		}
		t.parentID = t.textID
		return t.closeText(out)
	}
	if full != "" {
		// Nothing was streamed (a resubscribe lost the start): show the
		// answer whole under its journal id.
		out = append(out,
			Event{Type: TextMessageStart, MessageID: m.ID, Role: RoleAssistant},
			Event{Type: TextMessageContent, MessageID: m.ID, Delta: full},
			Event{Type: TextMessageEnd, MessageID: m.ID})
		t.parentID = m.ID
	}
	return out
}

// toolCall shows a call of one of the run's turns, whole.
func (t *translator) toolCall(m *agentik.Message) []Event {
	if !t.isOurs(m.ReplyTo) {
		return nil
	}
	out := t.closeAll(nil)
	if t.parentID == "" {
		t.parentID = t.newID()
	}
	out = append(out, Event{Type: ToolCallStart, ToolCallID: m.CallID, ToolCallName: m.Name, ParentMessageID: t.parentID})
	if len(m.Arguments) > 0 {
		out = append(out, Event{Type: ToolCallArgs, ToolCallID: m.CallID, Delta: string(m.Arguments)})
	}
	t.started = append(t.started, m.CallID)
	t.called[m.ReplyTo] = true
	return append(out, Event{Type: ToolCallEnd, ToolCallID: m.CallID})
}

// toolResult shows the result of a call of one of the run's turns, unless
// the client sent it.
func (t *translator) toolResult(m *agentik.Message) []Event {
	if !t.isOurs(m.ReplyTo) {
		return nil
	}
	t.parentID = "" // the round's calls are all out; a new round follows
	t.results[m.CallID] = true
	if t.skipResults[m.CallID] {
		return nil // the client sent this result; it has it already
	}
	return append(t.closeAll(nil), Event{Type: ToolCallResult, MessageID: m.ID, ToolCallID: m.CallID,
		Content: strPtr(agentik.JoinText(m.Content)), Role: RoleTool})
}

// awaitingApproval ends the run when one of its turns parked: the turn has
// run every call it may and waits for answers. The run ends here with an
// interrupt (AG-UI 1.0); the answers start a new run (resume), which follows
// the same turn.
func (t *translator) awaitingApproval(ev agentik.Event) []Event {
	if !t.isOurs(ev.ReplyTo) || len(t.asking) == 0 {
		return nil
	}
	out := t.closeAll(nil)
	if t.finalErr != nil {
		code, msg := edge.Public(t.finalErr)
		return t.fail(out, msg, code)
	}
	t.done = true
	return append(out, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: interruptOutcome(t.asking)})
}

// end closes one of the run's turns; the last one ends the run.
func (t *translator) end(ev agentik.Event) []Event {
	if !t.isOurs(ev.ReplyTo) {
		return nil
	}
	if ev.Reason == agentik.EndClientTools && !t.called[ev.ReplyTo] {
		// A turn waits for client tools only after calling them in this
		// run: this is the end of the round the run posted results for,
		// published before the run subscribed, which reached this
		// process late (from another, with that round's other online
		// events). The continuation is yet to come.
		return nil
	}
	t.ended[ev.ReplyTo] = true
	out := t.closeAll(nil)
	if ev.Reason == agentik.EndError {
		// The error record normally comes first and ends the run; this
		// covers an error that could not even be recorded.
		return t.fail(out, "the turn failed", agentik.EInternal)
	}
	if ev.Reason == agentik.EndInterrupted {
		t.cancelled = true
	}
	if !t.allEnded() {
		return out
	}
	if t.finalErr != nil {
		code, msg := edge.Public(t.finalErr)
		return t.fail(out, msg, code)
	}
	fin := Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID}
	switch {
	case ev.Reason == agentik.EndClientTools:
		fin.Outcome = &Outcome{Type: OutcomeSuccess, PendingToolCallIDs: t.pending()}
	case t.cancelled:
		fin.Outcome = &Outcome{Type: OutcomeCancelled}
	}
	t.done = true
	return append(out, fin)
}

// resubscribed tells the translator that the event stream was replaced by a
// new subscription (the old one was cut off for falling behind).
func (t *translator) resubscribed() { t.rejoining, t.soFar = true, false }

// rejoin handles the events a new subscription repeats for a running turn:
// working and the start of the phase that is still open, then the phase's
// text so far, of which only what was not shown yet is sent. It reports
// false for any other event; an online one ends the rejoin.
func (t *translator) rejoin(ev agentik.Event) ([]Event, bool) {
	open := func(typ string) bool {
		return typ == agentik.EvStartResponse && t.textID != "" || typ == agentik.EvStartReasoning && t.reasonID != ""
	}
	if agentik.Durable(ev.Type) {
		// Replayed durable events come before the join; they are handled
		// as usual and do not end it.
		return nil, false
	}
	switch {
	case ev.Type == agentik.EvWorking && ev.ReplyTo == t.current && t.ours && !t.soFar:
		return nil, true
	case (ev.Type == agentik.EvStartResponse || ev.Type == agentik.EvStartReasoning) && ev.ReplyTo == t.current && open(ev.Type) && !t.soFar:
		// The open phase goes on; its text so far comes next.
		t.soFar = true
		return nil, true
	case ev.Type == agentik.EvAppendText && t.soFar:
		t.rejoining, t.soFar = false, false
		id, shown, typ := t.textID, &t.text, TextMessageContent
		if t.reasonID != "" {
			id, shown, typ = t.reasonID, &t.reason, ReasoningMessageContent
		}
		if rest, ok := strings.CutPrefix(ev.Text, shown.String()); ok && rest != "" {
			shown.WriteString(rest)
			return []Event{{Type: typ, MessageID: id, Delta: rest}}, true
		}
		return nil, true
	}
	t.rejoining, t.soFar = false, false
	return nil, false
}

func (t *translator) allEnded() bool {
	for _, id := range t.turns {
		if !t.ended[id] {
			return false
		}
	}
	return true
}

// pending lists the calls started in this run that have no result yet.
func (t *translator) pending() []string {
	var p []string
	for _, id := range t.started {
		if !t.results[id] {
			p = append(p, id)
		}
	}
	return p
}

// fail closes what is open and ends the run with RUN_ERROR.
func (t *translator) fail(out []Event, message, code string) []Event {
	if t.done {
		return out
	}
	out = t.closeAll(out)
	t.done = true
	return append(out, Event{Type: RunError, Message: message, Code: code})
}

func (t *translator) closeAll(out []Event) []Event {
	return t.closeText(t.closeReasoning(out))
}

func (t *translator) closeText(out []Event) []Event {
	if t.textID == "" {
		return out
	}
	out = append(out, Event{Type: TextMessageEnd, MessageID: t.textID})
	t.textID = ""
	t.text.Reset()
	return out
}

func (t *translator) closeReasoning(out []Event) []Event {
	if t.reasonID == "" {
		return out
	}
	out = append(out,
		Event{Type: ReasoningMessageEnd, MessageID: t.reasonID},
		Event{Type: ReasoningEnd, MessageID: t.reasonID})
	t.reasonID = ""
	t.reason.Reset()
	return out
}
