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
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	images := storeutil.ExtractImages(&w)
	msgs := 0 // journal messages the write adds
	for _, ev := range w.Events {
		if ev.Message != nil {
			msgs++
		}
	}
	var n *storeutil.Numbered
	var touched *agentik.AgentEvent
	err := s.write(ctx, "commit "+w.ConversationID, func(tx *wtx) error {
		var owner, agent string
		var nextSeq, nextOrd int64
		err := tx.QueryRowContext(ctx, qCommitConversation, msgs, len(w.Memory), w.Tokens.Input, w.Tokens.Output,
			!w.Touch.IsZero(), ms(w.Touch), w.ConversationID).Scan(&owner, &agent, &nextSeq, &nextOrd)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(w.ConversationID)
		}
		if err != nil {
			return err
		}
		// Numbered from the first of the claimed numbers.
		if n, err = storeutil.Number(&w, images, nextSeq-int64(msgs), nextOrd-int64(len(w.Memory))); err != nil {
			return err
		}
		if err := insertWrite(ctx, tx, &w, n, images); err != nil {
			return err
		}
		if touched = storeutil.Touched(&w, owner); touched != nil {
			return insertAgentEvent(ctx, tx, agent, touched)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return n.Committed(), touched, nil
}

// insertWrite stores the rows of the numbered write n: its messages and
// events, in order, the turns they close, its memory changes, its images
// and its state changes.
func insertWrite(ctx context.Context, tx *wtx, w *agentik.Write, n *storeutil.Numbered, images *storeutil.WriteImages) error {
	for i := range n.Events {
		e := &n.Events[i]
		var evImages any // NULL for an event without a message
		if m := e.Event.Message; m != nil {
			if _, err := tx.ExecContext(ctx, qInsertMessage,
				m.ConversationID, m.Seq, m.ID, m.Type, ms(m.Date), m.ReplyTo, e.MessagePayload, column(e.Images)); err != nil {
				return err
			}
			evImages = e.Images
		}
		// The closed flag of the user message whose turn the event closes.
		if e.Closes != "" {
			if _, err := tx.ExecContext(ctx, qCloseTurn, e.Closes, w.ConversationID); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, qInsertEvent, w.ConversationID, e.Event.Type, ms(e.Event.Date), e.Payload, evImages)
		if err != nil {
			return err
		}
		if e.Cursor, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	if w.DropMemoryThrough > 0 {
		if _, err := tx.ExecContext(ctx, qDropMemory, w.ConversationID, w.DropMemoryThrough); err != nil {
			return err
		}
	}
	for _, e := range n.Memory {
		if _, err := tx.ExecContext(ctx, qInsertMemory, w.ConversationID, e.Order, e.Payload, column(e.Images)); err != nil {
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
	return nil
}
