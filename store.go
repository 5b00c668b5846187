package agentik

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ConversationRecord is a stored conversation.
type ConversationRecord struct {
	ID        string
	Owner     string
	Title     string
	Temporal  bool
	CreatedAt Time
	UpdatedAt Time
	Tokens    TurnTokens // running totals
	// Head is the seq of the last message of the active path (0: none):
	// set by the store (Commit), never by CreateConversation's caller.
	Head int64
	// ForkedFrom names the conversation and seq this one was forked
	// from (SPEC §18); nil for one that was not.
	ForkedFrom *ForkedFrom
}

// ForkedFrom is where a forked conversation came from.
type ForkedFrom struct {
	ConversationID string `json:"conversation_id"`
	Seq            int64  `json:"seq"`
}

// Memory roles. Working memory is what the model sees, in turn order.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSummary   = "summary" // a compaction summary; sent to the model as context text
)

// MemoryEntry is one entry of a conversation's working memory. Order is
// assigned by the store (increasing per conversation). SourceID is the journal
// message the entry was made from ("" for summaries); ReplyTo the user message
// whose turn produced it.
type MemoryEntry struct {
	Order    int64        `json:"order,omitempty"`
	SourceID string       `json:"source_id,omitempty"`
	ReplyTo  string       `json:"reply_to,omitempty"`
	Message  ModelMessage `json:"message"`
}

// Write is one atomic change to a conversation: journal messages with their
// durable events, working-memory changes and the conversation's updated_at.
// A Store commits all of it in one transaction or none of it.
type Write struct {
	ConversationID string
	// Events are durable events to append, in order. An event whose Message is
	// non-nil also appends that message to the journal: the store assigns its
	// Seq (writing it into the Message) before storing the event.
	Events []Event
	// Memory entries are appended to working memory, in order.
	Memory []MemoryEntry
	// DropMemoryThrough removes working-memory entries with Order <= it
	// (compaction). Zero removes nothing. Applied before Memory is appended.
	DropMemoryThrough int64
	// Touch, when non-zero, sets updated_at and appends a touched agent event.
	Touch Time
	// Tokens are added to the conversation's running totals.
	Tokens TurnTokens
	// Fence, when non-zero, makes the write conditional on the turn lease
	// it was made under: a store shared by several processes (PostgreSQL)
	// commits it only while Fence is still the conversation's current lease
	// epoch, and otherwise returns ErrFenced and changes nothing, so a
	// process that lost the lease without noticing can never add to a turn
	// that another process now runs. Stores used by one process ignore it.
	Fence int64
	// State sets records kept with the conversation by key, and deleted
	// with it (ConversationState); a nil value removes the key.
	State map[string]RawJSON

	// The message tree (SPEC §18). A journal message of the write follows
	// the head: its Parent is the head when it is stored, and the head
	// moves to it. A head_moved event of the write (To: an existing seq,
	// or 0) moves the head to To first; the store fills its From. Detached
	// instead puts the write's first message after Parent (0: the root),
	// the next ones each after the one before, and leaves the head where
	// it is (an edit stored before its turn starts).
	Detached bool
	Parent   int64
	// Reopen, when set, is the id of a user message of the conversation
	// whose turn is opened again (a regenerate): OpenTurns lists it until
	// a later event closes it. An id that is no user message of the
	// conversation changes nothing (the caller checks it).
	Reopen string
	// ReplaceMemory removes the whole working memory before Memory is
	// appended (a head move rebuilds it for the new path).
	ReplaceMemory bool
	// Keys are lookup keys of the write's first journal message: FindKeys
	// finds the conversation and that message's seq by them, for the
	// conversation's owner and agent, until the conversation is deleted.
	// A key recorded again points to the newest.
	Keys []string
}

// KeyRef is where a lookup key (Write.Keys) points: a conversation and the
// seq of the message it was recorded with.
type KeyRef struct {
	ConversationID string
	Seq            int64
}

// MaxLookupKey bounds the bytes of a lookup key (Write.Keys).
const MaxLookupKey = 128

// Bounds of conversation state (Write.State).
const (
	MaxStateKey   = 256     // bytes of a key
	MaxStateValue = 1 << 16 // bytes of a value
)

// ErrFenced is returned (wrapped) by Commit for a Write whose Fence is no
// longer the conversation's lease epoch: another process took the lease.
var ErrFenced = Errorf(EConflict, "the turn lease was taken over by another process")

