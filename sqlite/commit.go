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
	hooked := false // webhooks' outbox rows written (webhooks.go)
	queued := 0     // full-text rows queued for the indexer (index.go)
	err := s.write(ctx, "commit "+w.ConversationID, func(tx *wtx) error {
		var owner, agent string
		var nextSeq, nextOrd, head int64
		err := tx.QueryRowContext(ctx, qCommitConversation, msgs, len(w.Memory), w.Tokens.Input, w.Tokens.Output,
			!w.Touch.IsZero(), ms(w.Touch), w.ConversationID).Scan(&owner, &agent, &nextSeq, &nextOrd, &head)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(w.ConversationID)
		}
		if err != nil {
			return err
		}
		// Numbered from the first of the claimed numbers.
		if n, err = storeutil.Number(&w, images, nextSeq-int64(msgs), nextOrd-int64(len(w.Memory)), head); err != nil {
			return err
		}
		scope := storeutil.SearchScope(owner)
		if s.noSearchIndex {
			scope = ""
		}
		if queued, err = insertWrite(ctx, tx, &w, n, images, scope); err != nil {
			return err
		}
		for _, k := range w.Keys {
			if _, err := tx.ExecContext(ctx, qSetKey, agent, owner, k, w.ConversationID, n.FirstSeq()); err != nil {
				return err
			}
		}
		if hooked, err = enqueueEvents(ctx, tx, agent, owner, n); err != nil {
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
	s.notifyOutbox(hooked)
	s.ix.queued(queued)
	return n.Committed(), touched, nil
}

// insertWrite stores the rows of the numbered write n: its messages and
// events, in order, the turns they close, its memory changes, its images
// and its state changes, and the full-text rows of its messages, filed
// under scope, the owner's token ("": none), queued for the indexer
// (index.go). It returns how many full-text rows it queued.
func insertWrite(ctx context.Context, tx *wtx, w *agentik.Write, n *storeutil.Numbered, images *storeutil.WriteImages, scope string) (queued int, err error) {
	if err := insertTree(ctx, tx, w, n); err != nil {
		return 0, err
	}
	for i := range n.Events {
		e := &n.Events[i]
		var evImages any // NULL for an event without a message
		if m := e.Event.Message; m != nil {
			if _, err := tx.ExecContext(ctx, qInsertMessage,
				m.ConversationID, m.Seq, m.ID, m.Type, ms(m.Date), m.ReplyTo, e.MessagePayload, column(e.Images), m.Parent); err != nil {
				return 0, err
			}
			if text := agentik.SearchText(m); text != "" && scope != "" {
				if _, err := tx.ExecContext(ctx, qQueueMessage, scope, text); err != nil {
					return 0, err
				}
				queued++
			}
			evImages = e.Images
		}
		// The closed flag of the user message whose turn the event closes.
		if e.Closes != "" {
			if _, err := tx.ExecContext(ctx, qCloseTurn, e.Closes, w.ConversationID); err != nil {
				return 0, err
			}
		}
		res, err := tx.ExecContext(ctx, qInsertEvent, w.ConversationID, e.Event.Type, ms(e.Event.Date), e.Payload, evImages)
		if err != nil {
			return 0, err
		}
		if e.Cursor, err = res.LastInsertId(); err != nil {
			return 0, err
		}
	}
	if w.ReplaceMemory {
		if _, err := tx.ExecContext(ctx, qClearMemory, w.ConversationID); err != nil {
			return 0, err
		}
	}
	if w.DropMemoryThrough > 0 {
		if _, err := tx.ExecContext(ctx, qDropMemory, w.ConversationID, w.DropMemoryThrough); err != nil {
			return 0, err
		}
	}
	for _, e := range n.Memory {
		if _, err := tx.ExecContext(ctx, qInsertMemory, w.ConversationID, e.Order, e.Payload, column(e.Images)); err != nil {
			return 0, err
		}
	}
	if err := storeImages(ctx, tx, images, w.ConversationID); err != nil {
		return 0, err
	}
	for k, v := range w.State {
		if v == nil {
			_, err = tx.ExecContext(ctx, qDeleteState, w.ConversationID, k)
		} else {
			_, err = tx.ExecContext(ctx, qSetState, w.ConversationID, k, string(v))
		}
		if err != nil {
			return 0, err
		}
	}
	return queued, nil
}

// insertTree stores what the write changes of the message tree: the head,
// and the turn it opens again. The turn is reopened before the write's
// events are stored, so that one of them can close it again.
func insertTree(ctx context.Context, tx *wtx, w *agentik.Write, n *storeutil.Numbered) error {
	if n.HeadMoved {
		if _, err := tx.ExecContext(ctx, qSetHead, n.Head, w.ConversationID); err != nil {
			return err
		}
	}
	if w.Reopen != "" {
		if _, err := tx.ExecContext(ctx, qReopenTurn, w.Reopen, w.ConversationID); err != nil {
			return err
		}
	}
	return nil
}
