package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// Reads run one statement each. A conversation's existence is only checked
// when its query finds nothing, so the common case is one indexed lookup.

// Messages pages the journal by seq through the (conversation_id, seq)
// primary key. With Before set, the page is the newest entries below it
// (above After, if set); otherwise the oldest entries above After. Offset
// skips entries in the paging direction. The bool reports whether more
// entries lie beyond the page in that direction. Results are ascending.
func (s *Store) Messages(ctx context.Context, conversationID string, req agentik.MessagesRequest) ([]agentik.Message, bool, error) {
	limit, err := storeutil.MessagesLimit(req)
	if err != nil {
		return nil, false, err
	}
	query, args := qMessagesAfter, []any{conversationID, req.After, limit + 1, req.Offset}
	if req.Before > 0 {
		query, args = qMessagesBefore, []any{conversationID, req.After, req.Before, limit + 1, req.Offset}
	}
	msgs := []agentik.Message{}
	err = s.read(ctx, "messages "+conversationID, func(q querier) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, q, func(rows pgx.Rows) error {
			m, refs, err := scanMessage(rows)
			if refs != "" {
				withImages = append(withImages, storeutil.Pending{I: len(msgs), Refs: refs})
			}
			msgs = append(msgs, m)
			return err
		}, query, args...); err != nil {
			return err
		}
		if len(msgs) == 0 {
			return exists(ctx, q, conversationID)
		}
		return restoreConversation(ctx, q, conversationID, withImages, func(i int) []agentik.Content { return msgs[i].Content })
	})
	if err != nil {
		return nil, false, err
	}
	msgs, more := storeutil.MessagesPage(msgs, limit, req)
	return msgs, more, nil
}

// Message returns one journal message; ENotFound when the conversation or the
// message (in that conversation) does not exist.
func (s *Store) Message(ctx context.Context, conversationID, id string) (agentik.Message, error) {
	var m agentik.Message
	err := s.read(ctx, "message "+id, func(q querier) error {
		var refs string
		var err error
		m, refs, err = scanMessage(q.QueryRow(ctx, qMessage, id, conversationID))
		if errors.Is(err, pgx.ErrNoRows) {
			return agentik.Errorf(agentik.ENotFound, "message %s not found", id)
		}
		if err != nil || refs == "" {
			return err
		}
		return restoreConversation(ctx, q, conversationID, []storeutil.Pending{{I: 0, Refs: refs}}, func(int) []agentik.Content { return m.Content })
	})
	return m, err
}

// scanMessage reads a message row (payload, images) and returns the message
// as stored and its images column ("" when its content is all inline).
func scanMessage(row pgx.Row) (agentik.Message, string, error) {
	var payload []byte
	var refs *string
	if err := row.Scan(&payload, &refs); err != nil {
		return agentik.Message{}, "", err
	}
	m, err := storeutil.DecodeMessage(payload)
	if refs == nil {
		return m, "", err
	}
	return m, *refs, err
}

// scanEvent reads an event row (cursor, payload, images) and returns the
// event as stored and its images column.
func scanEvent(rows pgx.Rows) (agentik.Event, string, error) {
	var cursor int64
	var payload []byte
	var refs *string
	if err := rows.Scan(&cursor, &payload, &refs); err != nil {
		return agentik.Event{}, "", err
	}
	r := ""
	if refs != nil {
		r = *refs
	}
	ev, err := storeutil.DecodeEvent(cursor, payload, r)
	return ev, r, err
}

// scanEvents returns fn for queryEach that appends event rows to evs,
// noting those with images in withImages.
func scanEvents(evs *[]agentik.Event, withImages *[]storeutil.Pending) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		ev, refs, err := scanEvent(rows)
		if err != nil {
			return err
		}
		if refs != "" {
			*withImages = append(*withImages, storeutil.Pending{I: len(*evs), Refs: refs})
		}
		*evs = append(*evs, ev)
		return nil
	}
}

