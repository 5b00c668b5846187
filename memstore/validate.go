package memstore

import "github.com/agentik/agentik"

// validateWrite refuses a Write the journal cannot take: events that are not
// durable, journal events without their message (or the reverse), messages
// without an id or belonging to another conversation. Errors are EInvalid.
// The same rules hold in every store (storetest checks them); they would
// belong in the domain as a Write.Validate method.
func validateWrite(w agentik.Write) error {
	if w.ConversationID == "" {
		return agentik.Errorf(agentik.EInvalid, "commit: no conversation id")
	}
	if w.DropMemoryThrough < 0 {
		return agentik.Errorf(agentik.EInvalid, "commit: negative memory order")
	}
	for _, ev := range w.Events {
		if !agentik.Durable(ev.Type) {
			return agentik.Errorf(agentik.EInvalid, "commit: event type %q is not durable", ev.Type)
		}
		if ev.ConversationID != "" && ev.ConversationID != w.ConversationID {
			return agentik.Errorf(agentik.EInvalid, "commit: event of conversation %s in a write to %s", ev.ConversationID, w.ConversationID)
		}
		carries := journalEvent(ev.Type)
		switch {
		case carries && ev.Message == nil:
			return agentik.Errorf(agentik.EInvalid, "commit: %s event without its message", ev.Type)
		case !carries && ev.Message != nil:
			return agentik.Errorf(agentik.EInvalid, "commit: %s event cannot carry a message", ev.Type)
		case ev.Message == nil:
			continue
		}
		m := ev.Message
		if m.ID == "" {
			return agentik.Errorf(agentik.EInvalid, "commit: message without id")
		}
		if m.ConversationID != "" && m.ConversationID != w.ConversationID {
			return agentik.Errorf(agentik.EInvalid, "commit: message of conversation %s in a write to %s", m.ConversationID, w.ConversationID)
		}
		switch m.Type {
		case agentik.MsgUser, agentik.MsgAssistant, agentik.MsgToolCall, agentik.MsgToolResult, agentik.MsgError:
		default:
			return agentik.Errorf(agentik.EInvalid, "commit: unknown message type %q", m.Type)
		}
	}
	return nil
}

// journalEvent reports whether events of type t announce a journal message.
func journalEvent(t string) bool {
	switch t {
	case agentik.EvUserMessage, agentik.EvAssistantMessage, agentik.EvToolCall,
		agentik.EvToolResult, agentik.EvToolFailed, agentik.EvError:
		return true
	}
	return false
}
