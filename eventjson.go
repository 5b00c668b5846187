package agentik

import (
	"github.com/agentik/agentik/internal/jsonw"
)

// appendSimpleJSON writes e exactly as json.Marshal does when e carries
// only a conversation, a date, a type, a reply_to and a text — the live
// deltas and the end of a turn, most of the events a turn publishes — and
// reports false for any other event, which json.Marshal then encodes.
// TestSimpleJSONCoversEvent fails when Event gains a field this does not
// check.
func (e *Event) appendSimpleJSON(b []byte) ([]byte, bool) {
	if e.Cursor != 0 || e.Message != nil || e.Reason != "" || e.Data != "" || e.MIME != "" ||
		e.Tokens != nil || e.Dropped != 0 || e.SummaryTokens != 0 || e.Compaction != nil ||
		e.CallID != "" || e.Name != "" || len(e.Arguments) != 0 || !e.ExpiresAt.IsZero() ||
		e.Approved != nil || e.By != "" {
		return b, false
	}
	b = append(b, `{"conversation_id":`...)
	b = jsonw.AppendString(b, e.ConversationID, true)
	b = append(b, `,"date":"`...)
	b = e.Date.UTC().AppendFormat(b, TimeFormat)
	b = append(b, `","type":`...)
	b = jsonw.AppendString(b, e.Type, true)
	if e.ReplyTo != "" {
		b = append(b, `,"reply_to":`...)
		b = jsonw.AppendString(b, e.ReplyTo, true)
	}
	if e.Text != "" {
		b = append(b, `,"text":`...)
		b = jsonw.AppendString(b, e.Text, true)
	}
	return append(b, '}'), true
}
