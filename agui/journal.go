package agui

import (
	"encoding/json"

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

// seenIDs returns every message id the client may hold for journal: the
// journal ids (what MESSAGES_SNAPSHOT hands out) and the AG-UI ids of the
// user messages stored through this facade.
func seenIDs(journal []agentik.Message) map[string]bool {
	seen := make(map[string]bool, len(journal))
	for _, m := range journal {
		seen[m.ID] = true
		if m.Context != nil && m.Context.Metadata[MetaMessageID] != "" {
			seen[m.Context.Metadata[MetaMessageID]] = true
		}
		for _, s := range sentMessages(m) {
			seen[s.ID] = true
		}
	}
	return seen
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

// waitingCalls returns the ids of the tool calls the conversation's last
// turn may still wait for: the calls of the journal's last tool round that
// have no result, unless the round was followed by a user message (which
// abandons a waiting turn) or by a message that closed its turn. The engine
// has the final word: it refuses results for calls it does not wait for.
func waitingCalls(journal []agentik.Message) map[string]bool {
	last := -1
	for i := len(journal) - 1; i >= 0; i-- {
		if journal[i].Type == agentik.MsgToolCall {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	turn := journal[last].ReplyTo
	waiting := map[string]bool{}
	for i := last; i >= 0 && journal[i].Type == agentik.MsgToolCall; i-- {
		waiting[journal[i].CallID] = true
	}
	for _, m := range journal[last+1:] {
		switch {
		case m.Type == agentik.MsgUser:
			return nil
		case m.ReplyTo == turn && m.ClosesTurn():
			return nil
		case m.Type == agentik.MsgToolResult:
			delete(waiting, m.CallID)
		}
	}
	return waiting
}

// behind reports whether the client's messages end at a user message the
// journal already holds something to show after: the client lacks the
// answer. It dropped it (CopilotKit's Regenerate cuts the thread after the
// user message and runs again) or never got it (a run lost on the way, a
// stale tab). AG-UI has no regenerate signal, so the two cannot be told
// apart; either way the run has nothing new to answer, and the client is
// sent the journal (MESSAGES_SNAPSHOT) instead of an empty run, without a
// model call. (AG-UI's own LangGraph integration treats this input as a
// client that is behind, too.)
func behind(journal []agentik.Message, in RunInput) bool {
	if len(in.Messages) == 0 {
		return false
	}
	last := in.Messages[len(in.Messages)-1]
	if last.Role != RoleUser {
		return false
	}
	at := -1
	for i, m := range journal {
		if m.Type != agentik.MsgUser {
			continue
		}
		if m.ID == last.ID || m.Context != nil && m.Context.Metadata[MetaMessageID] == last.ID {
			at = i
		}
		for _, s := range sentMessages(m) {
			if s.ID == last.ID {
				at = i
			}
		}
	}
	if at < 0 {
		return false
	}
	for _, m := range journal[at+1:] {
		if m.Type != agentik.MsgError { // errors are not in a snapshot
			return true
		}
	}
	return false
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
