package engine

import (
	"unicode/utf8"

	"github.com/agentik/agentik"
)

// mender repairs a conversation stream's text after the bus dropped deltas
// its reader had no room for (the subscriber's EvDeltasLost marker): from
// the marker on, the response's deltas are held back, and when its message
// is stored the reader gets, just before it, the text it has not had yet
// as one append_text (after the start event it missed, if it did). Every
// front door therefore streams a response without a gap or a repeat,
// however slow its reader was. It counts bytes only: what a reader was
// handed before the loss is a prefix of the stored text.
type mender struct {
	lost      bool
	phase     string // the start event the reader last got
	text      int    // bytes of the model call's answer handed out
	reasoning int    // bytes of its reasoning handed out
}

// pass returns whether the reader gets sh, and what it gets before it.
func (m *mender) pass(sh *agentik.Shared[agentik.Event]) (bool, []*agentik.Shared[agentik.Event]) {
	switch sh.Type {
	case agentik.EvDeltasLost:
		m.lost = true
		return false, nil
	case agentik.EvStartResponse, agentik.EvStartReasoning:
		m.phase = sh.Type
		return true, nil
	case agentik.EvAppendText:
		if m.lost {
			return false, nil
		}
		ev, err := sh.Value()
		if err != nil {
			return true, nil
		}
		if m.phase == agentik.EvStartReasoning {
			m.reasoning += len(ev.Text)
		} else {
			m.text += len(ev.Text)
		}
		return true, nil
	case agentik.EvAppendImage:
		return !m.lost, nil
	}
	switch sh.Type {
	case agentik.EvAssistantMessage, agentik.EvToolCall, agentik.EvError, agentik.EvInterrupted,
		agentik.EvEnd, agentik.EvConversationClosing:
	default:
		// working, a user message queued meanwhile, approvals: the model
		// call's text goes on.
		return true, nil
	}
	// What ends the model call's text: its message, a call, the turn's end.
	var before []*agentik.Shared[agentik.Event]
	if m.lost && sh.Type == agentik.EvAssistantMessage {
		if ev, err := sh.Value(); err == nil && ev.Message != nil {
			before = m.rest(ev.Message)
		}
	}
	*m = mender{}
	return true, before
}

// rest is what a reader that lost deltas has not had of msg.
func (m *mender) rest(msg *agentik.Message) []*agentik.Shared[agentik.Event] {
	var out []*agentik.Shared[agentik.Event]
	add := func(typ, text string) {
		ev := agentik.Event{ConversationID: msg.ConversationID, Date: agentik.Now(), Type: typ, ReplyTo: msg.ReplyTo, Text: text}
		if typ == agentik.EvAppendText {
			ev.ReplyTo = ""
		}
		out = append(out, agentik.NewShared(0, typ, ev))
	}
	more := func(phase, full string, had int) {
		if had >= len(full) || !utf8.RuneStart(full[had]) {
			return
		}
		if m.phase != phase {
			add(phase, "")
			m.phase = phase
		}
		add(agentik.EvAppendText, full[had:])
	}
	if m.text == 0 {
		more(agentik.EvStartReasoning, msg.Reasoning, m.reasoning)
	}
	more(agentik.EvStartResponse, agentik.JoinText(msg.Content), m.text)
	return out
}
