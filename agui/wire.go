package agui

import "encoding/json"

// AG-UI 1.0 event types this facade emits.
const (
	RunStarted              = "RUN_STARTED"
	RunFinished             = "RUN_FINISHED"
	RunError                = "RUN_ERROR"
	TextMessageStart        = "TEXT_MESSAGE_START"
	TextMessageContent      = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd          = "TEXT_MESSAGE_END"
	ToolCallStart           = "TOOL_CALL_START"
	ToolCallArgs            = "TOOL_CALL_ARGS"
	ToolCallEnd             = "TOOL_CALL_END"
	ToolCallResult          = "TOOL_CALL_RESULT"
	ReasoningStart          = "REASONING_START"
	ReasoningMessageStart   = "REASONING_MESSAGE_START"
	ReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	ReasoningMessageEnd     = "REASONING_MESSAGE_END"
	ReasoningEnd            = "REASONING_END"
	MessagesSnapshot        = "MESSAGES_SNAPSHOT"
	StateSnapshot           = "STATE_SNAPSHOT"
	StateDelta              = "STATE_DELTA"
)

// Event is one AG-UI event on the wire. One flat struct covers every type
// the facade emits; every optional field is omitted when empty, because the
// official client treats a null as a schema error. Content is a pointer
// because TOOL_CALL_RESULT requires it even when the result is empty.
type Event struct {
	Type            string    `json:"type"`
	Timestamp       int64     `json:"timestamp,omitempty"`
	ThreadID        string    `json:"threadId,omitempty"`
	RunID           string    `json:"runId,omitempty"`
	ParentRunID     string    `json:"parentRunId,omitempty"`
	MessageID       string    `json:"messageId,omitempty"`
	Role            string    `json:"role,omitempty"`
	Delta           string    `json:"delta,omitempty"`
	ToolCallID      string    `json:"toolCallId,omitempty"`
	ToolCallName    string    `json:"toolCallName,omitempty"`
	ParentMessageID string    `json:"parentMessageId,omitempty"`
	Content         *string   `json:"content,omitempty"`
	Messages        []Message `json:"messages,omitzero"` // [] stays [] (required by MESSAGES_SNAPSHOT)
	Outcome         *Outcome  `json:"outcome,omitempty"`
	Message         string    `json:"message,omitempty"` // RUN_ERROR
	Code            string    `json:"code,omitempty"`    // RUN_ERROR
	// Snapshot is STATE_SNAPSHOT's state; Patch is STATE_DELTA's delta, an
	// RFC 6902 patch (written as "delta", which text events use for
	// their text: appendFrame).
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	Patch    json.RawMessage `json:"-"`
}

// Outcome is RUN_FINISHED.outcome: absent means success.
type Outcome struct {
	Type               string      `json:"type"` // success, interrupt, cancelled
	PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"`
	Interrupts         []Interrupt `json:"interrupts,omitempty"` // type interrupt: at least one
}

// Outcome types.
const (
	OutcomeSuccess   = "success"
	OutcomeInterrupt = "interrupt"
	OutcomeCancelled = "cancelled"
)

// Interrupt is one entry of an interrupt outcome (AG-UI 1.0): what the run
// waits for. The facade raises one per tool call waiting for approval, with
// the call id as both id and toolCallId.
type Interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"` // RFC 3339
	Metadata       map[string]any  `json:"metadata,omitempty"`
}

// ReasonToolApproval is Interrupt.reason of a tool call waiting for a
// person's yes (SPEC §10).
const ReasonToolApproval = "tool_approval"

// Message is an AG-UI message as the facade writes it (MESSAGES_SNAPSHOT).
// Content is a JSON string, or an array of content parts for user messages
// with images.
type Message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []ToolCall      `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Error      string          `json:"error,omitempty"`
}

// ToolCall is a call carried by an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the tool and carries its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleReasoning = "reasoning"
	RoleActivity  = "activity"
)

// appendFrame appends one SSE frame: "data: " + compact JSON + "\n\n". JSON
// from encoding/json never holds a raw newline, so one data line suffices.
func appendFrame(buf []byte, ev Event) ([]byte, error) {
	var b []byte
	var err error
	if ev.Type == StateDelta {
		b, err = json.Marshal(struct {
			Type      string          `json:"type"`
			Timestamp int64           `json:"timestamp,omitempty"`
			Delta     json.RawMessage `json:"delta"`
		}{ev.Type, ev.Timestamp, ev.Patch})
	} else {
		b, err = json.Marshal(ev)
	}
	if err != nil {
		return buf, err
	}
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	return append(buf, '\n', '\n'), nil
}

func strPtr(s string) *string { return &s }
