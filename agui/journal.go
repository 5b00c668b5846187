package agui

import (
	"encoding/json"
	"slices"

	"github.com/agentik/agentik"
)

// Metadata keys the facade sets on the user messages it stores. They are how
// the facade recognises, from the journal alone, what a client already sent:
// no mapping table exists anywhere.
const (
	// MetaMessageID is the AG-UI id of a stored user message.
	MetaMessageID = "agui_message_id"
	// MetaMessages lists, for a stored message that holds several AG-UI
	// user messages of one run, each one's id and number of content parts
	// (JSON: [{"id","parts"}]), in order.
	MetaMessages = "agui_messages"
	// MetaContextParts is set ("1") when the last content part of a stored
	// user message is the run's input.context rendered for the model.
	MetaContextParts = "agui_context"
	// Channel is the Origin.Channel of stored user messages.
	Channel = "agui"
)

// clientIDs returns the AG-UI ids a client may know a stored message by
// besides its journal id (history.Options.IDs): those of the user messages
// stored through this facade, one per AG-UI message a stored one holds.
func clientIDs(m agentik.Message) []string {
	var ids []string
	if m.Context != nil && m.Context.Metadata[MetaMessageID] != "" {
		ids = append(ids, m.Context.Metadata[MetaMessageID])
	}
	for _, s := range sentMessages(m) {
		if !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// sentMessage is one AG-UI user message of a stored message (MetaMessages).
type sentMessage struct {
	ID    string `json:"id"`
	Parts int    `json:"parts"`
}

// sentMessages returns the AG-UI messages a stored user message holds when
// it holds several (nil otherwise, or when the record does not add up).
func sentMessages(m agentik.Message) []sentMessage {
	if m.Context == nil || m.Context.Metadata[MetaMessages] == "" {
		return nil
	}
	var split []sentMessage
	if json.Unmarshal([]byte(m.Context.Metadata[MetaMessages]), &split) != nil {
		return nil
	}
	n := 0
	for _, s := range split {
		if s.Parts < 0 {
			return nil
		}
		n += s.Parts
	}
	if n > len(m.Content) {
		return nil
	}
	return split
}

// snapshotMessages renders a journal as AG-UI messages for
// MESSAGES_SNAPSHOT. User messages keep the AG-UI id they were sent with;
// everything else carries its journal id. Consecutive tool calls of one turn
// join the assistant message before them (or a new one with the first
// call's id); errors are audit records and are left out.
func snapshotMessages(journal []agentik.Message) []Message {
	out := make([]Message, 0, len(journal))
	lastAssistant := -1 // index in out of the assistant message tool calls may join
	var lastReplyTo string
	for _, m := range journal {
		switch m.Type {
		case agentik.MsgUser:
			id, parts := m.ID, m.Content
			if m.Context != nil {
				if a := m.Context.Metadata[MetaMessageID]; a != "" {
					id = a
				}
				if m.Context.Metadata[MetaContextParts] != "" && len(parts) > 1 {
					parts = parts[:len(parts)-1]
				}
			}
			if split := sentMessages(m); split != nil {
				for _, s := range split {
					out = append(out, Message{ID: s.ID, Role: RoleUser, Content: userContent(parts[:s.Parts])})
					parts = parts[s.Parts:]
				}
			} else {
				out = append(out, Message{ID: id, Role: RoleUser, Content: userContent(parts)})
			}
			lastAssistant = -1
		case agentik.MsgAssistant:
			if m.Reasoning != "" {
				out = append(out, Message{ID: m.ID + "-reasoning", Role: RoleReasoning, Content: jsonString(m.Reasoning)})
			}
			msg := Message{ID: m.ID, Role: RoleAssistant}
			if text := agentik.JoinText(m.Content); text != "" {
				msg.Content = jsonString(text)
			}
			out = append(out, msg)
			lastAssistant, lastReplyTo = len(out)-1, m.ReplyTo
		case agentik.MsgToolCall:
			if lastAssistant < 0 || lastReplyTo != m.ReplyTo {
				out = append(out, Message{ID: m.ID, Role: RoleAssistant})
				lastAssistant, lastReplyTo = len(out)-1, m.ReplyTo
			}
			out[lastAssistant].ToolCalls = append(out[lastAssistant].ToolCalls, ToolCall{
				ID: m.CallID, Type: "function", Function: FunctionCall{Name: m.Name, Arguments: string(m.Arguments)}})
		case agentik.MsgToolResult:
			text := agentik.JoinText(m.Content)
			msg := Message{ID: m.ID, Role: RoleTool, ToolCallID: m.CallID, Content: jsonString(text)}
			if m.IsError {
				msg.Error = text
			}
			out = append(out, msg)
			lastAssistant = -1
		}
	}
	return out
}

// userContent is a plain string for text-only messages (what clients
// render most simply) and content parts when images are present.
func userContent(parts []agentik.Content) json.RawMessage {
	if !agentik.HasImage(parts) {
		return jsonString(agentik.JoinText(parts))
	}
	type source struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MIMEType string `json:"mimeType"`
	}
	type part struct {
		Type   string  `json:"type"`
		Text   string  `json:"text,omitempty"`
		Source *source `json:"source,omitempty"`
	}
	out := make([]part, 0, len(parts))
	for _, p := range parts {
		if p.Type == agentik.ContentImage {
			out = append(out, part{Type: "image", Source: &source{Type: "data", Value: p.Data, MIMEType: p.MIME}})
		} else {
			out = append(out, part{Type: "text", Text: p.Text})
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
