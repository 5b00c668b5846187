package agentik

// Journal message types.
const (
	MsgUser       = "user_message"
	MsgAssistant  = "assistant_message"
	MsgToolCall   = "tool_call"
	MsgToolResult = "tool_result"
	MsgError      = "error"
)

// Codes of a failed turn: the Code of an error journal message, the same
// name on every facade. Details carry a sentence safe to show any caller;
// the cause (provider answers, network addresses) is for operators and goes
// to the log only.
const (
	CodeLLMError           = "llm_error"            // the model call failed
	CodeLLMTimeout         = "llm_timeout"          // the model stopped answering
	CodeContextOverflow    = "context_overflow"     // the conversation is too long for the model
	CodeToolRoundsExceeded = "tool_rounds_exceeded" // the model kept calling tools without answering
	CodeStoreError         = "store_error"          // the turn could not be stored
)

// TurnErrorMessage is what a facade shows a caller for a failed turn: a
// fixed sentence for each code above (whatever an older journal holds in
// details), else details, else a generic sentence.
func TurnErrorMessage(code, details string) string {
	switch code {
	case CodeLLMError:
		return "the model call failed"
	case CodeLLMTimeout:
		return "the model stopped answering"
	case CodeContextOverflow:
		return "the conversation is too long for the model"
	case CodeToolRoundsExceeded:
		return "the model kept calling tools without answering"
	case CodeStoreError:
		return "the turn could not be stored"
	}
	if details != "" {
		return details
	}
	return "the turn failed"
}

// Message is one entry of a conversation's journal: the append-only record of
// what happened, in arrival order. Seq is 1, 2, 3… per conversation with no
// gaps, assigned by the store. Which fields are set depends on Type:
//
//	user_message       Content, Context
//	assistant_message  Content, Reasoning, Tokens, Interrupted, InterruptReason, Continued, ReplyTo
//	tool_call          CallID, Name, Arguments, ReplyTo
//	tool_result        CallID, Name, Content, IsError, ReplyTo
//	error              Code, Details, ReplyTo
type Message struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversation_id"`
	Seq            int64           `json:"seq"`
	Date           Time            `json:"date"`
	Type           string          `json:"type"`
	Content        []Content       `json:"content,omitempty"`
	Context        *MessageContext `json:"context,omitempty"`
	Reasoning      string          `json:"reasoning,omitempty"`
	Tokens         *TurnTokens     `json:"tokens,omitempty"`
	Interrupted    bool            `json:"interrupted,omitempty"`
	// InterruptReason is why an interrupted answer was cut (the reason of
	// its interrupted event), kept so that a replay can say it too.
	InterruptReason string `json:"interrupt_reason,omitempty"`
	// Continued marks the text the model wrote before its tool calls, in
	// a tool round: the turn goes on after it, so it does not close the
	// turn (the tool calls follow it, in the same commit).
	Continued bool    `json:"continued,omitempty"`
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments RawJSON `json:"arguments,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
	Code      string  `json:"code,omitempty"`
	Details   string  `json:"details,omitempty"`
	ReplyTo   string  `json:"reply_to,omitempty"`
	// Parent is the seq of the message this one follows in the
	// conversation's tree (0: at the root), assigned by the store.
	Parent int64 `json:"parent,omitempty"`
	// Siblings are the seqs of every message with the same parent, this
	// one included, ascending; set by reads, only when there are several.
	Siblings []int64 `json:"siblings,omitempty"`

	// ClientTools are the client tools a user message was sent with
	// (SendRequest.ClientTools). Stores keep them with the message, so that
	// whichever process runs or continues its turn, or a restart, offers
	// them to the model again; they are never on the wire.
	ClientTools []ToolSpec `json:"-"`
	// TraceParent is the W3C traceparent of the request that sent a user
	// message, when tracing is on (Tracer.TraceParent). Stores keep it with
	// the message, so that its turn links to the request's trace whichever
	// process runs it, and after a restart; it is never on the wire.
	TraceParent string `json:"-"`
	// Params are the sampling parameters a user message was sent with
	// (SendRequest.Params). Stores keep them with the message, like
	// ClientTools; they are never on the wire.
	Params *ModelParams `json:"-"`
}

// ClosesTurn reports whether m closes the turn of the user message it replies
// to: a complete assistant answer or an error.
func (m *Message) ClosesTurn() bool {
	return (m.Type == MsgAssistant && !m.Interrupted && !m.Continued) || m.Type == MsgError
}
