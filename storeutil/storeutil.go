// Package storeutil holds the driver-free parts that the SQLite and
// PostgreSQL stores share: the migration loader, conversation-list and
// journal paging, the stored form of images, and decoding of stored rows.
// SQL and drivers stay in their adapters; nothing here opens a database.
package storeutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/jsonw"
)

// ErrSchemaTooNew is returned when opening a database written by a newer
// version of the program: running old code on it could corrupt it.
var ErrSchemaTooNew = errors.New("database schema is newer than this program knows; upgrade agentik")

// Migration is one schema change, NNNN_description.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the *.sql files of dir in fsys in version order. File
// names are NNNN_description.sql; versions must be 1, 2, 3… without gaps.
// Migrations are append-only: a released file is never edited, a schema
// change is a new file with the next number.
func Migrations(fsys fs.FS, dir string) ([]Migration, error) {
	paths, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, p := range paths {
		name := path.Base(p)
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", name)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the number of migrations in dir of fsys: the schema
// version a store with them creates and understands (0 when they cannot be
// read).
func SchemaVersion(fsys fs.FS, dir string) int {
	ms, err := Migrations(fsys, dir)
	if err != nil {
		return 0
	}
	return len(ms)
}

// TooNew is the error for a database at schema version current when the
// program knows up to known.
func TooNew(current, known int) error {
	return fmt.Errorf("schema version %d, this program knows up to %d: %w", current, known, ErrSchemaTooNew)
}

// Conversation list page sizes: the Store interface leaves limit to the
// caller, the stores keep one page bounded.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// ListLimit is the page size of a ListConversations call: limit <= 0
// means DefaultListLimit, and it is capped at MaxListLimit. A store reads
// one row more to know whether a next page exists.
func ListLimit(limit int) int {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	return min(limit, MaxListLimit)
}

// ListPage cuts a list read with one row more than limit to the page, and
// returns the token of the next page ("" when there is none).
func ListPage(list []agentik.ConversationRecord, limit int) ([]agentik.ConversationRecord, string) {
	if len(list) <= limit {
		return list, ""
	}
	list = list[:limit]
	last := list[limit-1]
	return list, agentik.ListToken(last.UpdatedAt, last.ID)
}

// MessagesLimit checks a journal page request and returns its page size
// (the store reads one row more to know whether the page has more).
func MessagesLimit(req agentik.MessagesRequest) (int, error) {
	if req.After < 0 || req.Before < 0 || req.Offset < 0 {
		return 0, agentik.Errorf(agentik.EInvalid, "messages: negative after, before or offset")
	}
	if err := CheckBranch(req.Branch); err != nil {
		return 0, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = agentik.DefaultMessagesLimit
	}
	return min(limit, agentik.MaxMessagesLimit), nil
}

// MessagesPage cuts a journal page read with one row more than limit (in
// the paging direction: descending when req.Before is set) and returns it
// ascending, with whether more entries lie beyond it.
func MessagesPage(msgs []agentik.Message, limit int, req agentik.MessagesRequest) ([]agentik.Message, bool) {
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	if req.Before > 0 {
		slices.Reverse(msgs)
	}
	return msgs, more
}

// ConversationInfo is the snapshot a created agent event carries. Working
// and the image capabilities belong to the engine, not the store.
func ConversationInfo(c agentik.ConversationRecord) *agentik.ConversationInfo {
	info := &agentik.ConversationInfo{
		ID:         c.ID,
		Title:      c.Title,
		Temporal:   c.Temporal,
		CreatedAt:  c.CreatedAt,
		UpdatedAt:  c.UpdatedAt,
		Head:       c.Head,
		ForkedFrom: c.ForkedFrom,
		Owner:      c.Owner,
	}
	if c.Tokens != (agentik.TurnTokens{}) {
		t := c.Tokens
		info.Tokens = &t
	}
	return info
}

// Closes returns the user message whose turn ev closes (SPEC §2), or "". An
// interrupted assistant message alone does not close it: the turn stays
// open until its interrupted event.
func Closes(ev *agentik.Event) string {
	switch {
	case ev.Message != nil && ev.Message.ClosesTurn():
		return ev.Message.ReplyTo
	case ev.Type == agentik.EvInterrupted:
		return ev.ReplyTo
	}
	return ""
}

// AgentPayload is an agent event's stored JSON: without the cursor and the
// owner, which the stores keep in columns.
func AgentPayload(ev *agentik.AgentEvent) (string, error) {
	e := *ev
	e.Cursor = 0
	payload, err := agentik.MarshalAgentEvent(&e)
	if err != nil {
		return "", agentik.WrapError(agentik.EInternal, "encode agent event", err)
	}
	return string(payload), nil
}

// storedMessage is a journal message as stored: its wire form and what the
// wire does not carry.
type storedMessage struct {
	*agentik.Message
	ClientTools []agentik.ToolSpec   `json:"client_tools,omitempty"`
	TraceParent string               `json:"traceparent,omitempty"`
	Params      *agentik.ModelParams `json:"model_params,omitempty"`
}

// EncodeMessage renders a journal message as stored.
func EncodeMessage(m *agentik.Message) ([]byte, error) {
	if len(m.ClientTools) == 0 && m.Params == nil {
		// The wire form, with the trace parent (the last field) added.
		b, err := agentik.MarshalMessage(m)
		if err != nil {
			return nil, agentik.WrapError(agentik.EInternal, "encode message", err)
		}
		if m.TraceParent != "" {
			b = append(b[:len(b)-1], `,"traceparent":`...)
			b = jsonw.AppendString(b, m.TraceParent, true)
			b = append(b, '}')
		}
		return b, nil
	}
	b, err := json.Marshal(storedMessage{Message: m, ClientTools: m.ClientTools, TraceParent: m.TraceParent, Params: m.Params})
	if err != nil {
		return nil, agentik.WrapError(agentik.EInternal, "encode message", err)
	}
	return b, nil
}

// DecodeMessage decodes a stored journal message.
func DecodeMessage(payload []byte) (agentik.Message, error) {
	var m agentik.Message
	s := storedMessage{Message: &m}
	if err := json.Unmarshal(payload, &s); err != nil {
		return m, agentik.WrapError(agentik.EInternal, "decode message", err)
	}
	m.ClientTools = s.ClientTools
	m.TraceParent = s.TraceParent
	m.Params = s.Params
	return m, nil
}

// DecodeEvent decodes a stored durable event with its cursor; refs is its
// images column ("" when its content is all inline), which only an event
// carrying a message can have.
func DecodeEvent(cursor int64, payload []byte, refs string) (agentik.Event, error) {
	var ev agentik.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return ev, agentik.WrapError(agentik.EInternal, "decode event", err)
	}
	ev.Cursor = cursor
	if refs != "" && ev.Message == nil {
		return ev, agentik.Errorf(agentik.EInternal, "decode event %d: images without a message", cursor)
	}
	return ev, nil
}

// WireEvent returns the wire JSON of a stored durable event whose content
// is all inline (no images column): json.Marshal of the event with its
// cursor. Commit stores json.Marshal of the event without its cursor, its
// first field, so the wire form is the payload with the cursor put first —
// no decoding, no encoding. It returns nil for a payload not in that form;
// decode that one (DecodeEvent) instead.
func WireEvent[P []byte | string](cursor int64, payload P) []byte {
	const prefix = `{"cursor":`
	if len(payload) < 2 || payload[0] != '{' || (len(payload) >= len(prefix) && string(payload[:len(prefix)]) == prefix) || cursor <= 0 {
		return nil
	}
	b := make([]byte, 0, len(payload)+24)
	b = append(b, `{"cursor":`...)
	b = strconv.AppendInt(b, cursor, 10)
	if payload[1] != '}' {
		b = append(b, ',')
	}
	return append(b, payload[1:]...)
}

// EventRows collects the events of a replay as they are read: each row
// without images passed through as stored, the others decoded, for their
// images to be restored (Decoded, Pending) before Events is called.
type EventRows struct {
	out     []*agentik.Shared[agentik.Event]
	decoded []agentik.Event
	at      []int // out index of decoded[i]
	pending []Pending
}

// Add takes one row: cursor, type, payload and images column.
func (r *EventRows) Add(cursor int64, typ string, payload []byte, refs string) error {
	return addRow(r, cursor, typ, payload, refs)
}

// AddString is Add for a payload read as a string (which a driver that
// reads text as a string hands over without a copy).
func (r *EventRows) AddString(cursor int64, typ string, payload string, refs string) error {
	return addRow(r, cursor, typ, payload, refs)
}

func addRow[P []byte | string](r *EventRows, cursor int64, typ string, payload P, refs string) error {
	if refs == "" {
		if b := WireEvent(cursor, payload); b != nil {
			r.out = append(r.out, agentik.SharedJSON[agentik.Event](cursor, typ, b))
			return nil
		}
	}
	return r.decode(cursor, []byte(payload), refs)
}

func (r *EventRows) decode(cursor int64, payload []byte, refs string) error {
	ev, err := DecodeEvent(cursor, payload, refs)
	if err != nil {
		return err
	}
	if refs != "" {
		r.pending = append(r.pending, Pending{I: len(r.decoded), Refs: refs})
	}
	r.decoded = append(r.decoded, ev)
	r.at = append(r.at, len(r.out))
	r.out = append(r.out, nil)
	return nil
}

// Len is the number of rows taken.
func (r *EventRows) Len() int { return len(r.out) }

// Pending are the decoded rows whose images are to be restored, indexing
// Content.
func (r *EventRows) Pending() []Pending { return r.pending }

// Content is the content of decoded row i, for restoring its images.
func (r *EventRows) Content(i int) []agentik.Content { return r.decoded[i].Message.Content }

// Events returns the rows to share, in the order they were added.
func (r *EventRows) Events() []*agentik.Shared[agentik.Event] {
	for i, ev := range r.decoded {
		r.out[r.at[i]] = agentik.NewShared(ev.Cursor, ev.Type, ev)
	}
	if r.out == nil {
		return []*agentik.Shared[agentik.Event]{}
	}
	return r.out
}

// DecodeAgentEvent decodes a stored agent event with its cursor and owner.
func DecodeAgentEvent(cursor int64, owner string, payload []byte) (agentik.AgentEvent, error) {
	var ev agentik.AgentEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return ev, agentik.WrapError(agentik.EInternal, "decode agent event", err)
	}
	ev.Cursor = cursor
	ev.Owner = owner
	if ev.Conversation != nil {
		ev.Conversation.Owner = owner
	}
	return ev, nil
}

// DecodeMemory decodes a stored working-memory entry with its order.
func DecodeMemory(order int64, payload []byte) (agentik.MemoryEntry, error) {
	var e agentik.MemoryEntry
	if err := json.Unmarshal(payload, &e); err != nil {
		return e, agentik.WrapError(agentik.EInternal, "decode memory entry", err)
	}
	e.Order = order
	return e, nil
}

// ForkedFromID and ForkedFromSeq are the columns of a ForkedFrom ("" and 0
// for nil); Forked reads them back.
func ForkedFromID(f *agentik.ForkedFrom) string {
	if f == nil {
		return ""
	}
	return f.ConversationID
}

func ForkedFromSeq(f *agentik.ForkedFrom) int64 {
	if f == nil {
		return 0
	}
	return f.Seq
}

func Forked(id string, seq int64) *agentik.ForkedFrom {
	if id == "" {
		return nil
	}
	return &agentik.ForkedFrom{ConversationID: id, Seq: seq}
}
