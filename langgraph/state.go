package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/jsonpatch"
)

// Checkpoint names one state of a thread.
type Checkpoint struct {
	ThreadID      string `json:"thread_id"`
	CheckpointNS  string `json:"checkpoint_ns"`
	CheckpointID  string `json:"checkpoint_id"`
	CheckpointMap any    `json:"checkpoint_map"`
}

// ThreadState is a thread at one checkpoint.
type ThreadState struct {
	Values           *Values        `json:"values"`
	Next             []string       `json:"next"`
	Tasks            []Task         `json:"tasks"`
	Checkpoint       Checkpoint     `json:"checkpoint"`
	Metadata         map[string]any `json:"metadata"`
	CreatedAt        *agentik.Time  `json:"created_at"`
	ParentCheckpoint *Checkpoint    `json:"parent_checkpoint"`
	Interrupts       []Interrupt    `json:"interrupts"`
}

// Task is a step that waits: the agent's, while approvals are pending.
type Task struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Path       []string    `json:"path"`
	Error      any         `json:"error"`
	Interrupts []Interrupt `json:"interrupts"`
	Checkpoint any         `json:"checkpoint"`
	State      any         `json:"state"`
	Result     any         `json:"result"`
}

// boundary reports whether the thread has a checkpoint after path[i]: the
// input is in (a user message), or a turn is over (its closing message or
// an interrupted answer).
func boundary(path []agentik.Message, i int) bool {
	m := &path[i]
	return m.Type == agentik.MsgUser || closesAt(path, i) || (m.Type == agentik.MsgAssistant && m.Interrupted)
}

// closesAt reports whether path[i] closes its turn: an error, or an answer
// no tool call of its round follows (text that came with tool calls is
// not the end of the turn).
func closesAt(path []agentik.Message, i int) bool {
	m := &path[i]
	if !m.ClosesTurn() {
		return false
	}
	return m.Type == agentik.MsgError || i+1 >= len(path) || path[i+1].Type != agentik.MsgToolCall || path[i+1].ReplyTo != m.ReplyTo
}

// checkpoints returns the indexes into path after which the thread has a
// checkpoint, oldest first: -1 is the empty thread; the path's last
// message always ends one (the state now).
func checkpoints(path []agentik.Message) []int {
	out := []int{-1}
	for i := range path {
		if boundary(path, i) || i == len(path)-1 {
			out = append(out, i)
		}
	}
	return out
}

func seqAt(path []agentik.Message, i int) int64 {
	if i < 0 {
		return 0
	}
	return path[i].Seq
}

// state is the thread's state after path[len(path)-1] (the empty thread
// for an empty path), whose previous checkpoint is parent (-1: none) and
// which is the step-th checkpoint of its path. now marks the thread's
// current state: only it carries what is running or waiting.
func (s *snapshot) state(path []agentik.Message, parent int64, step int, now bool) ThreadState {
	id := s.info.ID
	last := seqAt(path, len(path)-1)
	st := ThreadState{
		Values:     &Values{Messages: toLangChain(path)},
		Next:       []string{},
		Tasks:      []Task{},
		Checkpoint: Checkpoint{ThreadID: id, CheckpointID: checkpointID(id, last)},
		Metadata:   map[string]any{"source": "loop", "step": step - 1, "parents": map[string]any{}},
		Interrupts: []Interrupt{},
	}
	if len(path) == 0 {
		st.Metadata["source"] = "input"
		st.CreatedAt = &s.info.CreatedAt
	} else {
		m := &path[len(path)-1]
		st.CreatedAt = &m.Date
		if r := runOf(m); r != "" {
			st.Metadata["run_id"] = r
		}
	}
	if parent >= 0 {
		st.ParentCheckpoint = &Checkpoint{ThreadID: id, CheckpointID: checkpointID(id, parent)}
	}
	if now {
		st.Values.State = s.shared // the state is the conversation's now: no checkpoint keeps one
		if s.info.Working {
			st.Next = []string{agentNode}
		}
		if its := interrupts(s.pending); len(its) > 0 {
			st.Interrupts = its
			st.Tasks = []Task{{ID: s.pending[0].ReplyTo, Name: agentNode, Path: []string{"__pregel_pull", agentNode}, Interrupts: its}}
		}
	}
	return st
}

// stateAt is the state at the k-th checkpoint of the head path.
func (s *snapshot) stateAt(cps []int, k int) ThreadState {
	parent := int64(-1)
	if k > 0 {
		parent = seqAt(s.path, cps[k-1])
	}
	return s.state(s.path[:cps[k]+1], parent, k, k == len(cps)-1)
}

