package langgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// runs lists the runs of the thread's head path: its user messages, each
// with the status the journal and the engine give it, oldest first.
func (s *snapshot) runs(assistant string) []Run {
	var out []Run
	closed := map[string]string{} // run id → its final status
	last := map[string]agentik.Time{}
	for i := range s.path {
		m := &s.path[i]
		switch {
		case m.Type == agentik.MsgUser:
			last[m.ID] = m.Date
		case m.Type == agentik.MsgError:
			closed[m.ReplyTo] = "error"
		case m.Type == agentik.MsgAssistant && m.Interrupted:
			closed[m.ReplyTo] = "interrupted"
		case closesAt(s.path, i):
			closed[m.ReplyTo] = "success"
		}
		if r := runOf(m); r != "" && m.Type != agentik.MsgUser {
			last[r] = m.Date
		}
	}
	parked := ""
	if len(s.pending) > 0 {
		parked = s.pending[0].ReplyTo
	}
	open := 0 // open runs after the last closed one, in order
	for i := range s.path {
		m := &s.path[i]
		if m.Type != agentik.MsgUser {
			continue
		}
		status, ok := closed[m.ID]
		if !ok {
			status = s.openStatus(m.ID, parked, open)
			open++
		} else {
			open = 0
		}
		out = append(out, Run{
			RunID: m.ID, ThreadID: s.info.ID, AssistantID: assistant, CreatedAt: m.Date, UpdatedAt: last[m.ID],
			Status: status, Metadata: map[string]any{}, Kwargs: map[string]any{}, MultitaskStrategy: "enqueue",
		})
	}
	// A run left open before a later run closed was cut without an answer.
	for i := range out {
		if (out[i].Status == "pending" || out[i].Status == "running") && laterClosed(out[i+1:]) {
			out[i].Status = "interrupted"
		}
	}
	return slices.DeleteFunc(out, func(r Run) bool { return s.deleted[r.RunID] })
}

func laterClosed(rs []Run) bool {
	return slices.ContainsFunc(rs, func(r Run) bool { return r.Status == "success" || r.Status == "error" })
}

// openStatus is the status of a run without a closing message: the first
// open run runs (or waits for approvals) while the thread works; the others
// wait their turn.
func (s *snapshot) openStatus(id, parked string, k int) string {
	switch {
	case id == parked:
		return "interrupted"
	case s.info.Working && k == 0:
		return "running"
	}
	return "pending"
}

// findRun returns the run id of the thread, ENotFound if it has none.
func (s *snapshot) findRun(assistant, id string) (Run, error) {
	for _, r := range s.runs(assistant) {
		if r.RunID == id {
			return r, nil
		}
	}
	return Run{}, agentik.Errorf(agentik.ENotFound, "run %q not found on this thread", id)
}

func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) error {
	t, s, err := h.readThread(r)
	if err != nil {
		return err
	}
	defer t.close()
	if err := s.withDeleted(r.Context(), t); err != nil {
		return err
	}
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	offset, _ := strconv.Atoi(q.Get("offset"))
	status := q.Get("status")
	runs := s.runs(t.agent.Info().ID)
	slices.Reverse(runs) // newest first
	if status != "" {
		runs = slices.DeleteFunc(runs, func(r Run) bool { return r.Status != status })
	}
	writeJSON(w, page(runs, offset, limit))
	return nil
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) error {
	t, s, err := h.readThread(r)
	if err != nil {
		return err
	}
	defer t.close()
	if err := s.withDeleted(r.Context(), t); err != nil {
		return err
	}
	run, err := s.findRun(t.agent.Info().ID, r.PathValue("rid"))
	if agentik.ErrorCode(err) == agentik.ENotFound && !s.deleted[r.PathValue("rid")] {
		run, err = h.branchRun(r, t, s, r.PathValue("rid"))
	}
	if err != nil {
		return err
	}
	writeJSON(w, run)
	return nil
}

