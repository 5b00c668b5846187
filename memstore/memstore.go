// Package memstore is an in-memory agentik.Store. The engine keeps temporal
// conversations in it, which must never touch disk; tests can use it too.
// It passes the same contract suite (storetest) as the database stores.
//
// Main guarantee: each Commit is applied whole or not at all under one mutex,
// and every value going in or out is a deep copy, so callers can never alias
// stored state.
//
// Cursors come from one counter shared by every memstore in the process: they
// are strictly increasing and unique within the process, which keeps
// several in-memory stores from handing out the same cursor. They are not
// comparable with a database store's cursors and start again with the
// process; nothing here survives a restart.
package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentik/agentik"
)

var _ agentik.Store = (*Store)(nil)

// cursors is the process-wide cursor counter. It is only advanced while a
// store's mutex is held, so each store sees its own cursors increase in
// commit order.
var cursors atomic.Int64

func nextCursor() int64 { return cursors.Add(1) }

// Conversation list page sizes, as in the database stores.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// Store is an in-memory agentik.Store. The zero value is not usable; call New.
type Store struct {
	mu       sync.Mutex
	closed   bool
	convs    map[string]*conversation
	msgs     map[string]msgRef // journal message id -> where it is; ids are unique store-wide
	agentEvs []agentik.AgentEvent
	keys     map[ownerKey]agentik.KeyRef // lookup keys (Write.Keys)
}

// ownerKey is a lookup key of an owner.
type ownerKey struct{ owner, key string }

type msgRef struct {
	conv string
	seq  int64
}

type conversation struct {
	rec     agentik.ConversationRecord
	msgs    []agentik.Message // msgs[i].Seq == i+1
	open    map[string]bool   // user message id -> its turn is still open
	events  []agentik.Event
	memory  []agentik.MemoryEntry
	nextOrd int64
	state   map[string]agentik.RawJSON
	kids    map[int64][]int64 // the seqs of each message's children (0: the root), ascending
}

// New returns an empty store.
func New() *Store {
	return &Store{convs: map[string]*conversation{}, msgs: map[string]msgRef{}, keys: map[ownerKey]agentik.KeyRef{}}
}

// lock takes the mutex. It fails, without holding the mutex, when ctx is
// done (as a database store would: nothing is applied) or the store is closed.
func (s *Store) lock(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, agentik.WrapError(agentik.EUnavailable, "request cancelled", err))
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%s: %w", op, agentik.Errorf(agentik.EUnavailable, "the store is closed"))
	}
	return nil
}

// lockConv locks the store and returns conversation id, or an error (the
// lock's, or ENotFound) with the store unlocked. The caller unlocks s.mu
// when it is done.
func (s *Store) lockConv(ctx context.Context, op, id string) (*conversation, error) {
	if err := s.lock(ctx, op); err != nil {
		return nil, err
	}
	c, ok := s.convs[id]
	if !ok {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", op, agentik.Errorf(agentik.ENotFound, "conversation %s not found", id))
	}
	return c, nil
}

// clone deep-copies a value through its JSON form: the same normalisation a
// database store applies (times at millisecond precision, compact JSON
// arguments), and no shared slices, maps or pointers with the caller.
func clone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic("memstore: clone: " + err.Error()) // the domain types always encode
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic("memstore: clone: " + err.Error())
	}
	return out
}

// cloneMessage also copies the client tools and the traceparent, which JSON
// leaves out.
func cloneMessage(m agentik.Message) agentik.Message {
	out := clone(m)
	if len(m.ClientTools) > 0 {
		out.ClientTools = clone(m.ClientTools)
	}
	out.TraceParent = m.TraceParent
	if m.Params != nil {
		out.Params = clone(m.Params)
	}
	return out
}

// cloneAgentEvent also copies the owner, which JSON leaves out.
func cloneAgentEvent(ev agentik.AgentEvent) agentik.AgentEvent {
	out := clone(ev)
	out.Owner = ev.Owner
	if out.Conversation != nil {
		out.Conversation.Owner = ev.Owner
	}
	return out
}

func normalise(c agentik.ConversationRecord) agentik.ConversationRecord {
	c.CreatedAt = agentik.TimeOf(c.CreatedAt.Time)
	c.UpdatedAt = agentik.TimeOf(c.UpdatedAt.Time)
	return c
}

