package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/agentik/agentik"
)

// Thread is a conversation as the LangGraph API shows it.
type Thread struct {
	ThreadID   string         `json:"thread_id"`
	CreatedAt  agentik.Time   `json:"created_at"`
	UpdatedAt  agentik.Time   `json:"updated_at"`
	Metadata   map[string]any `json:"metadata"`
	Status     string         `json:"status"` // idle | busy | interrupted | error
	Values     *Values        `json:"values"`
	Interrupts map[string]any `json:"interrupts"`
}

// Values is a thread's state: its head path's messages, and the keys of
// the conversation's shared state (SPEC §17, §19) beside them.
type Values struct {
	Messages  []LCMessage `json:"messages"`
	Interrupt []Interrupt `json:"__interrupt__,omitempty"`
	// State is the shared state, a JSON object whose members are written
	// beside messages (MarshalJSON); its own messages and __interrupt__
	// members, if any, are left out: the thread's are those.
	State agentik.RawJSON `json:"-"`
}

// MarshalJSON writes the state's members, then messages and __interrupt__.
func (v Values) MarshalJSON() ([]byte, error) {
	type plain Values
	b, err := json.Marshal(plain(v))
	if err != nil || len(v.State) <= len("{}") {
		return b, err
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(v.State, &keys) != nil {
		return b, nil
	}
	delete(keys, "messages")
	delete(keys, "__interrupt__")
	if len(keys) == 0 {
		return b, nil
	}
	extra, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	return append(append(extra[:len(extra)-1], ','), b[1:]...), nil
}

// thread is an open thread: its agent and its conversation handle.
type thread struct {
	agent agentik.Agent
	conv  agentik.Conversation
}

func (t *thread) close() { t.conv.Close() }

// open finds the caller's thread id among the agents it may use: another
// principal's thread, or one of an agent it may not use, is ENotFound.
func (h *Handler) open(ctx context.Context, id string) (*thread, error) {
	if !agentik.ValidID(id) {
		return nil, agentik.Errorf(agentik.ENotFound, "thread %q not found", id)
	}
	for _, a := range h.opts.Agents(ctx) {
		c, err := a.Conversation(ctx, id)
		if err == nil {
			return &thread{agent: a, conv: c}, nil
		}
		if agentik.ErrorCode(err) != agentik.ENotFound {
			return nil, err
		}
	}
	return nil, agentik.Errorf(agentik.ENotFound, "thread %q not found", id)
}

// readThread opens the request's thread ({tid}) and reads it; the caller
// closes the thread.
func (h *Handler) readThread(r *http.Request) (*thread, *snapshot, error) {
	t, err := h.open(r.Context(), r.PathValue("tid"))
	if err != nil {
		return nil, nil, err
	}
	s, err := t.read(r.Context())
	if err != nil {
		t.close()
		return nil, nil, err
	}
	return t, s, nil
}

// snapshot is what a thread is at one read: its info, head path, the
// durable cursor the path was read at and the approvals that wait.
type snapshot struct {
	info    agentik.ConversationInfo
	path    []agentik.Message
	cursor  int64
	pending []agentik.PendingApproval
	shared  agentik.RawJSON // the shared state, read after cursor
	// deleted are the run ids whose records were deleted (read only where
	// runs are listed or found: withDeleted).
	deleted map[string]bool
}

// withDeleted reads the thread's deleted runs into s.
func (s *snapshot) withDeleted(ctx context.Context, t *thread) error {
	d, err := deletedRuns(ctx, t)
	s.deleted = d
	return err
}

// read reads the thread's head path, oldest first, and the cursor to
// subscribe from to miss nothing after it.
func (t *thread) read(ctx context.Context) (*snapshot, error) {
	info, err := t.conv.Info(ctx)
	if err != nil {
		return nil, err
	}
	s := &snapshot{info: info}
	after := int64(0)
	first := true
	for {
		p, err := t.conv.Messages(ctx, agentik.MessagesRequest{After: after, Limit: agentik.MaxMessagesLimit})
		if err != nil {
			return nil, err
		}
		if first {
			s.cursor, first = p.Cursor, false
		}
		s.path = append(s.path, p.Messages...)
		if !p.HasMore || len(p.Messages) == 0 || len(s.path) >= maxPathMessages {
			break
		}
		after = p.Messages[len(p.Messages)-1].Seq
	}
	if info.Working {
		if s.pending, err = t.conv.Approvals(ctx); err != nil {
			return nil, err
		}
	}
	if s.shared, err = t.conv.SharedState(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// status is the thread's LangGraph status.
func (s *snapshot) status() string {
	switch {
	case len(s.pending) > 0:
		return "interrupted"
	case s.info.Working:
		return "busy"
	}
	for i := len(s.path) - 1; i >= 0; i-- {
		switch s.path[i].Type {
		case agentik.MsgError:
			return "error"
		case agentik.MsgUser, agentik.MsgAssistant:
			return "idle"
		}
	}
	return "idle"
}

func (s *snapshot) values() *Values {
	return &Values{Messages: toLangChain(s.path), State: s.shared}
}

func threadMetadata(a agentik.Agent, info agentik.ConversationInfo) map[string]any {
	id := a.Info().ID
	md := map[string]any{"graph_id": id, "assistant_id": id}
	if info.Title != "" {
		md["title"] = info.Title
	}
	return md
}

func (s *snapshot) thread(a agentik.Agent) Thread {
	return Thread{
		ThreadID: s.info.ID, CreatedAt: s.info.CreatedAt, UpdatedAt: s.info.UpdatedAt,
		Metadata: threadMetadata(a, s.info), Status: s.status(), Values: s.values(),
		Interrupts: interruptMap(s.pending),
	}
}

type createThreadRequest struct {
	ThreadID string         `json:"thread_id"`
	Metadata map[string]any `json:"metadata"`
	IfExists string         `json:"if_exists"` // raise (default) | do_nothing
	GraphID  string         `json:"graph_id"`
}

func (h *Handler) createThread(w http.ResponseWriter, r *http.Request) error {
	var req createThreadRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	if req.IfExists != "" && req.IfExists != "raise" && req.IfExists != "do_nothing" {
		return agentik.Errorf(agentik.EInvalid, "if_exists must be raise or do_nothing")
	}
	if err := checkThreadMetadata(req.Metadata); err != nil {
		return err
	}
	a, err := h.threadAgent(r, req)
	if err != nil {
		return err
	}
	if req.ThreadID != "" {
		if !agentik.ValidID(req.ThreadID) {
			return agentik.Errorf(agentik.EInvalid, "thread_id must be a UUID")
		}
		if t, err := h.open(ctx, req.ThreadID); err == nil {
			defer t.close()
			if req.IfExists != "do_nothing" {
				return agentik.Errorf(agentik.EConflict, "thread %s already exists", req.ThreadID)
			}
			return h.writeThread(w, ctx, t)
		}
	}
	title, _ := req.Metadata["title"].(string)
	info, err := a.CreateConversation(ctx, agentik.CreateRequest{ID: req.ThreadID, Title: title})
	if err != nil {
		return err
	}
	s := &snapshot{info: info}
	writeJSON(w, s.thread(a))
	return nil
}

// threadAgent is the agent a new thread belongs to: the one its metadata
// names (graph_id or assistant_id), else the default.
func (h *Handler) threadAgent(r *http.Request, req createThreadRequest) (agentik.Agent, error) {
	for _, k := range []string{"graph_id", "assistant_id"} {
		if id, ok := req.Metadata[k].(string); ok && id != "" {
			return h.agent(r, id)
		}
	}
	if req.GraphID != "" {
		return h.agent(r, req.GraphID)
	}
	as := h.opts.Agents(r.Context())
	if len(as) == 0 {
		return nil, agentik.Errorf(agentik.ENotFound, "no assistant is available to this caller")
	}
	return as[0], nil
}

// checkThreadMetadata refuses metadata Agentik cannot keep: a thread's
// metadata is its assistant and its title (docs/langgraph.md).
func checkThreadMetadata(md map[string]any) error {
	for k, v := range md {
		switch k {
		case "graph_id", "assistant_id":
			if _, ok := v.(string); !ok {
				return agentik.Errorf(agentik.EInvalid, "metadata.%s must be a string", k)
			}
		case "title":
			if _, ok := v.(string); !ok {
				return agentik.Errorf(agentik.EInvalid, "metadata.title must be a string")
			}
		default:
			return agentik.Errorf(agentik.EInvalid, "thread metadata %q cannot be stored: a thread's metadata here is graph_id, assistant_id and title", k)
		}
	}
	return nil
}

func (h *Handler) writeThread(w http.ResponseWriter, ctx context.Context, t *thread) error {
	s, err := t.read(ctx)
	if err != nil {
		return err
	}
	writeJSON(w, s.thread(t.agent))
	return nil
}

func (h *Handler) getThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.open(r.Context(), r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer t.close()
	return h.writeThread(w, r.Context(), t)
}

func (h *Handler) patchThread(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	t, err := h.open(r.Context(), r.PathValue("tid"))
	if err != nil {
		return err
	}
	defer t.close()
	if err := checkThreadMetadata(req.Metadata); err != nil {
		return err
	}
	id := t.agent.Info().ID
	for _, k := range []string{"graph_id", "assistant_id"} {
		if v, ok := req.Metadata[k]; ok && v != id {
			return agentik.Errorf(agentik.EInvalid, "metadata.%s: the thread belongs to assistant %q", k, id)
		}
	}
	if title, ok := req.Metadata["title"].(string); ok {
		if _, err := t.conv.Rename(r.Context(), title); err != nil {
			return err
		}
	}
	return h.writeThread(w, r.Context(), t)
}

func (h *Handler) deleteThread(w http.ResponseWriter, r *http.Request) error {
	t, err := h.open(r.Context(), r.PathValue("tid"))
	if err != nil {
		return err
	}
	t.close()
	if err := t.agent.DeleteConversation(r.Context(), t.conv.ID()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type threadSearch struct {
	Metadata  map[string]any `json:"metadata"`
	Values    map[string]any `json:"values"`
	Status    string         `json:"status"`
	IDs       []string       `json:"ids"`
	Limit     int            `json:"limit"`
	Offset    int            `json:"offset"`
	SortBy    string         `json:"sort_by"`
	SortOrder string         `json:"sort_order"`
	Select    []string       `json:"select"`
}

// maxSearchScan bounds the conversations one search lists.
const maxSearchScan = 10_000

// listed is a conversation a search found, with its agent.
type listed struct {
	agent agentik.Agent
	info  agentik.ConversationInfo
}

// search returns the caller's threads that match q, in q's order, from
// the offset-th on, at most limit of them (limit < 0: all).
func (h *Handler) search(w http.ResponseWriter, r *http.Request, count bool) ([]Thread, error) {
	var q threadSearch
	if err := h.decode(w, r, &q); err != nil {
		return nil, err
	}
	switch q.Status {
	case "", "idle", "busy", "interrupted", "error":
	default:
		return nil, agentik.Errorf(agentik.EInvalid, "status must be idle, busy, interrupted or error")
	}
	ctx := r.Context()
	var found []listed
	for _, a := range h.opts.Agents(ctx) {
		ls, err := agentConversations(ctx, a, q)
		if err != nil {
			return nil, err
		}
		found = append(found, ls...)
	}
	sortListed(found, q)
	limit, offset := q.Limit, max(q.Offset, 0)
	if limit <= 0 {
		limit = 10
	}
	if count {
		limit, offset = -1, 0
	}
	out := []Thread{}
	for _, l := range found {
		if limit >= 0 && len(out) == limit {
			break
		}
		if q.Status == "" && len(q.Values) == 0 && offset > 0 {
			offset-- // no need to read a thread the page skips
			continue
		}
		t, err := h.threadOf(ctx, l)
		if agentik.ErrorCode(err) == agentik.ENotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if q.Status != "" && t.Status != q.Status || !valuesMatch(t.Values, q.Values) {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// agentConversations lists the caller's conversations of agent a that
// match q's ids and metadata.
func agentConversations(ctx context.Context, a agentik.Agent, q threadSearch) ([]listed, error) {
	var out []listed
	before, n := "", 0
	for n < maxSearchScan {
		list, err := a.ListConversations(ctx, agentik.ListRequest{Limit: 100, Before: before})
		if err != nil {
			return nil, err
		}
		for _, info := range list.Conversations {
			n++
			if len(q.IDs) > 0 && !slices.Contains(q.IDs, info.ID) {
				continue
			}
			if metadataMatches(threadMetadata(a, info), q.Metadata) {
				out = append(out, listed{agent: a, info: info})
			}
		}
		if list.Next == "" {
			break
		}
		before = list.Next
	}
	return out, nil
}

// valuesMatch reports whether every key of want is a top-level key of the
// thread's values (messages, the shared state's keys, __interrupt__)
// whose value is JSON-equal to want's (docs/langgraph.md).
func valuesMatch(v *Values, want map[string]any) bool {
	if len(want) == 0 {
		return true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var have map[string]any
	if json.Unmarshal(b, &have) != nil {
		return false
	}
	return metadataMatches(have, want)
}

// threadOf reads a listed thread.
func (h *Handler) threadOf(ctx context.Context, l listed) (Thread, error) {
	c, err := l.agent.Conversation(ctx, l.info.ID)
	if err != nil {
		return Thread{}, err
	}
	th := &thread{agent: l.agent, conv: c}
	defer th.close()
	s, err := th.read(ctx)
	if err != nil {
		return Thread{}, err
	}
	return s.thread(l.agent), nil
}

func sortListed(ls []listed, q threadSearch) {
	key := func(l listed) string { return l.info.UpdatedAt.String() }
	switch q.SortBy {
	case "created_at":
		key = func(l listed) string { return l.info.CreatedAt.String() }
	case "thread_id":
		key = func(l listed) string { return l.info.ID }
	}
	asc := strings.EqualFold(q.SortOrder, "asc")
	slices.SortStableFunc(ls, func(a, b listed) int {
		c := strings.Compare(key(a), key(b))
		if !asc {
			c = -c
		}
		return c
	})
}

func (h *Handler) searchThreads(w http.ResponseWriter, r *http.Request) error {
	out, err := h.search(w, r, false)
	if err != nil {
		return err
	}
	writeJSON(w, out)
	return nil
}

func (h *Handler) countThreads(w http.ResponseWriter, r *http.Request) error {
	out, err := h.search(w, r, true)
	if err != nil {
		return err
	}
	writeJSON(w, len(out))
	return nil
}
