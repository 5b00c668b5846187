package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// Commit applies w in one transaction: journal messages (seqs from the
// conversation's counter, under its row lock), their events (cursors from
// the events counter, see allocate), memory changes, token totals and the
// touch. On success the assigned seqs are written into the events' Messages
// and the assigned orders into w.Memory; on error nothing is stored and
// nothing the caller passed is modified.
func (s *Store) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	op := "commit " + w.ConversationID
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	out := make([]agentik.Event, len(w.Events))
	seqs := make([]int64, len(w.Events))
	orders := make([]int64, len(w.Memory))
	var touched *agentik.AgentEvent

	err := s.write(ctx, op, func(tx pgx.Tx) error {
		var owner string
		var nextSeq, nextOrd int64
		err := tx.QueryRow(ctx, qCommitConversation, w.ConversationID).Scan(&owner, &nextSeq, &nextOrd)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(w.ConversationID)
		}
		if err != nil {
			return err
		}

		var batch pgx.Batch
		payloads := make([]string, len(w.Events))
		for i, ev := range w.Events {
			ev.ConversationID = w.ConversationID
			ev.Cursor = 0
			if ev.Message != nil {
				// A copy: the caller's Message is only updated after the
				// transaction commits.
				m := *ev.Message
				m.ConversationID = w.ConversationID
				m.Seq = nextSeq
				seqs[i] = nextSeq
				nextSeq++
				mp, err := json.Marshal(&m)
				if err != nil {
					return agentik.WrapError(agentik.EInternal, "encode message", err)
				}
				batch.Queue(qInsertMessage, m.ConversationID, m.Seq, m.ID, m.Type, m.Date.Time, m.ReplyTo, string(mp))
				ev.Message = &m
			}
			if replyTo := closes(&ev); replyTo != "" {
				batch.Queue(qCloseTurn, replyTo, w.ConversationID)
			}
			p, err := json.Marshal(ev)
			if err != nil {
				return agentik.WrapError(agentik.EInternal, "encode event", err)
			}
			payloads[i] = string(p)
		}
		if w.DropMemoryThrough > 0 {
			batch.Queue(qDropMemory, w.ConversationID, w.DropMemoryThrough)
		}
		for i, e := range w.Memory {
			e.Order = nextOrd
			orders[i] = nextOrd
			nextOrd++
			p, err := json.Marshal(e)
			if err != nil {
				return agentik.WrapError(agentik.EInternal, "encode memory entry", err)
			}
			batch.Queue(qInsertMemory, w.ConversationID, e.Order, string(p))
		}
		touch := !w.Touch.IsZero()
		batch.Queue(qUpdateAfterCommit, nextSeq, nextOrd, w.Tokens.Input, w.Tokens.Output, touch, w.Touch.Time, w.ConversationID)
		if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
			return err
		}

		// The cursor counters are taken last: their locks serialise every
		// writer of the database, so they are held only for the inserts
		// and the commit.
		if len(w.Events) > 0 {
			first, err := allocate(ctx, tx, "events", len(w.Events))
			if err != nil {
				return err
			}
			var evBatch pgx.Batch
			for i, ev := range w.Events {
				out[i].Cursor = first + int64(i)
				evBatch.Queue(qInsertEvent, out[i].Cursor, w.ConversationID, ev.Type, ev.Date.Time, payloads[i])
			}
			if err := tx.SendBatch(ctx, &evBatch).Close(); err != nil {
				return err
			}
		}
		if touch {
			at := agentik.TimeOf(w.Touch.Time)
			touched = &agentik.AgentEvent{
				Date:           at,
				Type:           agentik.AgentEvTouched,
				ConversationID: w.ConversationID,
				UpdatedAt:      at,
				Owner:          owner,
			}
			return insertAgentEvent(ctx, tx, touched)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}

	// Committed: hand the assigned numbers back to the caller.
	for i, ev := range w.Events {
		cursor := out[i].Cursor
		ev.ConversationID = w.ConversationID
		ev.Cursor = cursor
		if ev.Message != nil {
			ev.Message.ConversationID = w.ConversationID
			ev.Message.Seq = seqs[i]
		}
		out[i] = ev
	}
	for i := range w.Memory {
		w.Memory[i].Order = orders[i]
	}
	return out, touched, nil
}

// closes returns the user message whose turn ev closes (SPEC §2), or "". An
// interrupted assistant message alone does not close it: the turn stays open
// until its interrupted event.
func closes(ev *agentik.Event) string {
	switch {
	case ev.Message != nil && ev.Message.ClosesTurn():
		return ev.Message.ReplyTo
	case ev.Type == agentik.EvInterrupted:
		return ev.ReplyTo
	}
	return ""
}