func scanAgentEvent(rows pgx.Rows) (agentik.AgentEvent, error) {
	var cursor int64
	var owner string
	var payload []byte
	if err := rows.Scan(&cursor, &owner, &payload); err != nil {
		return agentik.AgentEvent{}, err
	}
	return storeutil.DecodeAgentEvent(cursor, owner, payload)
}

// limitArg stands for "all rows" in LIMIT parameters (LIMIT NULL).
func limitArg(limit int) any {
	if limit <= 0 {
		return nil
	}
	return int64(limit)
}

// Events returns up to limit events of the conversation after the cursor,
// ascending; limit <= 0 returns all of them.
func (s *Store) Events(ctx context.Context, conversationID string, after int64, limit int) ([]agentik.Event, error) {
	evs := []agentik.Event{}
	err := s.read(ctx, "events "+conversationID, func(q querier) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, q, scanEvents(&evs, &withImages), qEvents, conversationID, after, limitArg(limit)); err != nil {
			return err
		}
		if len(evs) == 0 {
			return exists(ctx, q, conversationID)
		}
		return restoreConversation(ctx, q, conversationID, withImages, func(i int) []agentik.Content { return evs[i].Message.Content })
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// EventsJSON is Events as the wire carries them, each row passed through
// as stored unless it has images to restore (agentik.EventJSONReader).
func (s *Store) EventsJSON(ctx context.Context, conversationID string, after int64, limit int) ([]*agentik.Shared[agentik.Event], error) {
	var rows storeutil.EventRows
	err := s.read(ctx, "events "+conversationID, func(q querier) error {
		rows = storeutil.EventRows{}
		if err := queryEach(ctx, q, func(r pgx.Rows) error {
			var cursor int64
			var typ string
			var payload []byte
			var refs *string
			if err := r.Scan(&cursor, &typ, &payload, &refs); err != nil {
				return err
			}
			images := ""
			if refs != nil {
				images = *refs
			}
			return rows.Add(cursor, typ, payload, images)
		}, qEventsJSON, conversationID, after, limitArg(limit)); err != nil {
			return err
		}
		if rows.Len() == 0 {
			return exists(ctx, q, conversationID)
		}
		return restoreConversation(ctx, q, conversationID, rows.Pending(), rows.Content)
	})
	if err != nil {
		return nil, err
	}
	return rows.Events(), nil
}

// LastCursor is the greatest cursor of the conversation's events, kept on
// the conversation's row by Commit.
func (s *Store) LastCursor(ctx context.Context, conversationID string) (int64, error) {
	var cursor int64
	err := s.read(ctx, "last cursor "+conversationID, func(q querier) error {
		err := q.QueryRow(ctx, qLastCursor, conversationID).Scan(&cursor)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(conversationID)
		}
		return err
	})
	return cursor, err
}

// AgentEvents returns up to limit agent events after the cursor, ascending;
// limit <= 0 returns all of them. It first numbers the agent events
// committed so far (the sequencer, in the same transaction), so it sees
// every agent event committed before it began.
func (s *Store) AgentEvents(ctx context.Context, after int64, limit int) ([]agentik.AgentEvent, error) {
	evs := []agentik.AgentEvent{}
	err := s.sequenced(ctx, "agent events", func(b *pgx.Batch) {
		b.Queue(qAgentEvents, after, limitArg(limit), s.agent).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				ev, err := scanAgentEvent(rows)
				if err != nil {
					return err
				}
				evs = append(evs, ev)
			}
			return rows.Err()
		})
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// LastAgentCursor is the agent-event counter after numbering the agent
// events committed so far: every agent event committed before the call has
// a cursor up to it, and any committed later gets a greater one.
func (s *Store) LastAgentCursor(ctx context.Context) (int64, error) {
	var cursor int64
	err := s.sequenced(ctx, "last agent cursor", func(b *pgx.Batch) {
		b.Queue(qAgentCounter).QueryRow(func(row pgx.Row) error { return row.Scan(&cursor) })
	})
	return cursor, err
}