// branchRun is a run of the thread off its head path (an edited or
// regenerated branch, a rolled-back run): its answer wherever it is, or
// interrupted when it has none (it was cut, or left before it ran).
func (h *Handler) branchRun(r *http.Request, t *thread, s *snapshot, id string) (Run, error) {
	tr, err := t.readTree(r.Context())
	if err != nil {
		return Run{}, err
	}
	var user *agentik.Message
	for _, seq := range tr.seqs {
		if m := tr.bySeq[seq]; m.ID == id && m.Type == agentik.MsgUser {
			user = m
		}
	}
	if user == nil {
		return Run{}, agentik.Errorf(agentik.ENotFound, "run %q not found on this thread", id)
	}
	run := Run{RunID: id, ThreadID: s.info.ID, AssistantID: t.agent.Info().ID, CreatedAt: user.Date, UpdatedAt: user.Date,
		Status: "interrupted", Metadata: map[string]any{}, Kwargs: map[string]any{}, MultitaskStrategy: "enqueue"}
	for _, seq := range tr.seqs {
		m := tr.bySeq[seq]
		if m.ReplyTo != id {
			continue
		}
		run.UpdatedAt = m.Date
		switch {
		case m.Type == agentik.MsgError:
			run.Status = "error"
		case m.Type == agentik.MsgAssistant && !m.Interrupted && !tr.continues(seq) && run.Status != "error":
			run.Status = "success"
		}
	}
	return run, nil
}

