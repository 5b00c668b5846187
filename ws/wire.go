package ws

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentik/agentik"
)

// Message types (the "type" field).
const (
	TypeStatus             = "STATUS"
	TypeUserMessage        = "USER_MESSAGE"
	TypeAgentEvent         = "AGENT_EVENT"
	TypeError              = "ERROR"
	TypeGracefulDisconnect = "GRACEFUL_DISCONNECT"
	// TypeInterrupt is an extension: the client asks to cancel the running
	// turn. Its partial answer is kept; the turn ends with END.
	TypeInterrupt = "INTERRUPT"
	// TypeApproval is an extension (SPEC §10): the client answers an
	// APPROVAL_REQUEST.
	TypeApproval = "APPROVAL"
)

// AGENT_EVENT subtypes.
const (
	SubtypeTextChunk = "TEXT_CHUNK"
	SubtypeEnd       = "END"
	// Extensions, sent only to connections that ask for them with
	// ?events=reasoning or ?events=tools.
	SubtypeReasoningChunk = "REASONING_CHUNK"
	SubtypeToolCall       = "TOOL_CALL"
	SubtypeToolResult     = "TOOL_RESULT"
	// SubtypeApprovalRequest (extension, SPEC §10) is sent to every
	// connection: a tool call waits for a person's APPROVAL.
	SubtypeApprovalRequest = "APPROVAL_REQUEST"
)

// Extensions a client may ask for with ?events= (comma-separated).
const (
	ExtTools     = "tools"
	ExtReasoning = "reasoning"
)

// Stable ERROR codes for frames the server cannot use. Errors of the core
// keep their agentik code (busy, not_found, unavailable, internal, …) and a
// failed turn carries the code of its journal error (llm_error, …).
const (
	CodeMalformed   = "malformed"              // not a JSON object, or no string type
	CodeUnknownType = "unknown_type"           // a type the server does not take
	CodeInvalid     = "invalid"                // missing, empty or ill-typed fields
	CodeTooLarge    = "too_large"              // over the message size limit
	CodeBinary      = "unsupported_media_type" // a binary frame: the protocol is JSON text
)

// End reasons (the extra "reason" field of END).
const (
	EndCompleted   = "completed"
	EndInterrupted = "interrupted"
	EndError       = "error"
)

// ServerMessage is a message from the server: *Status, *TextChunk, *End,
// *Error, *GracefulDisconnect, the extensions *ReasoningChunk, *ToolCall,
// *ToolResult, or *Unknown for a type this SDK does not know.
type ServerMessage interface{ serverMessage() }

// Status says the server is ready for messages. ConversationID (extra
// field) is the conversation this connection is attached to; Working says a
// turn is running; Events lists the extensions in effect.
type Status struct {
	ConversationID string   `json:"conversation_id,omitempty"`
	Working        bool     `json:"working"`
	Events         []string `json:"events,omitempty"`
}

// TextChunk is a delta of the answer being written.
type TextChunk struct {
	Text string `json:"text"`
}

// End ends a turn. TokensUsed is the turn's input plus output tokens (0 when
// the model did not report them). Reason (extra field) is completed,
// interrupted or error.
type End struct {
	TokensUsed int64  `json:"tokens_used"`
	Reason     string `json:"reason,omitempty"`
}

// Error reports a failure: of a frame (the codes above), of a request to the
// core, or of a turn (then ReplyTo, an extra field, is the id of the user
// message the turn answered, and END follows).
type Error struct {
	Code    string `json:"code"`
	Details string `json:"details"`
	ReplyTo string `json:"reply_to,omitempty"`
}

func (e *Error) Error() string { return "ws: " + e.Code + ": " + e.Details }

// GracefulDisconnect announces that the server closes the connection.
// Reason (extra field) is idle or shutdown.
type GracefulDisconnect struct {
	Reason string `json:"reason,omitempty"`
}

// ReasoningChunk is a delta of the model's reasoning (extension "reasoning").
type ReasoningChunk struct {
	Text string `json:"text"`
}

// ToolCall is a tool the model called (extension "tools").
type ToolCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolResult is a tool's answer (extension "tools"); IsError when it failed.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Text    string `json:"text"`
	IsError bool   `json:"is_error"`
}

// ApprovalRequest says a tool call waits for a person's answer (extension,
// SPEC §10): answer it with APPROVAL{call_id, approved, reason?,
// arguments?}. ExpiresAt (extra field, RFC 3339) is when it counts as
// denied, if ever.
type ApprovalRequest struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	ExpiresAt string          `json:"expires_at,omitempty"`
}

