package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

// Commit applies w in one write transaction: journal messages (seqs from the
// conversation's counter), their events (cursors from AUTOINCREMENT), memory
// changes, token totals and the touch. On success the assigned seqs are
// written into the events' Messages and the assigned orders into w.Memory;
// on error nothing is stored and nothing the caller passed is modified.
func (s *Store) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	op := "commit " + w.ConversationID
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	out := make([]agentik.Event, len(w.Events))
	seqs := make([]int64, len(w.Events))
	orders := make([]int64, len(w.Memory))
	var touched *agentik.AgentEvent
	images := storeutil.ExtractImages(&w)
	msgs := 0 // journal messages the write adds
	for _, ev := range w.Events {
		if ev.Message != nil {
			msgs++
		}
	}

	err := s.write(ctx, op, func(tx *wtx) error {
		var owner, agent string
		var nextSeq, nextOrd int64
		touch := !w.Touch.IsZero()
		err := tx.QueryRowContext(ctx, qCommitConversation, msgs, len(w.Memory), w.Tokens.Input, w.Tokens.Output,
			touch, ms(w.Touch), w.ConversationID).Scan(&owner, &agent, &nextSeq, &nextOrd)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(w.ConversationID)
		}
		if err != nil {
			return err
		}
		nextSeq -= int64(msgs) // the first of the claimed numbers
		nextOrd -= int64(len(w.Memory))

		for i, ev := range w.Events {
			ev.ConversationID = w.ConversationID
			ev.Cursor = 0
			var evImages any
			if ev.Message != nil {
				// A copy: the caller's Message is only updated after the
				// transaction commits.
				m := *ev.Message
				m.ConversationID = w.ConversationID
				m.Seq = nextSeq
				seqs[i] = nextSeq
				nextSeq++
				// The message and its event are stored without image data.
				var refs string
				m.Content, refs = images.Message(i, &m)
				if err := insertMessage(ctx, tx, &m, column(refs)); err != nil {
					return err
				}
				ev.Message = &m
				evImages = refs
			}
			if err := closeTurn(ctx, tx, w.ConversationID, &ev); err != nil {
				return err
			}
			payload, err := agentik.MarshalEvent(&ev)
			if err != nil {
				return agentik.WrapError(agentik.EInternal, "encode event", err)
			}
			res, err := tx.ExecContext(ctx, qInsertEvent, w.ConversationID, ev.Type, ms(ev.Date), string(payload), evImages)
			if err != nil {
				return err
			}
			if out[i].Cursor, err = res.LastInsertId(); err != nil {
				return err
			}
		}

		if w.DropMemoryThrough > 0 {
			if _, err := tx.ExecContext(ctx, qDropMemory, w.ConversationID, w.DropMemoryThrough); err != nil {
				return err
			}
		}
		for i, e := range w.Memory {
			e.Order = nextOrd
			orders[i] = nextOrd
			nextOrd++
			var refs string
			e.Message.Content, refs = images.Memory(i, &e)
			payload, err := agentik.MarshalMemoryEntry(&e)
			if err != nil {
				return agentik.WrapError(agentik.EInternal, "encode memory entry", err)
			}
			if _, err := tx.ExecContext(ctx, qInsertMemory, w.ConversationID, e.Order, string(payload), column(refs)); err != nil {
				return err
			}
		}
		if err := storeImages(ctx, tx, images, w.ConversationID); err != nil {
			return err
		}
		for k, v := range w.State {
			var err error
			if v == nil {
				_, err = tx.ExecContext(ctx, qDeleteState, w.ConversationID, k)
			} else {
				_, err = tx.ExecContext(ctx, qSetState, w.ConversationID, k, string(v))
			}
			if err != nil {
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
			return insertAgentEvent(ctx, tx, agent, touched)
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

// insertMessage stores m, whose content is already in its stored form, with
// its images column.
func insertMessage(ctx context.Context, tx *wtx, m *agentik.Message, images any) error {
	payload, err := storeutil.EncodeMessage(m)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, qInsertMessage,
		m.ConversationID, m.Seq, m.ID, m.Type, ms(m.Date), m.ReplyTo, string(payload), images)
	return err
}

// closeTurn maintains the closed flag of the user message ev replies to, when
// ev closes its turn (SPEC §2). An interrupted assistant message alone does
// not: the turn stays open until its interrupted event.
func closeTurn(ctx context.Context, tx *wtx, conversationID string, ev *agentik.Event) error {
	replyTo := storeutil.Closes(ev)
	if replyTo == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, qCloseTurn, replyTo, conversationID)
	return err
}