// createRun answers POST /threads/{tid}/runs: a background run.
func (h *Handler) createRun(w http.ResponseWriter, r *http.Request) error {
	st, err := h.start(w, r, r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer st.close()
	s, err := st.t.read(r.Context())
	if err != nil {
		return err
	}
	run, err := s.findRun(st.t.agent.Info().ID, st.runID)
	if err != nil {
		return err
	}
	runHeaders(st)(w.Header())
	w.Header().Del("Location")
	writeJSON(w, run)
	return nil
}

// createStatelessRun answers POST /runs: a stateless background run has
// nobody to read its result (its thread is temporal), so it is refused.
func (h *Handler) createStatelessRun(w http.ResponseWriter, r *http.Request) error {
	return agentik.Errorf(agentik.EInvalid, "a stateless background run has no thread to read its result from: use /runs/wait or /runs/stream, or a thread")
}

// joined opens the thread of a run and subscribes to it, for join, rejoin
// and cancel with wait.
func (h *Handler) joined(r *http.Request, after int64) (*started, Run, error) {
	ctx := r.Context()
	t, err := h.open(ctx, r.PathValue("tid"))
	if err != nil {
		return nil, Run{}, err
	}
	st := &started{t: t, modes: modes{}}
	if st.s, err = t.read(ctx); err == nil {
		err = st.s.withDeleted(ctx, t)
	}
	if err != nil {
		st.close()
		return nil, Run{}, err
	}
	run, err := st.s.findRun(t.agent.Info().ID, r.PathValue("rid"))
	if err != nil {
		st.close()
		return nil, Run{}, err
	}
	st.runID = run.RunID
	if after <= 0 || after > st.s.cursor {
		after = st.s.cursor
	}
	st.after = after
	if st.events, err = t.conv.Events(ctx, after); err != nil {
		st.close()
		return nil, Run{}, err
	}
	st.events = edge.Pull(st.events, edge.EventFrame) // pulled by follower.run
	if runOver(run) {
		st.stopAt = st.s.cursor // a replay from after ends where the read was
	} else {
		// The run may have ended between the read and the subscription: its
		// end then is not in the stream, but a second read shows it.
		again, err := t.read(ctx)
		if err != nil {
			st.close()
			return nil, Run{}, err
		}
		if r2, err := again.findRun(t.agent.Info().ID, run.RunID); err == nil && runOver(r2) {
			run, st.stopAt, st.final = r2, again.cursor, again
		}
	}
	return st, run, nil
}

func runOver(run Run) bool { return run.Status != "pending" && run.Status != "running" }

// joinRun answers GET …/runs/{rid}/join: the thread's values once the run
// is over.
func (h *Handler) joinRun(w http.ResponseWriter, r *http.Request) error {
	st, run, err := h.joined(r, 0)
	if err != nil {
		return err
	}
	defer st.close()
	if runOver(run) {
		s := st.s
		if st.final != nil {
			s = st.final // the read that saw the run over
		}
		v := map[string]any{"messages": toLangChain(s.path)}
		if its := interrupts(s.pending); len(its) > 0 {
			v["__interrupt__"] = its
		}
		writeJSON(w, v)
		return nil
	}
	return h.finalValues(w, r, st)
}

// joinStream answers GET …/runs/{rid}/stream: the run's stream from now
// on, or — with Last-Event-ID — from just after that durable point.
func (h *Handler) joinStream(w http.ResponseWriter, r *http.Request) error {
	m, err := parseModes(r.URL.Query()["stream_mode"])
	if err != nil {
		return err
	}
	last := lastEventID(r)
	st, _, err := h.joined(r, last)
	if err != nil {
		return err
	}
	defer st.close()
	st.modes = m
	s := startSSE(w, h.opts.KeepAlive, nil)
	defer s.close()
	if st.after >= st.s.cursor && m["values"] {
		// Joined from now: the state so far, then what comes.
		s.event("values", 0, &Values{Messages: toLangChain(st.s.path), Interrupt: interrupts(st.s.pending), State: st.s.shared})
	}
	h.follow(r, st, s)
	return nil
}

// cancelRun answers POST …/runs/{rid}/cancel[?wait=1]: the run's turn is
// interrupted (or withdrawn before it starts).
func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	switch q.Get("action") {
	case "", "interrupt", "rollback":
	default:
		return agentik.Errorf(agentik.EInvalid, "action must be interrupt or rollback")
	}
	st, run, err := h.joined(r, 0)
	if err != nil {
		return err
	}
	defer st.close()
	if runOver(run) {
		return agentik.Errorf(agentik.EConflict, "run %s is not running (%s)", run.RunID, run.Status)
	}
	if _, err := st.t.conv.InterruptTurn(detach(r.Context()), run.RunID); err != nil {
		return err
	}
	if w1 := q.Get("wait"); w1 == "1" || w1 == "true" {
		f := st.follower(modes{}, discard{})
		f.run(r.Context(), st.events)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// deletedRunsKey is the conversation state key (agentik.StateKeeper) of the
// thread's deleted runs: a JSON array of run ids.
const deletedRunsKey = "langgraph.deleted_runs"

// deletedRuns are the run ids deleted from the thread's run records.
func deletedRuns(ctx context.Context, t *thread) (map[string]bool, error) {
	k, ok := t.conv.(agentik.StateKeeper)
	if !ok {
		return nil, nil
	}
	b, err := k.KeptState().State(ctx, deletedRunsKey)
	if err != nil || b == nil {
		return nil, err
	}
	var ids []string
	if err := json.Unmarshal(b, &ids); err != nil {
		return nil, fmt.Errorf("read deleted runs: %w", err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// deleteRun answers DELETE …/runs/{rid}: a finished run's record is
// deleted — it leaves the runs listing and GET, join and stream of it are
// 404 — while its messages stay in the thread's history (a run is a turn,
// and the journal keeps every turn); a run that has not finished is 409.
func (h *Handler) deleteRun(w http.ResponseWriter, r *http.Request) error {
	st, run, err := h.joined(r, 0)
	if err != nil {
		return err
	}
	st.close()
	if !runOver(run) {
		return agentik.Errorf(agentik.EConflict, "run %s is %s: cancel it first", run.RunID, run.Status)
	}
	k, ok := st.t.conv.(agentik.StateKeeper)
	if !ok {
		return agentik.Errorf(agentik.EInvalid, "this thread's runs cannot be deleted: a run is a turn of the thread's history")
	}
	h.deleteMu.Lock()
	defer h.deleteMu.Unlock()
	gone, err := deletedRuns(r.Context(), st.t)
	if err != nil {
		return err
	}
	ids := slices.Sorted(maps.Keys(gone))
	b, err := json.Marshal(append(ids, run.RunID))
	if err != nil {
		return err
	}
	if err := k.KeptState().SetState(r.Context(), deletedRunsKey, b); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
