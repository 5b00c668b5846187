package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// Commit applies w in one transaction: journal messages (seqs from the
// conversation's counter, under its row lock), their events (cursors from a
// sequence, drawn under the same lock: see migrations/0004), memory changes,
// token totals and the touch. On success the assigned seqs are written into
// the events' Messages and the assigned orders into w.Memory; on error
// nothing is stored and nothing the caller passed is modified. The touched
// agent event is returned without a cursor: the sequencer numbers it once
// committed, and the Bus delivers it then (see Bus.PublishAgent).
//
// No lock outside the conversation's own rows is taken (images aside), so
// commits to different conversations never wait for each other.
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
	var prev int64 // the conversation's last cursor before this write

	err := s.pipelined(ctx, op, func(lock *pgx.Batch) func() (*pgx.Batch, error) {
		if quiet(w) {
			lock.Queue("SET LOCAL synchronous_commit = off")
		}
		var owner, agent string
		var nextSeq, nextOrd, epoch, lastCursor int64
		lock.Queue(qCommitConversation, w.ConversationID).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&owner, &agent, &nextSeq, &nextOrd, &epoch, &lastCursor)
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound(w.ConversationID)
			}
			return err
		})
		return func() (*pgx.Batch, error) {
			// The row lock taken above is what makes the fence atomic: a new
			// lease holder's epoch increment waits for this transaction, and
			// once it committed no write made under the old epoch passes.
			if w.Fence != 0 && epoch != w.Fence {
				return nil, fmt.Errorf("lease epoch %d, write made under %d: %w", epoch, w.Fence, agentik.ErrFenced)
			}
			batch := &pgx.Batch{}
			payloads := make([]string, len(w.Events))
			evImages := make([]*string, len(w.Events))
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
					// The message and its event are stored without image data.
					var refs string
					m.Content, refs = images.Message(i, &m)
					evImages[i] = column(refs)
					mp, err := storeutil.EncodeMessage(&m)
					if err != nil {
						return nil, err
					}
					batch.Queue(qInsertMessage, m.ConversationID, m.Seq, m.ID, m.Type, m.Date.Time, m.ReplyTo, string(mp), evImages[i])
					ev.Message = &m
				}
				if replyTo := storeutil.Closes(&ev); replyTo != "" {
					batch.Queue(qCloseTurn, replyTo, w.ConversationID)
				}
				p, err := json.Marshal(ev)
				if err != nil {
					return nil, agentik.WrapError(agentik.EInternal, "encode event", err)
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
				var r string
				e.Message.Content, r = images.Memory(i, &e)
				refs := column(r)
				p, err := json.Marshal(e)
				if err != nil {
					return nil, agentik.WrapError(agentik.EInternal, "encode memory entry", err)
				}
				batch.Queue(qInsertMemory, w.ConversationID, e.Order, string(p), refs)
			}
			// Image rows are locked in hash order.
			queueImages(batch, images, w.ConversationID)
			for k, v := range w.State {
				if v == nil {
					batch.Queue(qDeleteState, w.ConversationID, k)
				} else {
					batch.Queue(qSetState, w.ConversationID, k, string(v))
				}
			}
			for i, ev := range w.Events {
				batch.Queue(qInsertEvent, w.ConversationID, ev.Type, ev.Date.Time, payloads[i], evImages[i]).QueryRow(func(row pgx.Row) error {
					return row.Scan(&out[i].Cursor)
				})
			}
			touch := !w.Touch.IsZero()
			batch.Queue(qUpdateAfterCommit, nextSeq, nextOrd, w.Tokens.Input, w.Tokens.Output, touch, w.Touch.Time, w.ConversationID,
				len(w.Events) > 0)
			prev = lastCursor
			if touch {
				at := agentik.TimeOf(w.Touch.Time)
				touched = &agentik.AgentEvent{
					Date:           at,
					Type:           agentik.AgentEvTouched,
					ConversationID: w.ConversationID,
					UpdatedAt:      at,
					Owner:          owner,
				}
				if err := queueAgentEvent(batch, agent, touched); err != nil {
					return nil, err
				}
			}
			return batch, nil
		}
	})
	if err != nil {
		return nil, nil, err
	}

	// Committed: hand the assigned numbers back to the caller, and tell
	// this process's Bus what came before each event in the conversation.
	s.chain.add(prev, out)
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

// quiet tells whether a write only changes working memory: it appends no
// event (so nobody is told of it) and changes no token count. Such a write
// commits without waiting for its WAL flush (synchronous_commit off for
// that transaction): it is durable a moment later (wal_writer_delay), and
// the next synchronous commit of any session flushes it first, the WAL
// being sequential. A database crash in between loses only that memory
// change, which the engine's recovery tolerates: a tool round missing from
// working memory is rebuilt from the journal, a turn whose user message is
// missing from it counts as queued, not started. The turn's answer — a
// write with events — waits for its flush as before.
func quiet(w agentik.Write) bool {
	return len(w.Events) == 0 && w.Touch.IsZero() && w.Tokens == (agentik.TurnTokens{})
}

// pipelined runs one transaction in two round trips: BEGIN with the
// statements lock queues, then — once their results are in — the batch
// the returned func builds, with COMMIT at its end. A failure anywhere
// rolls everything back. (pgx's Tx would spend a round trip on BEGIN and
// one on COMMIT, and one per dependent statement in between.)
func (s *Store) pipelined(ctx context.Context, op string, lock func(b *pgx.Batch) func() (*pgx.Batch, error)) error {
	if s.isClosed() {
		return fmt.Errorf("%s: %w", op, unavailable(errors.New("store closed")))
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	// A connection still inside a transaction when released (a failed
	// ROLLBACK) is closed by the pool, never reused.
	defer conn.Release()
	first := &pgx.Batch{}
	first.Queue("BEGIN")
	next := lock(first)
	err = conn.SendBatch(ctx, first).Close()
	var second *pgx.Batch
	if err == nil {
		second, err = next()
	}
	if err == nil {
		second.Queue("COMMIT")
		err = conn.SendBatch(ctx, second).Close()
	}
	if err != nil {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			conn.Exec(rctx, "ROLLBACK") //nolint:errcheck // the pool drops a connection left in a transaction
			cancel()
		}
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	return nil
}

// queueAgentEvent queues the insert of ev, unnumbered: the sequencer gives
// it its cursor after commit (qSequence), so ev.Cursor stays 0.
func queueAgentEvent(b *pgx.Batch, agent string, ev *agentik.AgentEvent) error {
	payload, err := storeutil.AgentPayload(ev)
	if err != nil {
		return err
	}
	b.Queue(qInsertAgentEvent, ev.ConversationID, ev.Owner, ev.Type, ev.Date.Time, payload, agent)
	return nil
}