// Unknown is a server message of a type or subtype this SDK does not know;
// Raw is the frame as received. Newer servers may add messages.
type Unknown struct {
	Type    string
	Subtype string
	Raw     json.RawMessage
}

func (*Status) serverMessage()             {}
func (*TextChunk) serverMessage()          {}
func (*End) serverMessage()                {}
func (*Error) serverMessage()              {}
func (*GracefulDisconnect) serverMessage() {}
func (*ReasoningChunk) serverMessage()     {}
func (*ToolCall) serverMessage()           {}
func (*ToolResult) serverMessage()         {}
func (*ApprovalRequest) serverMessage()    {}
func (*Unknown) serverMessage()            {}

// header is the discriminator of every frame.
type header struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype,omitempty"`
}

// EncodeServerMessage returns the JSON frame of m.
func EncodeServerMessage(m ServerMessage) ([]byte, error) {
	var v any
	switch m := m.(type) {
	case *Status:
		v = struct {
			header
			*Status
		}{header{Type: TypeStatus}, m}
	case *TextChunk:
		v = struct {
			header
			*TextChunk
		}{header{TypeAgentEvent, SubtypeTextChunk}, m}
	case *End:
		v = struct {
			header
			*End
		}{header{TypeAgentEvent, SubtypeEnd}, m}
	case *Error:
		v = struct {
			header
			*Error
		}{header{Type: TypeError}, m}
	case *GracefulDisconnect:
		v = struct {
			header
			*GracefulDisconnect
		}{header{Type: TypeGracefulDisconnect}, m}
	case *ReasoningChunk:
		v = struct {
			header
			*ReasoningChunk
		}{header{TypeAgentEvent, SubtypeReasoningChunk}, m}
	case *ToolCall:
		v = struct {
			header
			*ToolCall
		}{header{TypeAgentEvent, SubtypeToolCall}, m}
	case *ToolResult:
		v = struct {
			header
			*ToolResult
		}{header{TypeAgentEvent, SubtypeToolResult}, m}
	case *ApprovalRequest:
		v = struct {
			header
			*ApprovalRequest
		}{header{TypeAgentEvent, SubtypeApprovalRequest}, m}
	case *Unknown:
		return m.Raw, nil
	default:
		return nil, fmt.Errorf("ws: cannot encode %T", m)
	}
	return json.Marshal(v)
}

// DecodeServerMessage parses a server frame. A type or subtype it does not
// know is an *Unknown, not an error, so that older clients survive newer
// servers; a frame that is not a JSON object with a string type is an error.
func DecodeServerMessage(b []byte) (ServerMessage, error) {
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("ws: bad server frame: %w", err)
	}
	if h.Type == "" {
		return nil, fmt.Errorf("ws: server frame without type")
	}
	var m ServerMessage
	switch h.Type {
	case TypeStatus:
		m = &Status{}
	case TypeError:
		m = &Error{}
	case TypeGracefulDisconnect:
		m = &GracefulDisconnect{}
	case TypeAgentEvent:
		switch h.Subtype {
		case SubtypeTextChunk:
			m = &TextChunk{}
		case SubtypeEnd:
			m = &End{}
		case SubtypeReasoningChunk:
			m = &ReasoningChunk{}
		case SubtypeToolCall:
			m = &ToolCall{}
		case SubtypeToolResult:
			m = &ToolResult{}
		case SubtypeApprovalRequest:
			m = &ApprovalRequest{}
		}
	}
	if m == nil {
		return &Unknown{Type: h.Type, Subtype: h.Subtype, Raw: append(json.RawMessage(nil), b...)}, nil
	}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("ws: bad %s frame: %w", h.Type, err)
	}
	if s, ok := m.(*Status); ok && len(s.Events) == 0 {
		s.Events = nil // "events":[] says what no events says (and is encoded so)
	}
	return m, nil
}

// ClientMessage is a message from the client: *UserMessage, *Interrupt or
// *Approval.
type ClientMessage interface{ clientMessage() }

// UserMessage is the user's text. IfBusy (extra field) overrides the
// server's busy policy for this message: enqueue, interrupt or reject.
type UserMessage struct {
	Text   string `json:"text"`
	IfBusy string `json:"if_busy,omitempty"`
}

// Interrupt asks the server to cancel the running turn (extension).
type Interrupt struct{}

