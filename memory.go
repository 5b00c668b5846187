package agentik

import (
	"context"
	"unicode/utf8"
)

// Memory blocks (SPEC §19): named text blocks an agent keeps per principal
// (or one set for the whole agent), rendered into the system context of
// every model call and edited by the agent through its memory tools and by
// people through the native API.

// Memory scopes: whose blocks a conversation sees.
const (
	MemoryScopePrincipal = "principal" // each principal has blocks of their own (the default)
	MemoryScopeAgent     = "agent"     // one set of blocks shared by every principal of the agent
)

// DefaultMemoryLimit is a block's limit, in characters, when it names none.
const DefaultMemoryLimit = 5000

// MaxMemoryLimit bounds the limit a block may have: every block is sent
// with every model call.
const MaxMemoryLimit = 100_000

// MemoryBlock is one block: Label names it (a short identifier, unique
// within the set), Value is its text, at most Limit characters (runes).
type MemoryBlock struct {
	Label       string `json:"label"`
	Value       string `json:"value"`
	Description string `json:"description,omitempty"`
	Limit       int    `json:"limit"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	// UpdatedAt and UpdatedBy tell the last change ("" and zero while the
	// block still has the value the configuration gives it).
	UpdatedAt Time   `json:"updated_at,omitzero"`
	UpdatedBy string `json:"updated_by,omitempty"`
}

// ValidMemoryLabel reports whether s can label a block: 1 to 64 ASCII
// letters, digits, '_' and '-', starting with a letter — safe in a URL
// path segment and in the rendered context's attribute.
func ValidMemoryLabel(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case (c >= '0' && c <= '9' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// MemoryChars is the length of a value as a block's limit counts it.
func MemoryChars(s string) int { return utf8.RuneCountInString(s) }

// AgentEvMemoryUpdated is the agent event of a change of a memory block:
// Label, By and, when the agent made it in a turn, ConversationID.
const AgentEvMemoryUpdated = "memory_updated"

// MemoryByAgent is the By of a change the agent made with its tools.
const MemoryByAgent = "agent"

// MemoryChange is one change of a block, written by MemoryStore.ChangeMemory
// with its history entry and its memory_updated agent event in one
// transaction.
type MemoryChange struct {
	// Owner is whose set the block belongs to: a principal, or "" for an
	// agent whose memory scope is agent.
	Owner string
	Label string
	// Seed is the block's value while none is stored (the configuration's);
	// Old is the value the change was made from: the change fails with
	// EConflict when the current value is another (a concurrent change),
	// and the caller reads again.
	Seed, Old string
	// New is the value to store; with Reset the stored value is removed
	// instead, and the block has its Seed again.
	New   string
	Reset bool
	// By is the principal who made the change, or MemoryByAgent;
	// ConversationID the conversation whose turn made it ("" for a person).
	By             string
	ConversationID string
	// Principal is who the agent event is delivered to: the principal who
	// made the change, or the owner of the conversation whose turn did.
	Principal string
	Date      Time
}

// MemoryHistoryEntry is one past change of a block, newest first.
type MemoryHistoryEntry struct {
	ID             int64  `json:"id"`
	Label          string `json:"label"`
	OldValue       string `json:"old_value"`
	NewValue       string `json:"new_value"`
	By             string `json:"by"`
	ConversationID string `json:"conversation_id,omitempty"`
	Date           Time   `json:"date"`
}

// MemoryStore keeps the memory blocks of one agent (a store's view of the
// agent: sqlite.Store.ForAgent, postgres.Store.ForAgent). It keeps only
// the values that were changed: what a block is — its description, limit,
// read-only flag and first value — comes from the configuration.
type MemoryStore interface {
	// MemoryValues returns the stored values of owner's set: Label, Value,
	// UpdatedAt and UpdatedBy of each block that was changed.
	MemoryValues(ctx context.Context, owner string) ([]MemoryBlock, error)
	// ChangeMemory writes c, its history entry and its memory_updated agent
	// event (returned; Cursor 0 where the store's Bus numbers it) in one
	// transaction. EConflict: the block's value is no longer c.Old.
	ChangeMemory(ctx context.Context, c MemoryChange) (AgentEvent, error)
	// MemoryHistory returns label's past changes in owner's set, newest
	// first, at most limit, those before id before (0: the newest).
	MemoryHistory(ctx context.Context, owner, label string, before int64, limit int) ([]MemoryHistoryEntry, error)
	// ForgetMemory removes owner's stored values and history, with one
	// memory_updated agent event per block that had a stored value, by
	// principal by.
	ForgetMemory(ctx context.Context, owner, by string, at Time) ([]AgentEvent, error)
}

// MemoryEvent is the memory_updated agent event of c.
func MemoryEvent(label, by, conversationID, principal string, at Time) AgentEvent {
	return AgentEvent{Date: at, Type: AgentEvMemoryUpdated, Label: label, By: by, ConversationID: conversationID, Owner: principal}
}

// Memory is an agent's memory blocks as the front doors use them
// (memory.Service): the caller's set, whose principal the methods take.
// Errors: ENotFound (no block has the label), EConflict (read-only),
// ETooLarge (over the block's limit).
type Memory interface {
	Blocks(ctx context.Context, principal string) ([]MemoryBlock, error)
	Block(ctx context.Context, principal, label string) (MemoryBlock, error)
	Set(ctx context.Context, principal, label, value string) (MemoryBlock, error)
	Reset(ctx context.Context, principal, label string) (MemoryBlock, error)
	History(ctx context.Context, principal, label string, before int64, limit int) ([]MemoryHistoryEntry, error)
	Forget(ctx context.Context, principal string) error
	// Scope is MemoryScopePrincipal or MemoryScopeAgent.
	Scope() string
}