// runOf is the run a message belongs to: a user message's own id, else
// the user message it replies to.
func runOf(m *agentik.Message) string {
	if m.Type == agentik.MsgUser {
		return m.ID
	}
	return m.ReplyTo
}

// tree is every message of a thread, every branch (SPEC §18), by seq.
type tree struct {
	bySeq map[int64]*agentik.Message
	seqs  []int64 // ascending
}

// readTree reads every message of the thread (at most maxPathMessages).
func (t *thread) readTree(ctx context.Context) (*tree, error) {
	tr := &tree{bySeq: map[int64]*agentik.Message{}}
	after := int64(0)
	for len(tr.seqs) < maxPathMessages {
		p, err := t.conv.Messages(ctx, agentik.MessagesRequest{After: after, Limit: agentik.MaxMessagesLimit, Branch: agentik.BranchAll})
		if err != nil {
			return nil, err
		}
		for i := range p.Messages {
			m := &p.Messages[i]
			tr.bySeq[m.Seq] = m
			tr.seqs = append(tr.seqs, m.Seq)
		}
		if !p.HasMore || len(p.Messages) == 0 {
			break
		}
		after = p.Messages[len(p.Messages)-1].Seq
	}
	return tr, nil
}

// path is the messages from the root to seq, in order (empty for 0).
func (tr *tree) path(seq int64) []agentik.Message {
	var rev []agentik.Message
	for seq != 0 {
		m, ok := tr.bySeq[seq]
		if !ok {
			break
		}
		rev = append(rev, *m)
		seq = m.Parent
	}
	slices.Reverse(rev)
	return rev
}

// continues reports whether the answer at seq came with tool calls: a
// tool call of its turn follows it, so its turn goes on.
func (tr *tree) continues(seq int64) bool {
	m := tr.bySeq[seq]
	for _, x := range tr.bySeq {
		if x.Parent == seq && x.Type == agentik.MsgToolCall && x.ReplyTo == m.ReplyTo {
			return true
		}
	}
	return false
}

// states are the thread's checkpoints on every branch, newest first: one
// after each boundary of each path, the empty thread, and the current
// state (the head) when it is not a boundary.
func (s *snapshot) states(tr *tree) []ThreadState {
	head := s.info.Head
	var out []ThreadState
	for i := len(tr.seqs) - 1; i >= 0; i-- {
		seq := tr.seqs[i]
		path := tr.path(seq)
		cps := checkpoints(path)
		if seq != head && (!boundary(path, len(path)-1) || tr.continues(seq)) {
			continue
		}
		out = append(out, s.state(path, seqAt(path, cps[len(cps)-2]), len(cps)-1, seq == head))
	}
	return append(out, s.state(nil, -1, 0, head == 0))
}

// findState returns the state whose checkpoint is id among states, the
// states of the thread tid: an id of another thread is ENotFound.
func findState(tid string, states []ThreadState, id string) (int, error) {
	if _, ok := parseCheckpoint(tid, id); ok {
		for i, st := range states {
			if st.Checkpoint.CheckpointID == id {
				return i, nil
			}
		}
	}
	return 0, agentik.Errorf(agentik.ENotFound, "checkpoint %q not found on this thread", id)
}

// getState answers GET /threads/{tid}/state[/{cid}].
func (h *Handler) getState(w http.ResponseWriter, r *http.Request) error {
	t, s, err := h.readThread(r)
	if err != nil {
		return err
	}
	defer t.close()
	return h.writeStateAt(w, r, t, s, r.PathValue("cid"))
}

// writeStateAt answers the state at checkpoint cid ("" the current one),
// on any branch.
func (h *Handler) writeStateAt(w http.ResponseWriter, r *http.Request, t *thread, s *snapshot, cid string) error {
	if cid == "" {
		cps := checkpoints(s.path)
		writeJSON(w, s.stateAt(cps, len(cps)-1))
		return nil
	}
	tr, err := t.readTree(r.Context())
	if err != nil {
		return err
	}
	states := s.states(tr)
	i, err := findState(s.info.ID, states, cid)
	if err != nil {
		return err
	}
	writeJSON(w, states[i])
	return nil
}

// postStateCheckpoint answers POST /threads/{tid}/state/checkpoint
// {checkpoint: {checkpoint_id}}.
func (h *Handler) postStateCheckpoint(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	t, s, err := h.readThread(r)
	if err != nil {
		return err
	}
	defer t.close()
	return h.writeStateAt(w, r, t, s, req.Checkpoint.CheckpointID)
}

