package agentik

// Durable event types: stored, replayable by cursor.
const (
	EvUserMessage         = "user_message"
	EvAssistantMessage    = "assistant_message"
	EvToolCall            = "tool_call"
	EvToolResult          = "tool_result"
	EvToolFailed          = "tool_failed"
	EvError               = "error"
	EvInterrupted         = "interrupted"
	EvConversationClosing = "conversation_closing"
	EvCompactionTriggered = "compaction_triggered"
	EvApprovalRequested   = "approval_requested" // a tool call waits for a person's answer (SPEC §10)
	EvApprovalResolved    = "approval_resolved"  // it was answered (or expired, or the turn interrupted)
	EvHeadMoved           = "head_moved"         // the head moved other than by appending (SPEC §18): re-read
	EvStateUpdated        = "state_updated"      // the conversation's shared state changed (SPEC §19)
)

// Online event types: live only, never stored, no cursor.
const (
	EvWorking        = "working"
	EvStartReasoning = "start_reasoning"
	EvStartResponse  = "start_response"
	EvAppendText     = "append_text"
	EvAppendImage    = "append_image"
	EvEnd            = "end"
	// EvAwaitingApproval: the turn has run every call it may and now waits,
	// parked in the store, for the answers to its approval_requested calls
	// (ReplyTo). The turn is not over: no end follows until it finishes.
	EvAwaitingApproval = "awaiting_approval"
	// EvDeltasLost is never published: a Subscriber's Next returns it in
	// place of the online events the bus dropped for it (it had no room),
	// so that its reader knows the text it got since has a gap. The engine
	// recovers the text from the stored message (its streams never pass
	// the marker on: see Subscriber).
	EvDeltasLost = "deltas_lost"
)

// Interrupt reasons.
const (
	ReasonUser       = "user"
	ReasonBusyPolicy = "busy_policy"
	ReasonRestart    = "restart"
	ReasonShutdown   = "shutdown"
)

// End reasons.
const (
	EndCompleted   = "completed"
	EndInterrupted = "interrupted"
	EndError       = "error"
	EndClientTools = "client_tools" // waiting for the results of client tool calls
)

// Event is one item of a conversation's event stream. Durable events have a
// Cursor (strictly increasing across the agent, never reused) and are stored
// in the same transaction as the journal message they carry; online events
// have Cursor 0 and are never stored. Which fields are set depends on Type:
//
//	user_message … error          Message (tool_failed: a tool_result with is_error)
//	interrupted                   ReplyTo, Reason
//	compaction_triggered          Dropped, SummaryTokens, Compaction
//	append_text                   Text
//	append_image                  Data, MIME
//	end                           ReplyTo, Tokens, Reason
//	working, awaiting_approval    ReplyTo
//	approval_requested            CallID, Name, Arguments, ReplyTo, ExpiresAt
//	approval_resolved             CallID, Approved, Reason, By, ReplyTo, Arguments (edited)
//	head_moved                    From, To (seqs; 0 is the empty path)
//	state_updated                 State (the new state, whole), Patch (RFC 6902, from the state before), By
type Event struct {
	Cursor         int64       `json:"cursor,omitempty"`
	ConversationID string      `json:"conversation_id"`
	Date           Time        `json:"date"`
	Type           string      `json:"type"`
	Message        *Message    `json:"message,omitempty"`
	ReplyTo        string      `json:"reply_to,omitempty"`
	Reason         string      `json:"reason,omitempty"`
	Text           string      `json:"text,omitempty"`
	Data           string      `json:"data,omitempty"`
	MIME           string      `json:"mime,omitempty"`
	Tokens         *TurnTokens `json:"tokens,omitempty"`
	Dropped        int         `json:"dropped,omitempty"`
	SummaryTokens  int         `json:"summary_tokens,omitempty"`
	Compaction     *Compaction `json:"compaction,omitempty"`
	CallID         string      `json:"call_id,omitempty"`
	Name           string      `json:"name,omitempty"`
	Arguments      RawJSON     `json:"arguments,omitempty"`
	ExpiresAt      Time        `json:"expires_at,omitzero"`
	Approved       *bool       `json:"approved,omitempty"`
	By             string      `json:"by,omitempty"`
	From           int64       `json:"from,omitempty"`
	To             int64       `json:"to,omitempty"`
	State          RawJSON     `json:"state,omitempty"`
	Patch          RawJSON     `json:"patch,omitempty"`

	// SentBefore is set on an online event heard from another process
	// sharing the store: one more than the cursor of the last durable
	// event of its conversation that process had committed when it
	// published this one, so the event came before every durable event
	// of that process with a cursor ≥ SentBefore. 0: not known (an event
	// of this process). Never on the wire.
	SentBefore int64 `json:"-"`
}

// Compaction describes a working-memory compaction (SPEC §3).
type Compaction struct {
	FromSeq      int64  `json:"from_seq,omitempty"` // first journal seq summarised
	ToSeq        int64  `json:"to_seq,omitempty"`   // last journal seq summarised
	Summary      string `json:"summary,omitempty"`
	Model        string `json:"model,omitempty"`
	TokensBefore int    `json:"tokens_before,omitempty"`
	TokensAfter  int    `json:"tokens_after,omitempty"`
	Fallback     bool   `json:"fallback,omitempty"` // exchanges dropped without a summary
}

// Durable reports whether events of type t are stored and replayable.
func Durable(t string) bool {
	switch t {
	case EvUserMessage, EvAssistantMessage, EvToolCall, EvToolResult, EvToolFailed,
		EvError, EvInterrupted, EvConversationClosing, EvCompactionTriggered,
		EvApprovalRequested, EvApprovalResolved, EvHeadMoved, EvStateUpdated:
		return true
	}
	return false
}

// MessageEvent returns the durable event that announces journal message m.
func MessageEvent(m *Message) Event {
	t := m.Type
	if t == MsgToolResult && m.IsError {
		t = EvToolFailed
	}
	return Event{ConversationID: m.ConversationID, Date: m.Date, Type: t, Message: m}
}

// Agent event types.
const (
	AgentEvCreated = "created"
	AgentEvDeleted = "deleted"
	AgentEvRenamed = "renamed"
	AgentEvTouched = "touched"
)

// AgentEvent is one item of the agent-level stream, durable with its own
// cursor sequence. Owner is the principal of the conversation, used to deliver
// an event only to its owner; it never travels on the wire.
type AgentEvent struct {
	Cursor         int64             `json:"cursor,omitempty"`
	Date           Time              `json:"date"`
	Type           string            `json:"type"`
	Conversation   *ConversationInfo `json:"conversation,omitempty"`
	ConversationID string            `json:"conversation_id,omitempty"`
	Title          string            `json:"title,omitempty"`
	UpdatedAt      Time              `json:"updated_at,omitzero"`
	// Label and By: memory_updated (memory.go).
	Label string `json:"label,omitempty"`
	By    string `json:"by,omitempty"`
	Owner string `json:"-"`
}