// Store keeps conversations, journals, working memory, durable events and
// agent events. Implementations are safe for concurrent use. Cursors come
// from the store: unique across the store, never reused, also after
// deletes and restarts, and strictly increasing in commit order within a
// conversation (a commit that begins after another returned gets greater
// cursors; concurrent commits to different conversations may commit in
// another order than their cursors). Agent-event cursors increase in the
// order AgentEvents returns them, and a reader that follows them by cursor
// never skips one. A store may return agent events from its writes with
// Cursor 0 when it numbers them after commit (PostgreSQL, with a Bus that
// delivers them once numbered: see docs/postgres.md); they are then
// readable through AgentEvents, with their cursor, once committed. Errors: ENotFound for unknown conversations,
// EUnavailable when the database cannot be reached or written; nothing is
// changed when an error is returned. Close is idempotent.
type Store interface {
	// CreateConversation stores c and its created agent event in one
	// transaction, returning the event with its cursor.
	CreateConversation(ctx context.Context, c ConversationRecord) (AgentEvent, error)
	GetConversation(ctx context.Context, id string) (ConversationRecord, error)
	// ListConversations returns the owner's conversations, newest updated_at
	// first (ties by id, descending), at most limit, strictly after the page
	// token before ("" = from the top), and the token of the next page ("" when
	// there is none). Tokens come from ListToken.
	ListConversations(ctx context.Context, owner string, limit int, before string) ([]ConversationRecord, string, error)
	RenameConversation(ctx context.Context, id, title string, at Time) (ConversationRecord, AgentEvent, error)
	// DeleteConversation removes the conversation and everything it owns and
	// appends a deleted agent event.
	DeleteConversation(ctx context.Context, id string, at Time) (AgentEvent, error)

	// Commit applies w atomically and returns its events with cursors set
	// (and the touched agent event, if any).
	Commit(ctx context.Context, w Write) ([]Event, *AgentEvent, error)

	Messages(ctx context.Context, conversationID string, req MessagesRequest) ([]Message, bool, error)
	// Message returns one journal message by id.
	Message(ctx context.Context, conversationID, id string) (Message, error)
	// Events returns up to limit durable events of the conversation with a
	// cursor greater than after, ascending.
	Events(ctx context.Context, conversationID string, after int64, limit int) ([]Event, error)
	// LastCursor is the greatest cursor of the conversation's events (0 when none).
	LastCursor(ctx context.Context, conversationID string) (int64, error)
	AgentEvents(ctx context.Context, after int64, limit int) ([]AgentEvent, error)
	LastAgentCursor(ctx context.Context) (int64, error)

	// Memory returns the working memory in order.
	Memory(ctx context.Context, conversationID string) ([]MemoryEntry, error)

	// Path returns the messages on the path from the root to seq to (to <
	// 0: the head) in seq order, leaving out those with a seq below from:
	// a walk up the parent links that stops there, so its cost is the
	// length of what it returns. An unknown conversation is ENotFound; a to
	// of no message gives none. Messages reads the head path the same way
	// (MessagesRequest.Branch).
	Path(ctx context.Context, conversationID string, to, from int64) ([]Message, error)

	// OpenTurns returns the user messages whose turn is not closed — no
	// assistant_message (not interrupted), error, or interrupted event replies
	// to them — ordered by conversation then seq.
	OpenTurns(ctx context.Context) ([]Message, error)
	// OpenTurnsOf returns the open turns of one conversation in seq order
	// (none for an unknown conversation): the queue of its turns.
	OpenTurnsOf(ctx context.Context, conversationID string) ([]Message, error)

	// State returns the value of a conversation's state key (nil when it is
	// not set, or the conversation unknown).
	State(ctx context.Context, conversationID, key string) (RawJSON, error)

	// ApprovalEvents returns the conversation's approval_requested and
	// approval_resolved events with a cursor greater than after, ascending
	// (none for an unknown conversation). A second approval_resolved event
	// for the same call id is refused by Commit (EConflict, nothing
	// changed): a call is answered once, whichever process answers.
	ApprovalEvents(ctx context.Context, conversationID string, after int64) ([]Event, error)

	// FindKeys returns which of keys owner recorded (Write.Keys) in
	// conversations of the store's agent, and where each points; keys not
	// found are absent from the map.
	FindKeys(ctx context.Context, owner string, keys []string) (map[string]KeyRef, error)

	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	Close() error

	// Every store has these parts, so a wrapper that embeds Store (the
	// metrics' timed store) forwards them and can never hide them.
	EventJSONReader
	StatsReader
}

// ListToken encodes a conversation-list position.
func ListToken(updatedAt Time, id string) string {
	s := strconv.FormatInt(updatedAt.UnixMilli(), 10) + "/" + id
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// ParseListToken decodes a ListToken; errors have code EInvalid.
func ParseListToken(tok string) (Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return Time{}, "", Errorf(EInvalid, "bad page token")
	}
	ms, id, ok := strings.Cut(string(b), "/")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !ValidID(id) {
		return Time{}, "", Errorf(EInvalid, "bad page token")
	}
	return TimeOf(time.UnixMilli(n)), id, nil
}