// appendAgentEvent gives ev a cursor and stores it; the mutex must be held.
func (s *Store) appendAgentEvent(ev *agentik.AgentEvent) {
	ev.Cursor = nextCursor()
	s.agentEvs = append(s.agentEvs, cloneAgentEvent(*ev))
}

// CreateConversation stores c and its created agent event. An id that
// already exists is EConflict.
func (s *Store) CreateConversation(ctx context.Context, c agentik.ConversationRecord) (agentik.AgentEvent, error) {
	op := "create conversation " + c.ID
	if c.ID == "" {
		return agentik.AgentEvent{}, agentik.Errorf(agentik.EInvalid, "create conversation: empty id")
	}
	if err := s.lock(ctx, op); err != nil {
		return agentik.AgentEvent{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.convs[c.ID]; ok {
		return agentik.AgentEvent{}, fmt.Errorf("%s: %w", op, agentik.Errorf(agentik.EConflict, "conversation %s already exists", c.ID))
	}
	c = normalise(c)
	c.Head = 0
	s.convs[c.ID] = &conversation{rec: c, open: map[string]bool{}, nextOrd: 1}
	info := &agentik.ConversationInfo{
		ID: c.ID, Title: c.Title, Temporal: c.Temporal,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Owner: c.Owner, ForkedFrom: c.ForkedFrom,
	}
	if c.Tokens != (agentik.TurnTokens{}) {
		t := c.Tokens
		info.Tokens = &t
	}
	ev := agentik.AgentEvent{Date: c.CreatedAt, Type: agentik.AgentEvCreated, Conversation: info,
		ConversationID: c.ID, Owner: c.Owner}
	s.appendAgentEvent(&ev)
	return ev, nil
}

// GetConversation returns the conversation, ENotFound when there is none.
func (s *Store) GetConversation(ctx context.Context, id string) (agentik.ConversationRecord, error) {
	op := "get conversation " + id
	c, err := s.lockConv(ctx, op, id)
	if err != nil {
		return agentik.ConversationRecord{}, err
	}
	defer s.mu.Unlock()
	return c.rec, nil
}

// ListConversations pages the owner's conversations, newest updated_at first
// (ties by id, descending). limit <= 0 means 50; it is capped at 500.
func (s *Store) ListConversations(ctx context.Context, owner string, limit int, before string) ([]agentik.ConversationRecord, string, error) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	var tokAt agentik.Time
	var tokID string
	if before != "" {
		var err error
		if tokAt, tokID, err = agentik.ParseListToken(before); err != nil {
			return nil, "", err
		}
	}
	if err := s.lock(ctx, "list conversations"); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	list := []agentik.ConversationRecord{}
	for _, c := range s.convs {
		r := c.rec
		if r.Owner != owner {
			continue
		}
		if before != "" && newerFirst(r, tokAt, tokID) <= 0 {
			continue // not strictly after the token
		}
		list = append(list, r)
	}
	slices.SortFunc(list, func(a, b agentik.ConversationRecord) int { return newerFirst(a, b.UpdatedAt, b.ID) })
	next := ""
	if len(list) > limit {
		list = list[:limit]
		last := list[limit-1]
		next = agentik.ListToken(last.UpdatedAt, last.ID)
	}
	return list, next, nil
}

// newerFirst compares r's list position with (at, id): negative when r comes
// first (newer), positive when after.
func newerFirst(r agentik.ConversationRecord, at agentik.Time, id string) int {
	if c := r.UpdatedAt.Compare(at.Time); c != 0 {
		return -c
	}
	return -strings.Compare(r.ID, id)
}

// RenameConversation sets the title (not updated_at) and appends a renamed
// agent event dated at.
func (s *Store) RenameConversation(ctx context.Context, id, title string, at agentik.Time) (agentik.ConversationRecord, agentik.AgentEvent, error) {
	op := "rename conversation " + id
	c, err := s.lockConv(ctx, op, id)
	if err != nil {
		return agentik.ConversationRecord{}, agentik.AgentEvent{}, err
	}
	defer s.mu.Unlock()
	c.rec.Title = title
	ev := agentik.AgentEvent{Date: agentik.TimeOf(at.Time), Type: agentik.AgentEvRenamed,
		ConversationID: id, Title: title, Owner: c.rec.Owner}
	s.appendAgentEvent(&ev)
	return c.rec, ev, nil
}

// DeleteConversation forgets the conversation and everything it owns and
// appends a deleted agent event.
func (s *Store) DeleteConversation(ctx context.Context, id string, at agentik.Time) (agentik.AgentEvent, error) {
	op := "delete conversation " + id
	c, err := s.lockConv(ctx, op, id)
	if err != nil {
		return agentik.AgentEvent{}, err
	}
	defer s.mu.Unlock()
	for _, m := range c.msgs {
		delete(s.msgs, m.ID)
	}
	delete(s.convs, id)
	ev := agentik.AgentEvent{Date: agentik.TimeOf(at.Time), Type: agentik.AgentEvDeleted,
		ConversationID: id, Owner: c.rec.Owner}
	s.appendAgentEvent(&ev)
	return ev, nil
}

// Commit applies w whole or not at all: everything that can fail is checked
// before the first change. On success the assigned seqs are written into the
// events' Messages and the assigned orders into w.Memory.
func (s *Store) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	op := "commit " + w.ConversationID
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	c, err := s.lockConv(ctx, op, w.ConversationID)
	if err != nil {
		return nil, nil, err
	}
	defer s.mu.Unlock()
	if err := s.checkNew(c, &w); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.checkTree(&w); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}

	// Nothing fails from here on.
	if ref, ok := s.msgs[w.Reopen]; ok && ref.conv == w.ConversationID && c.msgs[ref.seq-1].Type == agentik.MsgUser {
		c.open[w.Reopen] = true
	}
	tip := c.rec.Head
	if w.Detached {
		tip = w.Parent
	}
	out := make([]agentik.Event, len(w.Events))
	for i, ev := range w.Events {
		ev.ConversationID = w.ConversationID
		tip = c.place(&ev, tip, w.Detached)
		if m := ev.Message; m != nil {
			stored := cloneMessage(*m)
			c.msgs = append(c.msgs, stored)
			s.msgs[m.ID] = msgRef{conv: w.ConversationID, seq: m.Seq}
			if m.Type == agentik.MsgUser {
				c.open[m.ID] = true
			}
		}
		switch {
		case ev.Message != nil && ev.Message.ClosesTurn():
			delete(c.open, ev.Message.ReplyTo)
		case ev.Type == agentik.EvInterrupted:
			delete(c.open, ev.ReplyTo)
		}
		ev.Cursor = nextCursor()
		c.events = append(c.events, clone(ev))
		out[i] = ev
	}
	if w.ReplaceMemory {
		c.memory = nil
	}
	if w.DropMemoryThrough > 0 {
		c.memory = slices.DeleteFunc(c.memory, func(e agentik.MemoryEntry) bool { return e.Order <= w.DropMemoryThrough })
	}
	for i := range w.Memory {
		w.Memory[i].Order = c.nextOrd
		c.nextOrd++
		c.memory = append(c.memory, clone(w.Memory[i]))
	}
	s.setRecords(c, &w, out)
	c.rec.Tokens = c.rec.Tokens.Add(w.Tokens)
	var touched *agentik.AgentEvent
	if !w.Touch.IsZero() {
		t := agentik.TimeOf(w.Touch.Time)
		c.rec.UpdatedAt = t
		touched = &agentik.AgentEvent{Date: t, Type: agentik.AgentEvTouched,
			ConversationID: w.ConversationID, UpdatedAt: t, Owner: c.rec.Owner}
		s.appendAgentEvent(touched)
	}
	return out, touched, nil
}