// updateState answers POST /threads/{tid}/state: the values' keys other
// than messages set those of the conversation's shared state (SPEC §19),
// each replaced whole, as a LangGraph channel without a reducer is;
// messages only runs write. It answers the thread's checkpoint.
func (h *Handler) updateState(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Values map[string]json.RawMessage `json:"values"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	t, err := h.open(r.Context(), r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer t.close()
	if _, ok := req.Values["messages"]; ok || len(req.Values) == 0 {
		return agentik.Errorf(agentik.EInvalid, "a thread's messages are written by runs only: update_state takes values of the shared state's keys")
	}
	patch := make([]jsonpatch.Op, 0, len(req.Values))
	for k, v := range req.Values {
		patch = append(patch, jsonpatch.Op{Op: "add", Path: "/" + jsonpatch.EscapeToken(k), Value: v})
	}
	if _, err := t.conv.PatchSharedState(r.Context(), jsonpatch.Marshal(patch)); err != nil {
		return err
	}
	info, err := t.conv.Info(r.Context())
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"checkpoint": Checkpoint{ThreadID: info.ID, CheckpointID: checkpointID(info.ID, info.Head)}})
	return nil
}

type historyRequest struct {
	Limit int `json:"limit"`
	// Before is a checkpoint id, a checkpoint {checkpoint_id} or a config
	// {configurable: {checkpoint_id}} (the JS SDK's type for it).
	Before     json.RawMessage `json:"before"`
	Checkpoint *struct {
		CheckpointID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	Metadata map[string]any `json:"metadata"`
}

// history answers POST (or GET) /threads/{tid}/history: the states of the
// thread's head path, newest first.
func (h *Handler) history(w http.ResponseWriter, r *http.Request) error {
	var req historyRequest
	if r.Method == http.MethodPost {
		if err := h.decode(w, r, &req); err != nil {
			return err
		}
	}
	t, s, err := h.readThread(r)
	if err != nil {
		return err
	}
	defer t.close()
	tr, err := t.readTree(r.Context())
	if err != nil {
		return err
	}
	states := s.states(tr)
	if req.Checkpoint != nil && req.Checkpoint.CheckpointID != "" {
		// The history of one checkpoint: its own path's states.
		i, err := findState(s.info.ID, states, req.Checkpoint.CheckpointID)
		if err != nil {
			return err
		}
		states = ancestry(states, i)
	}
	before, err := checkpointOf(req.Before)
	if err != nil {
		return err
	}
	if before != "" {
		i, err := findState(s.info.ID, states, before)
		if err != nil {
			return err
		}
		states = states[i+1:]
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 10
	}
	out := []ThreadState{}
	for _, st := range states {
		if len(out) == limit {
			break
		}
		if metadataMatches(st.Metadata, req.Metadata) {
			out = append(out, st)
		}
	}
	writeJSON(w, out)
	return nil
}

// checkpointOf reads the checkpoint id of history's before: a string, a
// checkpoint or a config ("" for none).
func checkpointOf(raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", nil
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id, nil
	}
	var cp struct {
		CheckpointID string `json:"checkpoint_id"`
		Configurable struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"configurable"`
	}
	if err := json.Unmarshal(raw, &cp); err != nil {
		return "", agentik.Errorf(agentik.EInvalid, "before must be a checkpoint id, a checkpoint or a config")
	}
	if cp.CheckpointID != "" {
		return cp.CheckpointID, nil
	}
	return cp.Configurable.CheckpointID, nil
}

// ancestry is states[i] and the states it descends from, newest first.
func ancestry(states []ThreadState, i int) []ThreadState {
	out := []ThreadState{states[i]}
	for p := states[i].ParentCheckpoint; p != nil; {
		j, err := findState(p.ThreadID, states, p.CheckpointID)
		if err != nil {
			break
		}
		out = append(out, states[j])
		p = states[j].ParentCheckpoint
	}
	return out
}

// copyThread answers POST /threads/{tid}/copy: a fork of the thread's
// head path into a new thread of the same owner (SPEC §18).
func (h *Handler) copyThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.open(r.Context(), r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer t.close()
	info, err := t.conv.Fork(r.Context(), agentik.ForkRequest{})
	if err != nil {
		return err
	}
	c, err := t.agent.Conversation(r.Context(), info.ID)
	if err != nil {
		return err
	}
	fork := &thread{agent: t.agent, conv: c}
	defer fork.close()
	return h.writeThread(w, r.Context(), fork)
}