// sequenced runs the sequencer and then the reads read queues, in one
// implicit transaction (one round trip): the reads see the numbers given.
func (s *Store) sequenced(ctx context.Context, op string, read func(b *pgx.Batch)) error {
	if s.isClosed() {
		return fmt.Errorf("%s: %w", op, unavailable(errors.New("store closed")))
	}
	b := &pgx.Batch{}
	queueSequence(b)
	read(b)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	return nil
}

// Memory returns the working memory in order.
func (s *Store) Memory(ctx context.Context, conversationID string) ([]agentik.MemoryEntry, error) {
	entries := []agentik.MemoryEntry{}
	err := s.read(ctx, "memory "+conversationID, func(q querier) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, q, func(rows pgx.Rows) error {
			var ord int64
			var payload []byte
			var refs *string
			if err := rows.Scan(&ord, &payload, &refs); err != nil {
				return err
			}
			e, err := storeutil.DecodeMemory(ord, payload)
			if err != nil {
				return err
			}
			if refs != nil && *refs != "" {
				withImages = append(withImages, storeutil.Pending{I: len(entries), Refs: *refs})
			}
			entries = append(entries, e)
			return nil
		}, qMemory, conversationID); err != nil {
			return err
		}
		if len(entries) == 0 {
			return exists(ctx, q, conversationID)
		}
		return restoreConversation(ctx, q, conversationID, withImages, func(i int) []agentik.Content { return entries[i].Message.Content })
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// OpenTurns reads the partial index of unclosed user messages that Commit
// maintains, so start-up cost follows the number of open turns, not the size
// of the journals.
func (s *Store) OpenTurns(ctx context.Context) ([]agentik.Message, error) {
	return s.openTurns(ctx, qOpenTurns, s.agent)
}

// OpenTurnsOf returns the open turns of one conversation in seq order: the
// queue of a conversation whose turns several processes share.
func (s *Store) OpenTurnsOf(ctx context.Context, conversationID string) ([]agentik.Message, error) {
	return s.openTurns(ctx, qOpenTurnsOf, conversationID)
}

func (s *Store) openTurns(ctx context.Context, query string, args ...any) ([]agentik.Message, error) {
	msgs := []agentik.Message{}
	err := s.read(ctx, "open turns", func(q querier) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, q, func(rows pgx.Rows) error {
			m, refs, err := scanMessage(rows)
			if refs != "" {
				withImages = append(withImages, storeutil.Pending{I: len(msgs), Refs: refs})
			}
			msgs = append(msgs, m)
			return err
		}, query, args...); err != nil {
			return err
		}
		// A turn whose images are gone belongs to a conversation deleted
		// since the query: it is no longer open.
		missing, err := restoreImages(ctx, q, withImages, func(i int) []agentik.Content { return msgs[i].Content })
		msgs = storeutil.DropIndexes(msgs, missing)
		return err
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// queryEach runs a query and calls fn for each row.
func queryEach(ctx context.Context, q querier, fn func(pgx.Rows) error, query string, args ...any) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// State returns the value of a conversation's state key (nil when unset).
func (s *Store) State(ctx context.Context, conversationID, key string) (agentik.RawJSON, error) {
	var v agentik.RawJSON
	err := s.read(ctx, "state "+conversationID, func(q querier) error {
		var raw string
		err := q.QueryRow(ctx, qState, conversationID, key).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		v = agentik.RawJSON(raw)
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ApprovalEvents returns the conversation's approval events after the
// cursor, ascending (the events_approvals index).
func (s *Store) ApprovalEvents(ctx context.Context, conversationID string, after int64) ([]agentik.Event, error) {
	evs := []agentik.Event{}
	var withImages []storeutil.Pending
	err := s.read(ctx, "approval events "+conversationID, func(q querier) error {
		evs = evs[:0]
		return queryEach(ctx, q, scanEvents(&evs, &withImages), qApprovalEvents, conversationID, after)
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}
