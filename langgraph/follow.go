package langgraph

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// Stream modes a run takes. custom is accepted and never carries anything
// (an agent has no custom stream); events is minimal (docs/langgraph.md).
var knownModes = []string{"values", "messages", "messages-tuple", "updates", "events", "custom"}

type modes map[string]bool

// follower turns one run's events into the run's stream: it keeps the
// thread's path as it grows, so that values events carry the whole state.
type follower struct {
	t      *thread
	runID  string
	modes  modes
	out    sink
	path   []agentik.Message
	cursor int64 // the cursor the path was read at

	text     strings.Builder // the answer streamed so far
	streamID string          // the id of the ai message being streamed
	answers  int
	metaSent string // the streamed ai message whose metadata was sent
	// aiFrom is the seq of the first journal message of the run's ai
	// message not yet sent whole in the messages mode (its text, then the
	// tool calls that join it); 0 when none. aiStream is the id its
	// partials carried, "" when it was not streamed.
	aiFrom     int64
	aiStream   string
	finished   bool // the run is over (end, interrupted) or waits (approval)
	waiting    bool // it waits for approvals
	failure    *agentik.Event
	lastCursor int64
	// stopAt, when set, is the cursor at which the run was seen over: its
	// end (an online event) was before the subscription, so the follower
	// stops once the replay reaches it.
	stopAt int64
	active string // the turn that runs: the reply_to of the last working event
	// metaJSON is the metadata of the run's messages events, made once.
	metaJSON json.RawMessage
	// state is the shared state: read with the path, then from each
	// state_updated event.
	state agentik.RawJSON
}

func newFollower(t *thread, s *snapshot, runID string, m modes, out sink) *follower {
	return &follower{t: t, runID: runID, modes: m, out: out, path: slices.Clone(s.path), cursor: s.cursor, lastCursor: s.cursor, state: s.shared}
}

// run follows the events until the run is over, waits for approvals, the
// stream ends or ctx ends. It reports whether the run is over or waits.
func (f *follower) run(ctx context.Context, events agentik.Stream[agentik.Event]) bool {
	if f.stopAt > 0 && f.lastCursor >= f.stopAt {
		return true
	}
	// Pulled on the request's goroutine (edge.Pull): a run's stream costs
	// the engine no goroutine or channel of its own.
	pull := edge.Pull(events, edge.EventFrame)
	for !f.finished {
		ev, ok, ended, _ := edge.Take(pull)
		if ended {
			return false
		}
		if !ok {
			select {
			case <-ctx.Done():
				return false
			case <-pull.Ready():
			case <-pull.Done():
			}
			continue
		}
		if !f.handle(ctx, ev) {
			return false
		}
	}
	return true
}

// handle takes one event; false when the client is gone.
func (f *follower) handle(ctx context.Context, ev agentik.Event) bool {
	if ev.Cursor > 0 {
		f.lastCursor = ev.Cursor
	}
	defer func() {
		if f.stopAt > 0 && f.lastCursor >= f.stopAt {
			f.finished = true // the replay reached what the run was when it ended
		}
	}()
	if ev.Message != nil {
		return f.message(ev)
	}
	if ev.Type == agentik.EvHeadMoved {
		return f.headMoved(ctx, ev)
	}
	if ev.Type == agentik.EvStateUpdated {
		// The shared state changed (by anyone): the thread's values did.
		f.state = ev.State
		return !f.modes["values"] || f.out.event("values", ev.Cursor, &Values{Messages: toLangChain(f.path), State: f.state})
	}
	// Online events of the answer (start_response, append_text) carry no
	// reply_to: they belong to the turn the last working event named.
	if ev.Type == agentik.EvWorking {
		f.active = ev.ReplyTo
	}
	if ev.ReplyTo != f.runID && (ev.ReplyTo != "" || f.active != f.runID) {
		return true
	}
	switch ev.Type {
	case agentik.EvAwaitingApproval, agentik.EvInterrupted, agentik.EvEnd:
		if !f.completeAI() {
			return false
		}
	}
	switch ev.Type {
	case agentik.EvStartResponse:
		f.text.Reset()
		f.answers++
		f.streamID = "run-" + f.runID + "-" + strconv.Itoa(f.answers)
	case agentik.EvAppendText:
		return f.appendText(ev.Text)
	case agentik.EvAwaitingApproval:
		return f.awaiting(ctx)
	case agentik.EvInterrupted:
		f.finished = true
	case agentik.EvEnd:
		f.finished = true
		if ev.Reason == agentik.EndError {
			f.failure = &ev
		}
	}
	return true
}