// checkNew refuses a write whose messages exist already or that answers
// a call answered before (EConflict). Caller holds mu.
func (s *Store) checkNew(c *conversation, w *agentik.Write) error {
	ids := map[string]bool{}
	for _, ev := range w.Events {
		if ev.Message == nil {
			continue
		}
		if _, taken := s.msgs[ev.Message.ID]; taken || ids[ev.Message.ID] {
			return agentik.Errorf(agentik.EConflict, "message %s already exists", ev.Message.ID)
		}
		ids[ev.Message.ID] = true
	}
	answered := map[string]bool{}
	for _, ev := range w.Events {
		if ev.Type != agentik.EvApprovalResolved {
			continue
		}
		if answered[ev.CallID] || c.answered(ev.CallID) {
			return agentik.Errorf(agentik.EConflict, "call %s already answered", ev.CallID)
		}
		answered[ev.CallID] = true
	}
	return nil
}

// setRecords stores the lookup keys and state records of w, committed as
// out. Caller holds mu.
func (s *Store) setRecords(c *conversation, w *agentik.Write, out []agentik.Event) {
	for _, k := range w.Keys {
		var first int64
		for _, ev := range out {
			if ev.Message != nil {
				first = ev.Message.Seq
				break
			}
		}
		s.keys[ownerKey{c.rec.Owner, k}] = agentik.KeyRef{ConversationID: w.ConversationID, Seq: first}
	}
	for k, v := range w.State {
		if v == nil {
			delete(c.state, k)
			continue
		}
		if c.state == nil {
			c.state = map[string]agentik.RawJSON{}
		}
		c.state[k] = slices.Clone(v)
	}
}

