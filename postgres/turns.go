package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// remoteTurn is what a Bus knows of a turn that another process runs, from
// that process's online events: which message it answers, the phase of the
// current model call and its text so far.
type remoteTurn struct {
	replyTo string
	phase   string
	partial strings.Builder
	at      time.Time // last update, for expireTurns
	// Heard while nobody here followed the conversation (item.raw): the
	// working entry and the current phase's append_text entries, not
	// decoded yet (settle).
	working string
	texts   []string
}

// deliverRemote tracks and delivers another process's online event. One
// read by its head only (it.raw; onlineHead) is decoded whole first when
// someone here follows its conversation by now; else it is tracked as it
// is, and its fields are read if the turn ever is (settle). The choice is
// made under turnMu, which join holds while it subscribes.
func (b *Bus) deliverRemote(it item) {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	if it.raw != "" && !b.unfollowed(it.ev.ConversationID) {
		ev, ok := decodeRaw(it.raw, it.ev.ConversationID, it.ev.Type)
		if !ok {
			return
		}
		it.ev, it.raw = ev, ""
	}
	b.trackLocked(it.ev, false, it.raw)
}

// trackLocked updates the turns other processes run with one online event
// and delivers it here; b.turnMu is held, so a join sees either the state
// before the event and then the event, or the state after it. Events of
// this process (local) only end what another process was seen running: the
// turn has moved here, and the engine knows its own turns.
//
// While this process runs a turn of the conversation (from its own working
// to its own end, or to its parking for approvals), another process's online events other than end are not
// delivered: only the lease holder runs a conversation's turns, so they
// come from a turn that ended there before this process took the lease,
// heard late. A late delta, which names no turn, would join the local
// turn's text, and a late working or phase start would take the local
// turn's phase away from a door that follows it. The late end is still
// delivered: a client waiting for that turn's end gets it.
//
// A remote event given with its entry (raw: nobody here follows the
// conversation; deliverRemote) is not delivered, and is kept as it is
// where its fields matter.
func (b *Bus) trackLocked(ev agentik.Event, local bool, raw string) {
	id := ev.ConversationID
	switch _, running := b.mine[id]; {
	case local && ev.Type == agentik.EvWorking:
		b.mine[id] = ev.ReplyTo
	case local && (ev.Type == agentik.EvEnd || ev.Type == agentik.EvConversationClosing || ev.Type == agentik.EvAwaitingApproval):
		delete(b.mine, id) // a parked turn may go on elsewhere once answered
	case !local && running && ev.Type != agentik.EvEnd && ev.Type != agentik.EvConversationClosing:
		return
	}
	if raw == "" {
		defer b.local.Publish(ev)
	}
	t := b.turns[id]
	switch {
	case ev.Type == agentik.EvEnd || ev.Type == agentik.EvConversationClosing:
		delete(b.turns, id)
		return
	case local:
		if ev.Type == agentik.EvWorking {
			delete(b.turns, id)
		}
		return
	case ev.Type == agentik.EvWorking:
		t = &remoteTurn{replyTo: ev.ReplyTo, working: raw}
		b.turns[id] = t
	case t == nil:
		return // a turn that started before this process listened
	case ev.Type == agentik.EvStartReasoning:
		t.newPhase(agentik.DeltaReasoning)
	case ev.Type == agentik.EvStartResponse:
		t.newPhase(agentik.DeltaText)
	case ev.Type == agentik.EvAppendText && raw != "":
		t.texts = append(t.texts, raw)
	case ev.Type == agentik.EvAppendText:
		t.settle(id)
		t.partial.WriteString(ev.Text)
	}
	t.at = time.Now()
}

func (t *remoteTurn) newPhase(phase string) {
	t.phase = phase
	t.partial.Reset()
	t.texts = nil
}

// settle decodes the entries the turn of conversation conv was heard with
// while nobody here followed it. An entry that does not decode whole as
// what its head said (decodeRaw) adds nothing.
func (t *remoteTurn) settle(conv string) {
	if t.working != "" {
		if ev, ok := decodeRaw(t.working, conv, agentik.EvWorking); ok {
			t.replyTo = ev.ReplyTo
		}
		t.working = ""
	}
	for _, e := range t.texts {
		if ev, ok := decodeRaw(e, conv, agentik.EvAppendText); ok {
			t.partial.WriteString(ev.Text)
		}
	}
	t.texts = nil
}

