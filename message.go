package agentik

// Journal message types.
const (
	MsgUser       = "user_message"
	MsgAssistant  = "assistant_message"
	MsgToolCall   = "tool_call"
	MsgToolResult = "tool_result"
	MsgError      = "error"
)

// Message is one entry of a conversation's journal: the append-only record of
// what happened, in arrival order. Seq is 1, 2, 3… per conversation with no
// gaps, assigned by the store. Which fields are set depends on Type:
//
//	user_message       Content, Context
//	assistant_message  Content, Reasoning, Tokens, Interrupted, ReplyTo
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
	CallID         string          `json:"call_id,omitempty"`
	Name           string          `json:"name,omitempty"`
	Arguments      RawJSON         `json:"arguments,omitempty"`
	IsError        bool            `json:"is_error,omitempty"`
	Code           string          `json:"code,omitempty"`
	Details        string          `json:"details,omitempty"`
	ReplyTo        string          `json:"reply_to,omitempty"`
}

// ClosesTurn reports whether m closes the turn of the user message it replies
// to: a complete assistant answer or an error.
func (m *Message) ClosesTurn() bool {
	return (m.Type == MsgAssistant && !m.Interrupted) || m.Type == MsgError
}
