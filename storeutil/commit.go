package storeutil

import (
	"errors"

	"github.com/agentik/agentik"
)

// Numbered is a write numbered from its conversation's counters and put in
// its stored form, for a store to insert in one transaction: its journal
// messages with their seqs, its events with their payloads, its memory
// entries with their orders. Numbering changes nothing the caller passed;
// Committed hands the numbers back once the transaction committed. A store
// whose transaction runs again numbers the write again.
type Numbered struct {
	Events []NumberedEvent
	Memory []NumberedEntry
	// NextSeq and NextOrd are the conversation's counters after the write.
	NextSeq, NextOrd int64
	// Head is the conversation's head after the write; HeadMoved reports
	// that it differs from the head before.
	Head      int64
	HeadMoved bool

	w *agentik.Write
}

// NumberedEvent is one event of a write as stored.
type NumberedEvent struct {
	// Event is in the write's conversation, without a cursor; its Message,
	// if any, is a numbered copy without image data.
	Event   agentik.Event
	Payload string // the event's JSON
	// MessagePayload is the stored JSON of the event's message (""
	// without one).
	MessagePayload string
	// Images is the images column of the message and of its event: ""
	// when its content is all inline.
	Images string
	// Closes is the user message whose turn the event closes, or "".
	Closes string
	// Cursor is set by the store once the event is inserted.
	Cursor int64
}

// NumberedEntry is one working-memory entry of a write as stored.
type NumberedEntry struct {
	Order   int64
	Payload string // the entry's JSON
	Images  string // its images column: "" when its content is all inline
}

// Number numbers w from nextSeq and nextOrd, the first journal seq and
// memory order it takes, places its messages in the tree whose head is
// head (see agentik.Write), and encodes it without the image data that
// images (ExtractImages of w) holds apart. A head_moved event or a parent
// naming no message is ENotFound.
func Number(w *agentik.Write, images *WriteImages, nextSeq, nextOrd, head int64) (*Numbered, error) {
	n := &Numbered{w: w, Events: make([]NumberedEvent, len(w.Events)), Memory: make([]NumberedEntry, len(w.Memory))}
	before := head
	tip := head // what the next message follows
	if w.Detached {
		if w.Parent >= nextSeq {
			return nil, agentik.Errorf(agentik.ENotFound, "parent %d is no message of this conversation", w.Parent)
		}
		tip = w.Parent
	}
	for i, ev := range w.Events {
		e := &n.Events[i]
		ev.ConversationID = w.ConversationID
		ev.Cursor = 0
		if ev.Type == agentik.EvHeadMoved {
			if ev.To < 0 || ev.To >= nextSeq {
				return nil, agentik.Errorf(agentik.ENotFound, "seq %d is no message of this conversation", ev.To)
			}
			ev.From, head = head, ev.To
			if !w.Detached {
				tip = head
			}
		}
		if ev.Message != nil {
			// A copy: the caller's Message is only updated after the
			// transaction commits.
			m := *ev.Message
			m.ConversationID = w.ConversationID
			m.Seq = nextSeq
			nextSeq++
			m.Parent, tip = tip, m.Seq
			if !w.Detached {
				head = tip
			}
			// The message and its event are stored without image data.
			m.Content, e.Images = images.Message(i, &m)
			payload, err := EncodeMessage(&m)
			if err != nil {
				return nil, err
			}
			e.MessagePayload = string(payload)
			ev.Message = &m
		}
		e.Closes = Closes(&ev)
		payload, err := agentik.MarshalEvent(&ev)
		if err != nil {
			return nil, agentik.WrapError(agentik.EInternal, "encode event", err)
		}
		e.Event, e.Payload = ev, string(payload)
	}
	for i, entry := range w.Memory {
		entry.Order = nextOrd
		nextOrd++
		var refs string
		entry.Message.Content, refs = images.Memory(i, &entry)
		payload, err := agentik.MarshalMemoryEntry(&entry)
		if err != nil {
			return nil, agentik.WrapError(agentik.EInternal, "encode memory entry", err)
		}
		n.Memory[i] = NumberedEntry{Order: entry.Order, Payload: string(payload), Images: refs}
	}
	n.NextSeq, n.NextOrd = nextSeq, nextOrd
	n.Head, n.HeadMoved = head, head != before
	return n, nil
}