// Messages pages the journal by seq with the same rules as the database
// stores: with Before set, the newest entries below it (above After);
// otherwise the oldest above After; Offset skips in the paging direction.
func (s *Store) Messages(ctx context.Context, conversationID string, req agentik.MessagesRequest) ([]agentik.Message, bool, error) {
	op := "messages " + conversationID
	if req.After < 0 || req.Before < 0 || req.Offset < 0 {
		return nil, false, agentik.Errorf(agentik.EInvalid, "messages: negative after, before or offset")
	}
	if b := req.Branch; b != "" && b != agentik.BranchHead && b != agentik.BranchAll {
		return nil, false, agentik.Errorf(agentik.EInvalid, "branch must be %q or %q", agentik.BranchHead, agentik.BranchAll)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = agentik.DefaultMessagesLimit
	}
	limit = min(limit, agentik.MaxMessagesLimit)
	c, err := s.lockConv(ctx, op, conversationID)
	if err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	window := c.window(req)
	var page []agentik.Message
	var more bool
	if req.Before > 0 {
		end := max(len(window)-req.Offset, 0)
		start := max(end-limit, 0)
		page, more = window[start:end], start > 0
	} else {
		start := min(req.Offset, len(window))
		end := min(start+limit, len(window))
		page, more = window[start:end], end < len(window)
	}
	out := make([]agentik.Message, len(page))
	for i, m := range page {
		out[i] = cloneMessage(m)
		if k := c.kids[m.Parent]; len(k) > 1 {
			out[i].Siblings = slices.Clone(k)
		}
	}
	return out, more, nil
}

// place puts ev in the tree: a head_moved event moves the head (and,
// unless detached, what follows it); a message gets the next seq and tip
// as its parent, and becomes the head unless detached. It returns the tip
// for the next message; the mutex is held.
func (c *conversation) place(ev *agentik.Event, tip int64, detached bool) int64 {
	if ev.Type == agentik.EvHeadMoved {
		ev.From, c.rec.Head = c.rec.Head, ev.To
		if !detached {
			tip = ev.To
		}
	}
	m := ev.Message
	if m == nil {
		return tip
	}
	m.ConversationID = ev.ConversationID
	m.Seq = int64(len(c.msgs)) + 1
	m.Parent = tip
	if !detached {
		c.rec.Head = m.Seq
	}
	if c.kids == nil {
		c.kids = map[int64][]int64{}
	}
	c.kids[m.Parent] = append(c.kids[m.Parent], m.Seq)
	return m.Seq
}

// window is the part of the journal (all of it, or the head path) between
// req.After and req.Before, ascending.
func (c *conversation) window(req agentik.MessagesRequest) []agentik.Message {
	if req.Branch != agentik.BranchAll {
		var path []agentik.Message
		for _, m := range c.path(c.rec.Head, req.After+1) {
			if req.Before <= 0 || m.Seq < req.Before {
				path = append(path, m)
			}
		}
		return path
	}
	// msgs[i] has seq i+1: the window (After, Before) is msgs[lo:hi].
	n := int64(len(c.msgs))
	lo := min(req.After, n)
	hi := n
	if req.Before > 0 {
		hi = max(min(req.Before-1, n), lo)
	}
	return c.msgs[lo:hi]
}

// path is the path from the root to seq to, without the messages below
// from, ascending; the mutex is held.
func (c *conversation) path(to, from int64) []agentik.Message {
	var path []agentik.Message
	for seq := to; seq >= max(from, 1) && seq <= int64(len(c.msgs)); seq = c.msgs[seq-1].Parent {
		path = append(path, c.msgs[seq-1])
	}
	slices.Reverse(path)
	return path
}