// message takes a durable journal message: it joins the path unless the
// path already has it (a replay of what the snapshot read).
func (f *follower) message(ev agentik.Event) bool {
	m := ev.Message
	// The message follows its parent: the path is what it was up to the
	// parent, and grows from there — a replay (a rejoin from
	// Last-Event-ID) or a new branch (an edit, a regenerate) alike.
	i := -1
	if m.Parent != 0 {
		i = slices.IndexFunc(f.path, func(p agentik.Message) bool { return p.Seq == m.Parent })
	}
	if m.Parent != 0 && i < 0 && f.cursor != agentik.LiveOnly {
		// A message of a branch the path does not reach. (A run that read
		// no path, streaming no values, takes every message: only values
		// need the path.)
		return true
	}
	if f.aiFrom != 0 && (m.Type != agentik.MsgToolCall || runOf(m) != f.runID) && !f.completeAI() {
		return false // the ai message is whole: what follows is not its tool call
	}
	f.path = append(f.path[:i+1], *m)
	id := int64(0)
	if ev.Cursor > 0 {
		id = ev.Cursor
	}
	if f.modes["values"] {
		if !f.out.event("values", id, &Values{Messages: toLangChain(f.path), State: f.state}) {
			return false
		}
	}
	if runOf(m) != f.runID {
		return true
	}
	if f.modes["messages"] && f.aiFrom == 0 && (m.Type == agentik.MsgAssistant || m.Type == agentik.MsgToolCall) {
		f.aiFrom, f.aiStream = m.Seq, ""
		if m.Type == agentik.MsgAssistant && f.text.Len() > 0 {
			f.aiStream = f.streamID
		}
	}
	if f.modes["updates"] && m.Type != agentik.MsgUser && m.Type != agentik.MsgError {
		node := agentNode
		if m.Type == agentik.MsgToolResult {
			node = "tools"
		}
		lc := toLangChain([]agentik.Message{*m})
		if !f.out.event("updates", id, map[string]any{node: map[string]any{"messages": lc}}) {
			return false
		}
	}
	if m.Type == agentik.MsgToolResult && (f.modes["messages-tuple"] || f.modes["messages"]) {
		lc := toLangChain([]agentik.Message{*m})
		if !f.tuple(lc[0], id) {
			return false
		}
	}
	return true
}

// headMoved: the head moved other than by a message (a switch): the path
// is read again.
func (f *follower) headMoved(ctx context.Context, ev agentik.Event) bool {
	s, err := f.t.read(ctx)
	if err != nil {
		return true
	}
	f.path = s.path
	if f.modes["values"] {
		return f.out.event("values", ev.Cursor, &Values{Messages: toLangChain(f.path), State: f.state})
	}
	return true
}

// tuple writes a whole message in the messages modes.
func (f *follower) tuple(m LCMessage, id int64) bool {
	if f.modes["messages-tuple"] && !f.out.event("messages", id, []any{m, f.meta()}) {
		return false
	}
	if f.modes["messages"] {
		return f.out.event("messages/complete", id, []LCMessage{m})
	}
	return true
}