// Committed hands the numbers back to the caller once the write committed
// — the seqs into its events' Messages, the orders into its Memory — and
// returns its events as committed, with the cursors the store set.
func (n *Numbered) Committed() []agentik.Event {
	w := n.w
	out := make([]agentik.Event, len(w.Events))
	for i, ev := range w.Events {
		ev.ConversationID = w.ConversationID
		ev.Cursor = n.Events[i].Cursor
		if ev.Message != nil {
			ev.Message.ConversationID = w.ConversationID
			ev.Message.Seq = n.Events[i].Event.Message.Seq
			ev.Message.Parent = n.Events[i].Event.Message.Parent
		}
		if ev.Type == agentik.EvHeadMoved {
			ev.From = n.Events[i].Event.From
		}
		out[i] = ev
	}
	for i := range w.Memory {
		w.Memory[i].Order = n.Memory[i].Order
	}
	return out
}

// Touched is the touched agent event of a write that touches its
// conversation, whose owner is owner; nil for a write that does not.
func Touched(w *agentik.Write, owner string) *agentik.AgentEvent {
	if w.Touch.IsZero() {
		return nil
	}
	at := agentik.TimeOf(w.Touch.Time)
	return &agentik.AgentEvent{
		Date:           at,
		Type:           agentik.AgentEvTouched,
		ConversationID: w.ConversationID,
		UpdatedAt:      at,
		Owner:          owner,
	}
}

// Created checks a conversation to create, puts its times in the stored
// precision and returns the created agent event stored with it.
func Created(c *agentik.ConversationRecord) (agentik.AgentEvent, error) {
	if c.ID == "" {
		return agentik.AgentEvent{}, agentik.Errorf(agentik.EInvalid, "create conversation: empty id")
	}
	c.CreatedAt = agentik.TimeOf(c.CreatedAt.Time)
	c.UpdatedAt = agentik.TimeOf(c.UpdatedAt.Time)
	return agentik.AgentEvent{
		Date:           c.CreatedAt,
		Type:           agentik.AgentEvCreated,
		Conversation:   ConversationInfo(*c),
		ConversationID: c.ID,
		Owner:          c.Owner,
	}, nil
}

// Renamed is the renamed agent event of conversation id, of owner, dated
// at.
func Renamed(id, title, owner string, at agentik.Time) agentik.AgentEvent {
	return agentik.AgentEvent{
		Date:           agentik.TimeOf(at.Time),
		Type:           agentik.AgentEvRenamed,
		ConversationID: id,
		Title:          title,
		Owner:          owner,
	}
}

// Deleted is the deleted agent event of conversation id, of owner, dated
// at.
func Deleted(id, owner string, at agentik.Time) agentik.AgentEvent {
	return agentik.AgentEvent{
		Date:           agentik.TimeOf(at.Time),
		Type:           agentik.AgentEvDeleted,
		ConversationID: id,
		Owner:          owner,
	}
}

// Unavailable marks a database failure: the caller sees "the store is
// unavailable" (503), operators see the driver's error in the chain.
func Unavailable(err error) error {
	return agentik.WrapError(agentik.EUnavailable, "the store is unavailable", err)
}

// Classify turns an error from a store operation into one with a code from
// the agentik vocabulary: an error that carries one keeps it; conflict,
// which the store tells from its driver's error, is EConflict ("already
// exists"); anything else is EUnavailable.
func Classify(err error, conflict bool) error {
	var ae *agentik.Error
	if errors.As(err, &ae) {
		return err
	}
	if conflict {
		return agentik.WrapError(agentik.EConflict, "already exists", err)
	}
	return Unavailable(err)
}