// checkTree refuses a write whose head move, parent or reopened turn names
// nothing of the conversation; the mutex is held.
func (c *conversation) checkTree(w *agentik.Write) error {
	next := int64(len(c.msgs)) + 1
	if w.Detached && w.Parent >= next {
		return agentik.Errorf(agentik.ENotFound, "parent %d is no message of this conversation", w.Parent)
	}
	for _, ev := range w.Events {
		if ev.Type == agentik.EvHeadMoved && (ev.To < 0 || ev.To >= next) {
			return agentik.Errorf(agentik.ENotFound, "seq %d is no message of this conversation", ev.To)
		}
		if ev.Message != nil {
			next++
		}
	}
	return nil
}

// Path returns the path from the root to seq to (to < 0: the head),
// without the messages below from.
func (s *Store) Path(ctx context.Context, conversationID string, to, from int64) ([]agentik.Message, error) {
	c, err := s.lockConv(ctx, "path "+conversationID, conversationID)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if to < 0 {
		to = c.rec.Head
	}
	path := c.path(to, from)
	out := make([]agentik.Message, len(path))
	for i, m := range path {
		out[i] = cloneMessage(m)
	}
	return out, nil
}

// Message returns one journal message of the conversation.
func (s *Store) Message(ctx context.Context, conversationID, id string) (agentik.Message, error) {
	op := "message " + id
	c, err := s.lockConv(ctx, op, conversationID)
	if err != nil {
		return agentik.Message{}, err
	}
	defer s.mu.Unlock()
	if ref, ok := s.msgs[id]; ok && ref.conv == conversationID {
		return cloneMessage(c.msgs[ref.seq-1]), nil
	}
	return agentik.Message{}, fmt.Errorf("%s: %w", op, agentik.Errorf(agentik.ENotFound, "message %s not found", id))
}

// Events returns up to limit events after the cursor, ascending; limit <= 0
// returns all of them.
func (s *Store) Events(ctx context.Context, conversationID string, after int64, limit int) ([]agentik.Event, error) {
	op := "events " + conversationID
	c, err := s.lockConv(ctx, op, conversationID)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(c.events, after+1, func(e agentik.Event, cursor int64) int {
		switch {
		case e.Cursor < cursor:
			return -1
		case e.Cursor > cursor:
			return 1
		}
		return 0
	})
	evs := c.events[i:]
	if limit > 0 && len(evs) > limit {
		evs = evs[:limit]
	}
	out := make([]agentik.Event, len(evs))
	for i, ev := range evs {
		out[i] = clone(ev)
	}
	return out, nil
}

// EventsJSON is Events, each event shared (agentik.EventJSONReader): its
// JSON is made when asked for.
func (s *Store) EventsJSON(ctx context.Context, conversationID string, after int64, limit int) ([]*agentik.Shared[agentik.Event], error) {
	evs, err := s.Events(ctx, conversationID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*agentik.Shared[agentik.Event], len(evs))
	for i, ev := range evs {
		out[i] = agentik.NewShared(ev.Cursor, ev.Type, ev)
	}
	return out, nil
}

// LastCursor is the greatest cursor of the conversation's events.
func (s *Store) LastCursor(ctx context.Context, conversationID string) (int64, error) {
	op := "last cursor " + conversationID
	c, err := s.lockConv(ctx, op, conversationID)
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if len(c.events) == 0 {
		return 0, nil
	}
	return c.events[len(c.events)-1].Cursor, nil
}

