package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// runRequest is the body of every run-creating endpoint.
type runRequest struct {
	AssistantID string `json:"assistant_id"`
	Input       *struct {
		Messages []LCMessage `json:"messages"`
	} `json:"input"`
	Command *struct {
		Resume json.RawMessage `json:"resume"`
		Update json.RawMessage `json:"update"`
		Goto   json.RawMessage `json:"goto"`
	} `json:"command"`
	Checkpoint *struct {
		ThreadID     string `json:"thread_id"`
		CheckpointID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	CheckpointID      string          `json:"checkpoint_id"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamResumable   bool            `json:"stream_resumable"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
	IfNotExists       string          `json:"if_not_exists"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	AfterSeconds      float64         `json:"after_seconds"`
	Webhook           string          `json:"webhook"`
	Config            json.RawMessage `json:"config"`
	Context           json.RawMessage `json:"context"`
	Metadata          json.RawMessage `json:"metadata"`
}

// Run is a turn as the LangGraph API shows a run.
type Run struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	CreatedAt         agentik.Time   `json:"created_at"`
	UpdatedAt         agentik.Time   `json:"updated_at"`
	Status            string         `json:"status"` // pending | running | success | error | interrupted
	Metadata          map[string]any `json:"metadata"`
	Kwargs            map[string]any `json:"kwargs"`
	MultitaskStrategy string         `json:"multitask_strategy"`
}

// checkpoint is the checkpoint id the run names, "" for none.
func (q *runRequest) checkpoint() string {
	if q.Checkpoint != nil && q.Checkpoint.CheckpointID != "" {
		return q.Checkpoint.CheckpointID
	}
	return q.CheckpointID
}

// streamModes reads stream_mode: a string or a list of strings.
func (q *runRequest) streamModes() (modes, error) {
	var list []string
	if len(q.StreamMode) > 0 && string(q.StreamMode) != "null" {
		var one string
		if err := json.Unmarshal(q.StreamMode, &one); err == nil {
			list = []string{one}
		} else if err := json.Unmarshal(q.StreamMode, &list); err != nil {
			return nil, agentik.Errorf(agentik.EInvalid, "stream_mode must be a string or a list of strings")
		}
	}
	return parseModes(list)
}

// validate refuses what Agentik does not do, before anything is stored.
func (q *runRequest) validate() error {
	if raw := strings.TrimSpace(string(q.InterruptBefore) + string(q.InterruptAfter)); raw != "" && raw != "null" && raw != "nullnull" && raw != "[]" && raw != "[][]" {
		return agentik.Errorf(agentik.EInvalid, "interrupt_before/interrupt_after are not supported: an agent has one node; approvals interrupt on their own")
	}
	if q.AfterSeconds > 0 {
		return agentik.Errorf(agentik.EInvalid, "after_seconds is not supported (schedules are)")
	}
	if q.Webhook != "" {
		return agentik.Errorf(agentik.EInvalid, "a run webhook is not supported")
	}
	if q.Command != nil && (isSet(q.Command.Update) || isSet(q.Command.Goto)) {
		return agentik.Errorf(agentik.EInvalid, "command.update and command.goto are not supported; command.resume answers approvals")
	}
	switch q.OnDisconnect {
	case "", "cancel", "continue":
	default:
		return agentik.Errorf(agentik.EInvalid, "on_disconnect must be cancel or continue")
	}
	switch q.OnCompletion {
	case "", "delete", "keep":
	default:
		return agentik.Errorf(agentik.EInvalid, "on_completion must be delete or keep")
	}
	switch q.IfNotExists {
	case "", "reject", "create":
	default:
		return agentik.Errorf(agentik.EInvalid, "if_not_exists must be reject or create")
	}
	_, err := busyPolicy(q.MultitaskStrategy, "")
	return err
}

func isSet(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

// busyPolicy maps multitask_strategy to the busy policy.
func busyPolicy(strategy, def string) (string, error) {
	switch strategy {
	case "":
		return def, nil
	case "reject":
		return agentik.BusyReject, nil
	case "interrupt", "rollback":
		return agentik.BusyInterrupt, nil
	case "enqueue":
		return agentik.BusyEnqueue, nil
	}
	return "", agentik.Errorf(agentik.EInvalid, "multitask_strategy must be reject, interrupt, rollback or enqueue")
}

// started is a run once it is started: the thread, the snapshot read
// before, the subscription that follows it and the run's id.
type started struct {
	t      *thread
	s      *snapshot
	events agentik.Stream[agentik.Event]
	runID  string
	modes  modes
	temp   bool  // a stateless run's temporal thread
	stopAt int64 // see follower.stopAt
	after  int64 // the cursor the subscription replays from (0: the snapshot's)
	// final is a second read of a joined run's thread that saw the run
	// over (it ended between the first read and the subscription).
	final *snapshot
	// cancelOnDisconnect: on_disconnect=cancel, the run goes with its
	// stream's client.
	cancelOnDisconnect bool
	keep               bool // on_completion=keep: a stateless run's thread stays
}

// follower makes the follower of the started run, writing to out.
func (st *started) follower(m modes, out sink) *follower {
	f := newFollower(st.t, st.s, st.runID, m, out)
	f.stopAt = st.stopAt
	if st.after > 0 {
		f.lastCursor = st.after
	}
	return f
}

func (st *started) close() {
	if st.events != nil {
		st.events.Close()
	}
	if st.t != nil {
		st.t.close()
	}
}

// start decodes and starts a run on the thread tid ("" for a stateless
// run): it answers approvals (command.resume) or sends the input as one
// user message, subscribed first so that nothing of the run is missed.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, tid string) (*started, error) {
	var q runRequest
	if err := h.decode(w, r, &q); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	m, err := q.streamModes()
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	st := &started{modes: m, cancelOnDisconnect: q.OnDisconnect == "cancel", keep: q.OnCompletion == "keep"}
	if st.t, st.temp, err = h.runThread(r, tid, &q); err != nil {
		return nil, err
	}
	if err := h.begin(ctx, st, &q); err != nil {
		if st.temp {
			// A refused stateless run leaves nothing behind: its temporal
			// conversation was made for it, and nobody can name it.
			st.t.agent.DeleteConversation(detach(ctx), st.t.conv.ID())
		}
		st.close()
		return nil, err
	}
	return st, nil
}

// runThread opens (or, for a stateless run or if_not_exists=create,
// creates) the run's thread and checks the assistant.
func (h *Handler) runThread(r *http.Request, tid string, q *runRequest) (*thread, bool, error) {
	ctx := r.Context()
	if q.AssistantID == "" {
		return nil, false, agentik.Errorf(agentik.EInvalid, "assistant_id is required")
	}
	a, err := h.agent(r, q.AssistantID)
	if err != nil {
		return nil, false, err
	}
	if tid == "" {
		info, err := a.CreateConversation(ctx, agentik.CreateRequest{Temporal: true})
		if err != nil {
			return nil, false, err
		}
		c, err := a.Conversation(ctx, info.ID)
		if err != nil {
			return nil, false, err
		}
		return &thread{agent: a, conv: c}, true, nil
	}
	t, err := h.open(ctx, tid)
	if agentik.ErrorCode(err) == agentik.ENotFound && q.IfNotExists == "create" && agentik.ValidID(tid) {
		if _, err := a.CreateConversation(ctx, agentik.CreateRequest{ID: tid}); err != nil && agentik.ErrorCode(err) != agentik.EConflict {
			return nil, false, err
		}
		t, err = h.open(ctx, tid)
	}
	if err != nil {
		return nil, false, err
	}
	if id := t.agent.Info().ID; id != a.Info().ID {
		t.close()
		return nil, false, agentik.Errorf(agentik.EInvalid, "thread %s belongs to assistant %q, not %q", tid, id, q.AssistantID)
	}
	return t, false, nil
}

// begin reads the thread, subscribes and gives the core what the run
// brings.
func (h *Handler) begin(ctx context.Context, st *started, q *runRequest) error {
	s := &snapshot{cursor: agentik.LiveOnly}
	if st.modes["values"] || q.checkpoint() != "" || q.MultitaskStrategy == "rollback" {
		// The run's stream carries whole states, or the run starts from a
		// state: the thread is read first, and followed from that read.
		var err error
		if s, err = st.t.read(ctx); err != nil {
			return err
		}
	}
	// Otherwise nothing before the run is needed: a live subscription made
	// before the run's message is sent sees every event of the run.
	st.s = s
	if q.Command != nil && isSet(q.Command.Resume) {
		return h.resume(ctx, st, q)
	}
	hasInput := q.Input != nil && len(q.Input.Messages) > 0
	from, err := h.runFrom(ctx, st, q, hasInput)
	if err != nil {
		return err
	}
	if !hasInput && from == nil {
		return agentik.Errorf(agentik.EInvalid, "a run needs input.messages, command.resume, or a checkpoint that ends with a user message (a regenerate)")
	}
	var req agentik.SendRequest
	if hasInput {
		if len(q.Input.Messages) > h.opts.MaxRunMessages {
			return agentik.Errorf(agentik.EInvalid, "the run brings %d input messages; at most %d are taken in one run", len(q.Input.Messages), h.opts.MaxRunMessages)
		}
		if req, err = h.sendRequest(st.t, q); err != nil {
			return err
		}
	}
	if st.events, err = st.t.conv.Events(ctx, s.cursor); err != nil {
		return err
	}
	st.events = edge.Pull(st.events, edge.EventFrame) // pulled by follower.run, more than once
	var res agentik.SendResult
	switch {
	case !hasInput: // from a user message's checkpoint: its answer again
		res, err = st.t.conv.Regenerate(detach(ctx), agentik.RegenerateRequest{Seq: from.Seq, IfBusy: req.IfBusy})
	default:
		if from != nil {
			req.Parent = &from.Seq
		}
		if q.MultitaskStrategy == "rollback" {
			h.rollback(ctx, st, &req)
		}
		res, err = st.t.conv.Send(detach(ctx), req)
	}
	if err != nil {
		return err
	}
	st.runID = res.MessageID
	return nil
}

// runFrom is the message a run's checkpoint ends at when the run starts
// from an older checkpoint — an edit (with input) or a regenerate (without)
// on a new branch (SPEC §18) — and nil for a run from the current state. A
// checkpoint that is not the thread's is ENotFound.
func (h *Handler) runFrom(ctx context.Context, st *started, q *runRequest, hasInput bool) (*agentik.Message, error) {
	cp := q.checkpoint()
	if cp == "" {
		return nil, nil
	}
	seq, ok := parseCheckpoint(st.t.conv.ID(), cp)
	if other := q.Checkpoint != nil && q.Checkpoint.ThreadID != "" && q.Checkpoint.ThreadID != st.t.conv.ID(); !ok || other {
		return nil, agentik.Errorf(agentik.ENotFound, "checkpoint %q not found on this thread", cp)
	}
	if seq == st.s.info.Head && hasInput {
		return nil, nil // the current state: an ordinary run
	}
	if seq == 0 {
		if !hasInput {
			return nil, agentik.Errorf(agentik.EInvalid, "the empty thread's checkpoint has nothing to answer: send input")
		}
		return &agentik.Message{}, nil // an edit of the first message
	}
	tr, err := st.t.readTree(ctx)
	if err != nil {
		return nil, err
	}
	m, ok := tr.bySeq[seq]
	if !ok {
		return nil, agentik.Errorf(agentik.ENotFound, "checkpoint %q not found on this thread", cp)
	}
	if !hasInput && m.Type != agentik.MsgUser {
		return nil, agentik.Errorf(agentik.EInvalid, "checkpoint %q ends with an answer: a run from it needs input", cp)
	}
	return m, nil
}

// rollback makes a rollback run's message a sibling of the running turn's
// user message: the running turn is interrupted (the busy policy) and its
// branch left off the head path, as LangGraph drops a rolled-back run.
func (h *Handler) rollback(ctx context.Context, st *started, req *agentik.SendRequest) {
	if req.Parent != nil || !st.s.info.Working {
		return
	}
	for i := len(st.s.path) - 1; i >= 0; i-- {
		m := st.s.path[i]
		if m.Type == agentik.MsgUser {
			if run, err := st.s.findRun("", m.ID); err == nil && !runOver(run) {
				p := m.Parent
				req.Parent = &p
			}
			return
		}
	}
}

// sendRequest makes the run's input one user message: one turn's input.
func (h *Handler) sendRequest(t *thread, q *runRequest) (agentik.SendRequest, error) {
	parts, ctxParts, err := runInput(q.Input.Messages)
	if err != nil {
		return agentik.SendRequest{}, err
	}
	if err := agentik.ValidateContent(parts); err != nil {
		return agentik.SendRequest{}, err
	}
	if agentik.HasImage(parts) && !t.agent.Info().Capabilities.ImageInput {
		return agentik.SendRequest{}, agentik.Errorf(agentik.EInvalid, "the model does not take image input")
	}
	busy, _ := busyPolicy(q.MultitaskStrategy, h.opts.IfBusy)
	mc := &agentik.MessageContext{Origin: &agentik.Origin{Channel: "langgraph"}}
	if ctxParts > 0 {
		mc.Metadata = map[string]string{MetaContextParts: strconv.Itoa(ctxParts)}
	}
	return agentik.SendRequest{Content: parts, IfBusy: busy, Context: mc}, nil
}

// resume answers the approvals that wait with command.resume's decisions;
// the run is the turn they belong to.
func (h *Handler) resume(ctx context.Context, st *started, q *runRequest) error {
	pend, err := st.t.conv.Approvals(ctx)
	if err != nil {
		return err
	}
	if len(pend) == 0 {
		return agentik.Errorf(agentik.EConflict, "the thread has no interrupt to resume")
	}
	ds, err := decisions(q.Command.Resume, pend)
	if err != nil {
		return err
	}
	res, err := resolutions(ds, pend)
	if err != nil {
		return err
	}
	if st.events, err = st.t.conv.Events(ctx, st.s.cursor); err != nil {
		return err
	}
	st.events = edge.Pull(st.events, edge.EventFrame) // pulled by follower.run, more than once
	for i, p := range pend {
		if err := st.t.conv.Resolve(detach(ctx), p.CallID, res[i]); err != nil {
			return err
		}
	}
	st.runID = pend[0].ReplyTo
	return nil
}

// runHeaders name the run as LangGraph's server does: Content-Location
// (the SDK's onRunCreated) and Location (where a dropped stream rejoins),
// both relative to the API's root.
func runHeaders(st *started) func(http.Header) {
	return func(hd http.Header) {
		base := "/threads/" + st.t.conv.ID() + "/runs/" + st.runID
		if st.temp {
			base = "/runs/" + st.runID
		}
		hd.Set("Content-Location", base)
		hd.Set("Location", base+"/stream")
	}
}

// streamRun answers POST /threads/{tid}/runs/stream and POST /runs/stream.
func (h *Handler) streamRun(w http.ResponseWriter, r *http.Request) error {
	st, err := h.start(w, r, r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer st.close()
	s := startSSE(w, h.opts.KeepAlive, runHeaders(st))
	defer s.close()
	f, over := h.follow(r, st, s)
	if !over && st.cancelOnDisconnect {
		// The client went away before the run's end and asked for its run
		// to go with it (useStream's default without resumable streams).
		st.t.conv.InterruptTurn(detach(r.Context()), st.runID)
	}
	h.completed(r.Context(), st, f, over)
	return nil
}

// completed deletes a stateless run's temporal thread once the run is
// over and its answer was given (on_completion: delete, LangGraph's
// default), so that a client's stateless runs do not hold memory until
// the idle cleanup. A run that waits for approvals, one the client left
// before its end, or on_completion: keep keeps its thread.
func (h *Handler) completed(ctx context.Context, st *started, f *follower, over bool) {
	if !st.temp || !over || f.waiting || st.keep {
		return
	}
	if err := st.t.agent.DeleteConversation(detach(ctx), st.t.conv.ID()); err != nil && !agentik.IsNotFound(err) {
		h.log.WarnContext(ctx, "langgraph: delete a stateless run's thread", "thread", st.t.conv.ID(), "err", err)
	}
}

// follow streams a started run to its end (or the client's going away:
// over is false).
func (h *Handler) follow(r *http.Request, st *started, s *sseWriter) (f *follower, over bool) {
	s.event("metadata", 0, map[string]any{"run_id": st.runID, "thread_id": st.t.conv.ID(), "attempt": 1})
	f = st.follower(st.modes, s)
	if st.modes["events"] {
		f.streamEvent("on_chain_start", map[string]any{"input": map[string]any{}})
	}
	if !f.run(r.Context(), st.events) {
		return f, false
	}
	if st.modes["events"] {
		// The run's output is the thread's values: read whole (the
		// follower's path may hold only the run's part).
		out := &Values{Messages: toLangChain(f.path), State: f.state}
		if s2, err := st.t.read(r.Context()); err == nil {
			out = &Values{Messages: toLangChain(s2.path), Interrupt: interrupts(s2.pending), State: s2.shared}
		}
		f.streamEvent("on_chain_end", map[string]any{"output": out})
	}
	if f.failure != nil {
		s.event("error", 0, map[string]string{"error": "RunError", "message": h.failureText(r.Context(), st)})
	}
	s.event("end", 0, nil)
	return f, true
}

// failureText is what a failed run says: the turn's error entry.
func (h *Handler) failureText(ctx context.Context, st *started) string {
	s, err := st.t.read(ctx)
	if err == nil {
		for i := len(s.path) - 1; i >= 0; i-- {
			if m := s.path[i]; m.Type == agentik.MsgError && m.ReplyTo == st.runID {
				return agentik.TurnErrorMessage(m.Code, m.Details)
			}
		}
	}
	return "the run failed"
}

// waitRun answers POST /threads/{tid}/runs/wait and POST /runs/wait: the
// thread's values once the run is over (or waits for approvals).
func (h *Handler) waitRun(w http.ResponseWriter, r *http.Request) error {
	st, err := h.start(w, r, r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer st.close()
	return h.finalValues(w, r, st)
}

// finalValues waits for the run, then answers the thread's values.
func (h *Handler) finalValues(w http.ResponseWriter, r *http.Request, st *started) error {
	f := st.follower(modes{}, discard{})
	if !f.run(r.Context(), st.events) {
		return r.Context().Err()
	}
	s, err := st.t.read(r.Context())
	if err != nil {
		return err
	}
	v := map[string]any{"messages": toLangChain(s.path)}
	if its := interrupts(s.pending); len(its) > 0 {
		v["__interrupt__"] = its
	}
	if f.failure != nil {
		v["__error__"] = map[string]string{"error": "RunError", "message": h.failureText(r.Context(), st)}
	}
	w.Header().Set("Content-Location", "/threads/"+st.t.conv.ID()+"/runs/"+st.runID)
	writeJSON(w, v)
	h.completed(r.Context(), st, f, true)
	return nil
}