// Approval answers an APPROVAL_REQUEST (extension, SPEC §10). Arguments,
// only with Approved, replace the call's arguments: a JSON object that
// must satisfy the tool's schema.
type Approval struct {
	CallID    string          `json:"call_id"`
	Approved  bool            `json:"approved"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MaxCallID bounds the call_id of an APPROVAL, in bytes.
const MaxCallID = 256

func (*UserMessage) clientMessage() {}
func (*Interrupt) clientMessage()   {}
func (*Approval) clientMessage()    {}

// EncodeClientMessage returns the JSON frame of m.
func EncodeClientMessage(m ClientMessage) ([]byte, error) {
	switch m := m.(type) {
	case *UserMessage:
		return json.Marshal(struct {
			header
			*UserMessage
		}{header{Type: TypeUserMessage}, m})
	case *Interrupt:
		return json.Marshal(header{Type: TypeInterrupt})
	case *Approval:
		return json.Marshal(struct {
			header
			*Approval
		}{header{Type: TypeApproval}, m})
	}
	return nil, fmt.Errorf("ws: cannot encode %T", m)
}

// DecodeClientMessage parses a client frame, strictly: the error is an
// *Error with code malformed, unknown_type or invalid. Unknown fields are
// ignored.
func DecodeClientMessage(b []byte) (ClientMessage, error) {
	if err := agentik.CheckJSON(b); err != nil {
		return nil, &Error{Code: CodeMalformed, Details: agentik.ErrorMessage(err)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, &Error{Code: CodeMalformed, Details: "a message must be a JSON object"}
	}
	var typ string
	if raw, ok := fields["type"]; !ok || json.Unmarshal(raw, &typ) != nil || typ == "" {
		return nil, &Error{Code: CodeMalformed, Details: `a message must have a string "type"`}
	}
	switch typ {
	case TypeUserMessage:
		m := &UserMessage{}
		raw, ok := fields["text"]
		if !ok || isNull(raw) {
			return nil, &Error{Code: CodeInvalid, Details: `USER_MESSAGE needs "text"`}
		}
		if json.Unmarshal(raw, &m.Text) != nil {
			return nil, &Error{Code: CodeInvalid, Details: `"text" must be a string`}
		}
		if m.Text == "" {
			return nil, &Error{Code: CodeInvalid, Details: `"text" is empty`}
		}
		if raw, ok := fields["if_busy"]; ok && !isNull(raw) {
			if json.Unmarshal(raw, &m.IfBusy) != nil || !validBusy(m.IfBusy) {
				return nil, &Error{Code: CodeInvalid, Details: `"if_busy" must be enqueue, interrupt or reject`}
			}
		}
		return m, nil
	case TypeInterrupt:
		return &Interrupt{}, nil
	case TypeApproval:
		return decodeApproval(fields)
	}
	return nil, &Error{Code: CodeUnknownType, Details: fmt.Sprintf("unknown message type %q; the server takes USER_MESSAGE, INTERRUPT and APPROVAL", truncate(typ, 64))}
}

// decodeApproval checks an APPROVAL's fields: call_id a non-empty string,
// approved a boolean, reason a string, arguments (only with approved) a
// JSON object; what agentik.Resolution.Validate refuses is invalid too.
func decodeApproval(fields map[string]json.RawMessage) (ClientMessage, error) {
	m := &Approval{}
	raw, ok := fields["call_id"]
	if !ok || isNull(raw) || json.Unmarshal(raw, &m.CallID) != nil || m.CallID == "" {
		return nil, &Error{Code: CodeInvalid, Details: `APPROVAL needs a string "call_id"`}
	}
	if len(m.CallID) > MaxCallID {
		return nil, &Error{Code: CodeInvalid, Details: fmt.Sprintf(`"call_id" is longer than %d bytes`, MaxCallID)}
	}
	raw, ok = fields["approved"]
	if !ok || isNull(raw) || json.Unmarshal(raw, &m.Approved) != nil {
		return nil, &Error{Code: CodeInvalid, Details: `APPROVAL needs a boolean "approved"`}
	}
	if raw, ok := fields["reason"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &m.Reason) != nil {
			return nil, &Error{Code: CodeInvalid, Details: `"reason" must be a string`}
		}
	}
	if raw, ok := fields["arguments"]; ok && !isNull(raw) {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return nil, &Error{Code: CodeInvalid, Details: `"arguments" must be a JSON object`}
		}
		m.Arguments = json.RawMessage(b.Bytes())
	}
	if err := m.Resolution().Validate(); err != nil {
		return nil, &Error{Code: CodeInvalid, Details: agentik.ErrorMessage(err)}
	}
	return m, nil
}

// Resolution is the answer m gives, for agentik.Approver.Resolve.
func (m *Approval) Resolution() agentik.Resolution {
	return agentik.Resolution{Approved: m.Approved, Reason: m.Reason, Arguments: agentik.RawJSON(m.Arguments)}
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func validBusy(p string) bool { return p == "" || p == "enqueue" || p == "interrupt" || p == "reject" }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