// Bus fans events out to live subscribers inside one process or across the
// processes sharing a store. Durable events are published after their commit,
// in cursor order per conversation; the store stays the source of truth, so a
// subscriber that misses a durable event (cut off, or a lost cross-process
// notification) recovers it from the store by cursor. Online events may be
// dropped for a slow subscriber, which is then told (EvDeltasLost). Publish
// never blocks on a subscriber. All methods are safe for concurrent use.
type Bus interface {
	Publish(ev Event)
	PublishAgent(ev AgentEvent)
	// Subscribe registers a subscriber of one conversation's events. Delivery
	// starts with events published after Subscribe returns.
	Subscribe(conversationID string) Subscriber[Event]
	SubscribeAgent() Subscriber[AgentEvent]
}

// Subscriber receives from a Bus, in publication order. A reader takes
// events either with Next, waking on Ready, or from C, never both: Next
// costs no goroutine; C is fed by one, started on its first call. Close is
// idempotent and safe concurrently with reading.
type Subscriber[T any] interface {
	// Next takes the next event without waiting: nil when none waits.
	// closed reports that the subscriber was cut off (it fell behind on
	// durable events: what it had not taken yet is dropped) or closed, so
	// nothing more will come. The events are shared with the other
	// subscribers: see Shared. Where online events were dropped because
	// the subscriber had no room for them, Next returns one event of type
	// EvDeltasLost (Cursor 0) in their place, before anything published
	// after them: its reader recovers the text it lost from the stored
	// message (engine streams do, and hand their readers the text whole).
	Next() (ev *Shared[T], closed bool)
	// Ready receives, coalesced, whenever Next may have something new or
	// the subscriber was cut off.
	Ready() <-chan struct{}
	// C delivers the same events as values; it is closed when the
	// subscriber is cut off or closed.
	C() <-chan T
	Close()
}

// Validate refuses a Write no journal can take: events that are not durable,
// journal events without their message (or the reverse), messages without an
// id, of an unknown type or of another conversation. Errors are EInvalid.
// Every Store calls it first, so the rules are the same everywhere.
func (w Write) Validate() error {
	if w.ConversationID == "" {
		return Errorf(EInvalid, "commit: no conversation id")
	}
	if w.DropMemoryThrough < 0 {
		return Errorf(EInvalid, "commit: negative memory order")
	}
	if w.Fence < 0 {
		return Errorf(EInvalid, "commit: negative fence")
	}
	if w.Parent < 0 || (w.Parent != 0 && !w.Detached) {
		return Errorf(EInvalid, "commit: a parent needs a detached write")
	}
	if err := w.validateRecords(); err != nil {
		return err
	}
	for _, ev := range w.Events {
		if !Durable(ev.Type) {
			return Errorf(EInvalid, "commit: event type %q is not durable", ev.Type)
		}
		if ev.ConversationID != "" && ev.ConversationID != w.ConversationID {
			return Errorf(EInvalid, "commit: event of conversation %s in a write to %s", ev.ConversationID, w.ConversationID)
		}
		carries := carriesMessage(ev.Type)
		switch {
		case carries && ev.Message == nil:
			return Errorf(EInvalid, "commit: %s event without its message", ev.Type)
		case !carries && ev.Message != nil:
			return Errorf(EInvalid, "commit: %s event cannot carry a message", ev.Type)
		case ev.Message == nil:
			continue
		}
		m := ev.Message
		if m.ID == "" {
			return Errorf(EInvalid, "commit: message without id")
		}
		if m.Parent < 0 {
			return Errorf(EInvalid, "commit: negative parent")
		}
		if m.ConversationID != "" && m.ConversationID != w.ConversationID {
			return Errorf(EInvalid, "commit: message of conversation %s in a write to %s", m.ConversationID, w.ConversationID)
		}
		switch m.Type {
		case MsgUser, MsgAssistant, MsgToolCall, MsgToolResult, MsgError:
		default:
			return Errorf(EInvalid, "commit: unknown message type %q", m.Type)
		}
	}
	return nil
}

// validateRecords checks the lookup keys and state records of w.
func (w Write) validateRecords() error {
	for _, k := range w.Keys {
		if k == "" || len(k) > MaxLookupKey || !utf8.ValidString(k) {
			return Errorf(EInvalid, "commit: a lookup key must be 1 to %d bytes of UTF-8", MaxLookupKey)
		}
	}
	for k, v := range w.State {
		switch {
		case k == "" || len(k) > MaxStateKey || !utf8.ValidString(k):
			return Errorf(EInvalid, "commit: a state key must be 1 to %d bytes of UTF-8", MaxStateKey)
		case len(v) > MaxStateValue:
			return Errorf(ETooLarge, "commit: state %q is larger than %d bytes", k, MaxStateValue)
		case v != nil && !json.Valid(v):
			return Errorf(EInvalid, "commit: state %q is not JSON", k)
		}
	}
	return nil
}

// carriesMessage reports whether events of type t announce a journal message.
func carriesMessage(t string) bool {
	switch t {
	case EvUserMessage, EvAssistantMessage, EvToolCall,
		EvToolResult, EvToolFailed, EvError:
		return true
	}
	return false
}