// snapshot returns what is known of the turn of conversation conv,
// decoding the entries it was heard with first (settle).
func (t *remoteTurn) snapshot(conv string) agentik.RemoteTurn {
	t.settle(conv)
	return agentik.RemoteTurn{ReplyTo: t.replyTo, Phase: t.phase, Partial: t.partial.String()}
}

// join subscribes to a conversation and returns the turn another process
// runs in it, at the same point of the stream.
func (b *Bus) join(conversationID string) (agentik.Subscriber[agentik.Event], agentik.RemoteTurn) {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	sub := b.Subscribe(conversationID)
	if t := b.turns[conversationID]; t != nil {
		return sub, t.snapshot(conversationID)
	}
	return sub, agentik.RemoteTurn{}
}

// running returns the turn another process runs in the conversation.
func (b *Bus) running(conversationID string) (agentik.RemoteTurn, bool) {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	if t := b.turns[conversationID]; t != nil {
		return t.snapshot(conversationID), true
	}
	return agentik.RemoteTurn{}, false
}

// notHeardRunning returns the conversations of ids whose turn no other
// process was heard running (an online event of it) since the given time.
func (b *Bus) notHeardRunning(ids []string, since time.Time) []string {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	var out []string
	for _, id := range ids {
		if t := b.turns[id]; t == nil || t.at.Before(since) {
			out = append(out, id)
		}
	}
	return out
}

// expireTurns forgets the turns of conversations that have no open turn
// (open lists those that have, as read by a query started at since) and
// that heard nothing since: their end was lost.
func (b *Bus) expireTurns(open []string, since time.Time) {
	b.turnMu.Lock()
	defer b.turnMu.Unlock()
	for id, t := range b.turns {
		if t.at.Before(since) && !slices.Contains(open, id) {
			delete(b.turns, id)
		}
	}
}

// queue reads a conversation's open turns and the journal of the first one,
// in one query (one round trip on every turn of the lease holder). The open
// turns after the first carry their identity only (TurnQueue).
func (s *Store) queue(ctx context.Context, conversationID string) (agentik.TurnQueue, error) {
	var qr queueRows
	err := s.read(ctx, "open turns of "+conversationID, func(q querier) error {
		qr = queueRows{conv: conversationID}
		if err := queryEach(ctx, q, qr.scan, qQueue, conversationID); err != nil {
			return err
		}
		return qr.restore(ctx, q)
	})
	if err != nil {
		return agentik.TurnQueue{}, err
	}
	return qr.turnQueue(), nil
}

// queueRows collects the rows of qQueue.
type queueRows struct {
	conv       string
	head       int64
	later      []agentik.Message // the open turns after the first
	msgs       []agentik.Message // the first open turn, then its journal
	withImages []storeutil.Pending
}

func (qr *queueRows) scan(rows pgx.Rows) error {
	var part int
	var seq int64
	var id string
	var payload []byte
	var refs *string
	if err := rows.Scan(&part, &seq, &id, &payload, &refs); err != nil {
		return err
	}
	if part == 2 {
		qr.head = seq
		return nil
	}
	if part == 0 {
		qr.later = append(qr.later, agentik.Message{ID: id, ConversationID: qr.conv, Seq: seq, Type: agentik.MsgUser})
		return nil
	}
	if payload == nil {
		return errors.New("journal entry without payload")
	}
	m, err := storeutil.DecodeMessage(payload)
	if err != nil {
		return err
	}
	if refs != nil && *refs != "" {
		qr.withImages = append(qr.withImages, storeutil.Pending{I: len(qr.msgs), Refs: *refs})
	}
	qr.msgs = append(qr.msgs, m)
	return nil
}

// restore puts the images back into the messages that refer to them.
// Messages whose images are gone belong to a conversation deleted since
// the query: nothing is open any more.
func (qr *queueRows) restore(ctx context.Context, q querier) error {
	if len(qr.withImages) == 0 {
		return nil
	}
	missing, err := restoreImages(ctx, q, qr.withImages, func(i int) []agentik.Content { return qr.msgs[i].Content })
	if len(missing) > 0 {
		qr.later, qr.msgs, qr.head = nil, nil, 0
	}
	return err
}

func (qr *queueRows) turnQueue() agentik.TurnQueue {
	q := agentik.TurnQueue{Open: []agentik.Message{}}
	if len(qr.msgs) > 0 {
		q.Open = append(append(q.Open, qr.msgs[0]), qr.later...)
		q.Turn = qr.msgs[1:]
		if len(q.Turn) == 0 {
			q.Turn = nil
		}
		q.Head = qr.head
	}
	return q
}