// AgentEvents returns up to limit agent events after the cursor, ascending;
// limit <= 0 returns all of them.
func (s *Store) AgentEvents(ctx context.Context, after int64, limit int) ([]agentik.AgentEvent, error) {
	if err := s.lock(ctx, "agent events"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []agentik.AgentEvent{}
	for _, ev := range s.agentEvs {
		if ev.Cursor <= after {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, cloneAgentEvent(ev))
	}
	return out, nil
}

// LastAgentCursor is the greatest agent-event cursor of this store (0 when none).
func (s *Store) LastAgentCursor(ctx context.Context) (int64, error) {
	if err := s.lock(ctx, "last agent cursor"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if len(s.agentEvs) == 0 {
		return 0, nil
	}
	return s.agentEvs[len(s.agentEvs)-1].Cursor, nil
}

// Stats counts what the store holds. It has no database: DatabaseBytes
// is 0.
func (s *Store) Stats(ctx context.Context) (agentik.StoreStats, error) {
	if err := s.lock(ctx, "stats"); err != nil {
		return agentik.StoreStats{}, err
	}
	defer s.mu.Unlock()
	st := agentik.StoreStats{Conversations: int64(len(s.convs)), AgentEvents: int64(len(s.agentEvs))}
	for _, c := range s.convs {
		st.Messages += int64(len(c.msgs))
		st.Events += int64(len(c.events))
	}
	return st, nil
}

// Memory returns the working memory in order.
func (s *Store) Memory(ctx context.Context, conversationID string) ([]agentik.MemoryEntry, error) {
	op := "memory " + conversationID
	c, err := s.lockConv(ctx, op, conversationID)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]agentik.MemoryEntry, len(c.memory))
	for i, e := range c.memory {
		out[i] = clone(e)
	}
	return out, nil
}

// OpenTurns returns the user messages whose turn is not closed, ordered by
// conversation id then seq.
func (s *Store) OpenTurns(ctx context.Context) ([]agentik.Message, error) {
	if err := s.lock(ctx, "open turns"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.convs))
	for id, c := range s.convs {
		if len(c.open) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := []agentik.Message{}
	for _, id := range ids {
		c := s.convs[id]
		for _, m := range c.msgs {
			if c.open[m.ID] {
				out = append(out, cloneMessage(m))
			}
		}
	}
	return out, nil
}

// State returns the value of a conversation's state key (nil when unset).
func (s *Store) State(ctx context.Context, conversationID, key string) (agentik.RawJSON, error) {
	if err := s.lock(ctx, "state"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if c := s.convs[conversationID]; c != nil && c.state[key] != nil {
		return slices.Clone(c.state[key]), nil
	}
	return nil, nil
}

// OpenTurnsOf returns the open turns of one conversation in seq order.
func (s *Store) OpenTurnsOf(ctx context.Context, conversationID string) ([]agentik.Message, error) {
	if err := s.lock(ctx, "open turns"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []agentik.Message{}
	c := s.convs[conversationID]
	if c == nil {
		return out, nil
	}
	for _, m := range c.msgs {
		if c.open[m.ID] {
			out = append(out, cloneMessage(m))
		}
	}
	return out, nil
}

// Ping reports EUnavailable once the store is closed.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.lock(ctx, "ping"); err != nil {
		return err
	}
	s.mu.Unlock()
	return nil
}

// Close drops everything the store holds. It is idempotent; later calls of
// other methods fail with EUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.convs, s.msgs, s.agentEvs = nil, nil, nil
	return nil
}

// answered reports whether the conversation has an approval_resolved event
// for the call. Caller holds s.mu.
func (c *conversation) answered(callID string) bool {
	for _, ev := range c.events {
		if ev.Type == agentik.EvApprovalResolved && ev.CallID == callID {
			return true
		}
	}
	return false
}

// ApprovalEvents returns the conversation's approval events after the
// cursor, ascending.
func (s *Store) ApprovalEvents(ctx context.Context, conversationID string, after int64) ([]agentik.Event, error) {
	op := "approval events " + conversationID
	if err := s.lock(ctx, op); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	c, ok := s.convs[conversationID]
	if !ok {
		return []agentik.Event{}, nil
	}
	out := []agentik.Event{}
	for _, ev := range c.events {
		if ev.Cursor > after && (ev.Type == agentik.EvApprovalRequested || ev.Type == agentik.EvApprovalResolved) {
			out = append(out, clone(ev))
		}
	}
	return out, nil
}

// FindKeys looks keys up (agentik.Store); a key of a deleted conversation
// is not found.
func (s *Store) FindKeys(ctx context.Context, owner string, keys []string) (map[string]agentik.KeyRef, error) {
	if err := s.lock(ctx, "find keys"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[string]agentik.KeyRef{}
	for _, k := range keys {
		if ref, ok := s.keys[ownerKey{owner, k}]; ok && s.convs[ref.ConversationID] != nil {
			out[k] = ref
		}
	}
	return out, nil
}
