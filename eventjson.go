package agentik

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentik/agentik/internal/jsonw"
)

// The events, journal messages, memory entries and agent events a turn
// writes are encoded several times each (stored, then shared with the
// subscribers), and json.Marshal's reflection was a measurable part of a
// turn. The functions below write the same bytes by hand for the shapes a
// turn produces, and leave what they do not cover (tool arguments,
// compactions, shared-state updates, a message's context, approvals'
// expiry and answer, a new conversation's agent event) to json.Marshal. TestWireJSONCoversFields
// fails when one of these types gains a field they do not know, and
// FuzzWireJSON holds their bytes to json.Marshal's.

// MarshalEvent returns json.Marshal(e)'s bytes.
func MarshalEvent(e *Event) ([]byte, error) {
	if b, ok := e.appendJSON(make([]byte, 0, e.sizeHint())); ok {
		return b, nil
	}
	return json.Marshal(e)
}

// MarshalMessage returns json.Marshal(m)'s bytes.
func MarshalMessage(m *Message) ([]byte, error) {
	if b, ok := m.appendJSON(make([]byte, 0, m.sizeHint())); ok {
		return b, nil
	}
	return json.Marshal(m)
}

// MarshalMemoryEntry returns json.Marshal(e)'s bytes.
func MarshalMemoryEntry(e *MemoryEntry) ([]byte, error) {
	if b, ok := e.appendJSON(make([]byte, 0, 128+contentSize(e.Message.Content)+len(e.Message.Reasoning))); ok {
		return b, nil
	}
	return json.Marshal(e)
}

// MarshalAgentEvent returns json.Marshal(e)'s bytes.
func MarshalAgentEvent(e *AgentEvent) ([]byte, error) {
	if b, ok := e.appendJSON(make([]byte, 0, 160+len(e.Title))); ok {
		return b, nil
	}
	return json.Marshal(e)
}

func (e *Event) sizeHint() int {
	n := 192 + len(e.Text) + len(e.Data)
	if e.Message != nil {
		n += e.Message.sizeHint()
	}
	return n
}

func (m *Message) sizeHint() int {
	return 288 + contentSize(m.Content) + len(m.Reasoning) + len(m.Details)
}

func contentSize(parts []Content) int {
	n := 0
	for _, p := range parts {
		n += 32 + len(p.Text) + len(p.Data) + len(p.MIME)
	}
	return n
}

// appendJSON writes e as json.Marshal does and reports true, or reports
// false, having written nothing to keep, for an event it does not cover.
func (e *Event) appendJSON(b []byte) ([]byte, bool) {
	if e.Compaction != nil || len(e.Arguments) != 0 || !e.ExpiresAt.IsZero() || e.Approved != nil ||
		len(e.State) != 0 || len(e.Patch) != 0 {
		return b, false
	}
	start := len(b)
	b = openWithCursor(b, e.Cursor)
	b = appendKey(b, `"conversation_id":`, e.ConversationID)
	b = appendTime(b, `,"date":`, e.Date)
	b = appendKey(b, `,"type":`, e.Type)
	if e.Message != nil {
		b = append(b, `,"message":`...)
		var ok bool
		if b, ok = e.Message.appendJSON(b); !ok {
			return b[:start], false
		}
	}
	b = appendOmit(b, `,"reply_to":`, e.ReplyTo)
	b = appendOmit(b, `,"reason":`, e.Reason)
	b = appendOmit(b, `,"text":`, e.Text)
	b = appendOmit(b, `,"data":`, e.Data)
	b = appendOmit(b, `,"mime":`, e.MIME)
	if e.Tokens != nil {
		b = appendTokens(b, `,"tokens":`, e.Tokens)
	}
	b = appendIntOmit(b, `,"dropped":`, int64(e.Dropped))
	b = appendIntOmit(b, `,"summary_tokens":`, int64(e.SummaryTokens))
	b = appendOmit(b, `,"call_id":`, e.CallID)
	b = appendOmit(b, `,"name":`, e.Name)
	b = appendOmit(b, `,"by":`, e.By)
	b = appendIntOmit(b, `,"from":`, e.From)
	b = appendIntOmit(b, `,"to":`, e.To)
	return append(b, '}'), true
}

