package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentik/agentik"
)

// The read queries. Each is answered from an index without a sort step
// (TestQueryPlans checks it), so their cost does not grow with the journal.
const (
	qMessagesAfter = `SELECT payload FROM messages WHERE conversation_id = ? AND seq > ?
		ORDER BY seq LIMIT ? OFFSET ?`
	qMessagesBefore = `SELECT payload FROM messages WHERE conversation_id = ? AND seq > ? AND seq < ?
		ORDER BY seq DESC LIMIT ? OFFSET ?`
	qMessage         = `SELECT payload FROM messages WHERE id = ? AND conversation_id = ?`
	qEvents          = `SELECT cursor, payload FROM events WHERE conversation_id = ? AND cursor > ? ORDER BY cursor LIMIT ?`
	qLastCursor      = `SELECT COALESCE(MAX(cursor), 0) FROM events WHERE conversation_id = ?`
	qAgentEvents     = `SELECT cursor, owner, payload FROM agent_events WHERE cursor > ? ORDER BY cursor LIMIT ?`
	qLastAgentCursor = `SELECT COALESCE(MAX(cursor), 0) FROM agent_events`
	qMemory          = `SELECT ord, payload FROM memory WHERE conversation_id = ? ORDER BY ord`
	// INDEXED BY: the partial index is the whole point; fail loudly rather
	// than scan the journal if it ever went missing.
	qOpenTurns = `SELECT payload FROM messages INDEXED BY messages_open_turns
		WHERE type = 'user_message' AND closed = 0 ORDER BY conversation_id, seq`
)

// Messages pages the journal by seq through the (conversation_id, seq)
// primary key, so a page costs the same at seq 10 and at seq 100,000. With
// Before set, the page is the newest entries below it (above After, if set);
// otherwise the oldest entries above After. Offset skips entries in the
// paging direction. The bool reports whether more entries lie beyond the page
// in that direction. Results are ascending.
func (s *Store) Messages(ctx context.Context, conversationID string, req agentik.MessagesRequest) ([]agentik.Message, bool, error) {
	if req.After < 0 || req.Before < 0 || req.Offset < 0 {
		return nil, false, agentik.Errorf(agentik.EInvalid, "messages: negative after, before or offset")
	}
	limit := req.Limit
	if limit <= 0 {
		limit = agentik.DefaultMessagesLimit
	}
	limit = min(limit, agentik.MaxMessagesLimit)

	// One more than the limit tells whether the page has more beyond it.
	query, args := qMessagesAfter, []any{conversationID, req.After, limit + 1, req.Offset}
	if req.Before > 0 {
		query, args = qMessagesBefore, []any{conversationID, req.After, req.Before, limit + 1, req.Offset}
	}
	msgs := []agentik.Message{}
	err := s.read(ctx, "messages "+conversationID, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, conversationID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, false, err
	}
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	if req.Before > 0 {
		slices.Reverse(msgs)
	}
	return msgs, more, nil
}

// Message returns one journal message; ENotFound when the conversation or the
// message (in that conversation) does not exist.
func (s *Store) Message(ctx context.Context, conversationID, id string) (agentik.Message, error) {
	var m agentik.Message
	err := s.read(ctx, "message "+id, func(tx *sql.Tx) error {
		var err error
		m, err = scanMessage(tx.QueryRowContext(ctx, qMessage, id, conversationID))
		if errors.Is(err, sql.ErrNoRows) {
			return agentik.Errorf(agentik.ENotFound, "message %s not found", id)
		}
		return err
	})
	return m, err
}

func scanMessage(row scanner) (agentik.Message, error) {
	var payload string
	var m agentik.Message
	if err := row.Scan(&payload); err != nil {
		return m, err
	}
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return m, agentik.WrapError(agentik.EInternal, "decode message", err)
	}
	return m, nil
}

// Events returns up to limit events of the conversation after the cursor,
// ascending; limit <= 0 returns all of them.
func (s *Store) Events(ctx context.Context, conversationID string, after int64, limit int) ([]agentik.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	evs := []agentik.Event{}
	err := s.read(ctx, "events "+conversationID, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, conversationID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, qEvents, conversationID, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var cursor int64
			var payload string
			if err := rows.Scan(&cursor, &payload); err != nil {
				return err
			}
			var ev agentik.Event
			if err := json.Unmarshal([]byte(payload), &ev); err != nil {
				return agentik.WrapError(agentik.EInternal, "decode event", err)
			}
			ev.Cursor = cursor
			evs = append(evs, ev)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// LastCursor is the greatest cursor of the conversation's events.
func (s *Store) LastCursor(ctx context.Context, conversationID string) (int64, error) {
	var cursor int64
	err := s.read(ctx, "last cursor "+conversationID, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, conversationID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, qLastCursor, conversationID).Scan(&cursor)
	})
	return cursor, err
}

// AgentEvents returns up to limit agent events after the cursor, ascending;
// limit <= 0 returns all of them.
func (s *Store) AgentEvents(ctx context.Context, after int64, limit int) ([]agentik.AgentEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	evs := []agentik.AgentEvent{}
	err := s.read(ctx, "agent events", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, qAgentEvents, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var cursor int64
			var owner, payload string
			if err := rows.Scan(&cursor, &owner, &payload); err != nil {
				return err
			}
			var ev agentik.AgentEvent
			if err := json.Unmarshal([]byte(payload), &ev); err != nil {
				return agentik.WrapError(agentik.EInternal, "decode agent event", err)
			}
			ev.Cursor = cursor
			ev.Owner = owner
			if ev.Conversation != nil {
				ev.Conversation.Owner = owner
			}
			evs = append(evs, ev)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// LastAgentCursor is the greatest agent-event cursor (0 when none).
func (s *Store) LastAgentCursor(ctx context.Context) (int64, error) {
	var cursor int64
	err := s.read(ctx, "last agent cursor", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, qLastAgentCursor).Scan(&cursor)
	})
	return cursor, err
}

// Memory returns the working memory in order.
func (s *Store) Memory(ctx context.Context, conversationID string) ([]agentik.MemoryEntry, error) {
	entries := []agentik.MemoryEntry{}
	err := s.read(ctx, "memory "+conversationID, func(tx *sql.Tx) error {
		if err := exists(ctx, tx, conversationID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, qMemory, conversationID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ord int64
			var payload string
			if err := rows.Scan(&ord, &payload); err != nil {
				return err
			}
			var e agentik.MemoryEntry
			if err := json.Unmarshal([]byte(payload), &e); err != nil {
				return agentik.WrapError(agentik.EInternal, "decode memory entry", err)
			}
			e.Order = ord
			entries = append(entries, e)
		}
		return rows.Err()
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
	msgs := []agentik.Message{}
	err := s.read(ctx, "open turns", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, qOpenTurns)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			m, err := scanMessage(rows)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}