// completeAI sends, in the messages mode, the run's ai message whole
// (messages/complete) once nothing more joins it: its text and its tool
// calls, under the id its partials carried.
func (f *follower) completeAI() bool {
	from := f.aiFrom
	if from == 0 {
		return true
	}
	f.aiFrom = 0
	j := slices.IndexFunc(f.path, func(p agentik.Message) bool { return p.Seq == from })
	if j < 0 {
		return true // not on the path any more
	}
	ai := toLangChain(f.path[j:])[0]
	if f.aiStream != "" {
		ai.ID = f.aiStream
	}
	return f.out.event("messages/complete", 0, []LCMessage{ai})
}

func (f *follower) meta() json.RawMessage {
	if f.metaJSON == nil {
		f.metaJSON, _ = json.Marshal(map[string]any{"run_id": f.runID, "thread_id": f.t.conv.ID(), "langgraph_node": agentNode,
			"langgraph_step": 1, "langgraph_checkpoint_ns": "", "checkpoint_ns": ""})
	}
	return f.metaJSON
}

// appendText streams a piece of the answer.
func (f *follower) appendText(text string) bool {
	if f.streamID == "" {
		f.answers++
		f.streamID = "run-" + f.runID + "-" + strconv.Itoa(f.answers)
	}
	f.text.WriteString(text)
	if f.modes["messages-tuple"] {
		chunk := LCMessage{Type: "AIMessageChunk", ID: f.streamID, Content: jsonString(text)}
		if !f.out.event("messages", 0, []any{chunk, f.meta()}) {
			return false
		}
	}
	if f.modes["events"] && !f.streamEvent("on_chat_model_stream", map[string]any{"chunk": LCMessage{Type: "AIMessageChunk", ID: f.streamID, Content: jsonString(text)}}) {
		return false
	}
	if f.modes["messages"] {
		if f.metaSent != f.streamID {
			f.metaSent = f.streamID
			if !f.out.event("messages/metadata", 0, map[string]any{f.streamID: map[string]any{"metadata": f.meta()}}) {
				return false
			}
		}
		partial := LCMessage{Type: "ai", ID: f.streamID, Content: jsonString(f.text.String())}
		return f.out.event("messages/partial", 0, []LCMessage{partial})
	}
	return true
}

// streamEvent writes one event of the events mode, in the shape of
// LangChain's astream_events (v2), minimal: the graph's on_chain_start and
// on_chain_end around the run, and on_chat_model_stream for each piece of
// the answer (docs/langgraph.md).
func (f *follower) streamEvent(name string, data map[string]any) bool {
	ev := map[string]any{"event": name, "run_id": f.runID, "data": data, "metadata": f.meta(), "tags": []string{}, "parent_ids": []string{}}
	switch name {
	case "on_chat_model_stream":
		ev["name"] = "model"
	default:
		ev["name"] = "LangGraph"
	}
	return f.out.event("events", 0, ev)
}

// awaiting: the run's turn waits for approvals. The stream shows them as
// an interrupt and the run ends there; command.resume continues it.
func (f *follower) awaiting(ctx context.Context) bool {
	pend, err := f.t.conv.Approvals(ctx)
	if err != nil {
		f.failure = &agentik.Event{Type: agentik.EvEnd, Reason: agentik.EndError}
		f.finished = true
		return true
	}
	its := interrupts(pend)
	f.finished, f.waiting = true, true
	if f.modes["updates"] && !f.out.event("updates", 0, map[string]any{"__interrupt__": its}) {
		return false
	}
	if f.modes["values"] {
		return f.out.event("values", 0, &Values{Messages: toLangChain(f.path), Interrupt: its, State: f.state})
	}
	return true
}

// parseModes reads stream_mode: a string or a list; none is values.
func parseModes(raw []string) (modes, error) {
	m := modes{}
	if len(raw) == 0 {
		raw = []string{"values"}
	}
	for _, s := range raw {
		if !slices.Contains(knownModes, s) {
			return nil, agentik.Errorf(agentik.EInvalid, "stream_mode %q is not supported (values, messages, messages-tuple, updates, events, custom)", s)
		}
		m[s] = true
	}
	return m, nil
}