// appendJSON writes m as json.Marshal does and reports true, or reports
// false, having written nothing to keep, for a message it does not cover.
func (m *Message) appendJSON(b []byte) ([]byte, bool) {
	if m.Context != nil || len(m.Arguments) != 0 || len(m.Siblings) != 0 {
		return b, false
	}
	b = appendKey(b, `{"id":`, m.ID)
	b = appendKey(b, `,"conversation_id":`, m.ConversationID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, m.Seq, 10)
	b = appendTime(b, `,"date":`, m.Date)
	b = appendKey(b, `,"type":`, m.Type)
	b = appendContent(b, m.Content)
	b = appendOmit(b, `,"reasoning":`, m.Reasoning)
	if m.Tokens != nil {
		b = appendTokens(b, `,"tokens":`, m.Tokens)
	}
	if m.Interrupted {
		b = append(b, `,"interrupted":true`...)
	}
	b = appendOmit(b, `,"interrupt_reason":`, m.InterruptReason)
	if m.Continued {
		b = append(b, `,"continued":true`...)
	}
	b = appendOmit(b, `,"call_id":`, m.CallID)
	b = appendOmit(b, `,"name":`, m.Name)
	if m.IsError {
		b = append(b, `,"is_error":true`...)
	}
	b = appendOmit(b, `,"code":`, m.Code)
	b = appendOmit(b, `,"details":`, m.Details)
	b = appendOmit(b, `,"reply_to":`, m.ReplyTo)
	b = appendIntOmit(b, `,"parent":`, m.Parent)
	return append(b, '}'), true
}

// appendJSON writes e as json.Marshal does and reports true, or reports
// false, having written nothing to keep, for an entry it does not cover.
func (e *MemoryEntry) appendJSON(b []byte) ([]byte, bool) {
	mm := &e.Message
	if len(mm.ToolCalls) != 0 {
		return b, false
	}
	b = append(b, '{')
	if e.Order != 0 {
		b = append(b, `"order":`...)
		b = strconv.AppendInt(b, e.Order, 10)
		b = append(b, ',')
	}
	if e.SourceID != "" {
		b = appendKey(b, `"source_id":`, e.SourceID)
		b = append(b, ',')
	}
	if e.ReplyTo != "" {
		b = appendKey(b, `"reply_to":`, e.ReplyTo)
		b = append(b, ',')
	}
	b = appendKey(b, `"message":{"role":`, mm.Role)
	b = appendContent(b, mm.Content)
	b = appendOmit(b, `,"reasoning":`, mm.Reasoning)
	b = appendOmit(b, `,"call_id":`, mm.CallID)
	b = appendOmit(b, `,"name":`, mm.Name)
	if mm.IsError {
		b = append(b, `,"is_error":true`...)
	}
	return append(b, "}}"...), true
}

// appendJSON writes e as json.Marshal does and reports true, or reports
// false, having written nothing, for an event that carries a conversation.
func (e *AgentEvent) appendJSON(b []byte) ([]byte, bool) {
	if e.Conversation != nil {
		return b, false
	}
	b = openWithCursor(b, e.Cursor)
	b = appendTime(b, `"date":`, e.Date)
	b = appendKey(b, `,"type":`, e.Type)
	b = appendOmit(b, `,"conversation_id":`, e.ConversationID)
	b = appendOmit(b, `,"title":`, e.Title)
	if !e.UpdatedAt.IsZero() {
		b = appendTime(b, `,"updated_at":`, e.UpdatedAt)
	}
	b = appendOmit(b, `,"label":`, e.Label)
	b = appendOmit(b, `,"by":`, e.By)
	return append(b, '}'), true
}

// openWithCursor opens an object whose first field is an omitempty cursor.
func openWithCursor(b []byte, cursor int64) []byte {
	b = append(b, '{')
	if cursor == 0 {
		return b
	}
	b = append(b, `"cursor":`...)
	b = strconv.AppendInt(b, cursor, 10)
	return append(b, ',')
}

// appendContent writes a non-empty content list as an omitempty field.
func appendContent(b []byte, parts []Content) []byte {
	if len(parts) == 0 {
		return b
	}
	b = append(b, `,"content":[`...)
	for i := range parts {
		p := &parts[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, `{"type":`, p.Type)
		b = appendOmit(b, `,"text":`, p.Text)
		b = appendOmit(b, `,"data":`, p.Data)
		b = appendOmit(b, `,"mime":`, p.MIME)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendKey(b []byte, key, s string) []byte {
	b = append(b, key...)
	return jsonw.AppendString(b, s, true)
}

func appendOmit(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendKey(b, key, s)
}

func appendIntOmit(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	b = append(b, key...)
	return strconv.AppendInt(b, n, 10)
}

// appendTime writes t in TimeFormat, the digits by hand for the years
// time.Time.AppendFormat writes with four (it parses its layout each time).
func appendTime(b []byte, key string, t Time) []byte {
	b = append(b, key...)
	b = append(b, '"')
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		b = u.AppendFormat(b, TimeFormat)
		return append(b, '"')
	}
	hour, minute, sec := u.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, u.Nanosecond()/int(time.Millisecond), 3)
	return append(b, `Z"`...)
}

// appendDigits writes 0 <= n < 10^width in width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		d := n
		for range i {
			d /= 10
		}
		b = append(b, byte('0'+d%10))
	}
	return b
}

func appendTokens(b []byte, key string, t *TurnTokens) []byte {
	b = append(b, key...)
	b = append(b, `{"input":`...)
	b = strconv.AppendInt(b, t.Input, 10)
	b = append(b, `,"output":`...)
	b = strconv.AppendInt(b, t.Output, 10)
	return append(b, '}')
}
