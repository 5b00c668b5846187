package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

// Reads run one statement each. A conversation's existence is only checked
// when its query finds nothing, so the common case is one indexed lookup.

// Messages pages the journal by seq through the (conversation_id, seq)
// primary key, so a page costs the same at seq 10 and at seq 100,000. With
// Before set, the page is the newest entries below it (above After, if set);
// otherwise the oldest entries above After. Offset skips entries in the
// paging direction. The bool reports whether more entries lie beyond the page
// in that direction. Results are ascending.
func (s *Store) Messages(ctx context.Context, conversationID string, req agentik.MessagesRequest) ([]agentik.Message, bool, error) {
	limit, err := storeutil.MessagesLimit(req)
	if err != nil {
		return nil, false, err
	}
	// One more than the limit tells whether the page has more beyond it.
	query, args := qMessagesAfter, []any{conversationID, req.After, limit + 1, req.Offset}
	if req.Before > 0 {
		query, args = qMessagesBefore, []any{conversationID, req.After, req.Before, limit + 1, req.Offset}
	}
	msgs := []agentik.Message{}
	err = s.read(ctx, "messages "+conversationID, func(r *reader) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, r, func(rows *sql.Rows) error {
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
			return exists(ctx, r, conversationID)
		}
		return restoreConversation(ctx, r, conversationID, withImages, func(i int) []agentik.Content { return msgs[i].Content })
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
	err := s.read(ctx, "message "+id, func(r *reader) error {
		var refs string
		var err error
		m, refs, err = scanMessage(r.QueryRowContext(ctx, qMessage, id, conversationID))
		if errors.Is(err, sql.ErrNoRows) {
			return agentik.Errorf(agentik.ENotFound, "message %s not found", id)
		}
		if err != nil || refs == "" {
			return err
		}
		return restoreConversation(ctx, r, conversationID, []storeutil.Pending{{I: 0, Refs: refs}}, func(int) []agentik.Content { return m.Content })
	})
	return m, err
}

// scanMessage reads a message row (payload, images) and returns the message
// as stored and its images column ("" when its content is all inline).
func scanMessage(row scanner) (agentik.Message, string, error) {
	var payload []byte
	var refs sql.NullString
	if err := row.Scan(&payload, &refs); err != nil {
		return agentik.Message{}, "", err
	}
	m, err := storeutil.DecodeMessage(payload)
	return m, refs.String, err
}

// Events returns up to limit events of the conversation after the cursor,
// ascending; limit <= 0 returns all of them.
func (s *Store) Events(ctx context.Context, conversationID string, after int64, limit int) ([]agentik.Event, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	evs := []agentik.Event{}
	err := s.read(ctx, "events "+conversationID, func(r *reader) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, r, func(rows *sql.Rows) error {
			var cursor int64
			var payload []byte
			var refs sql.NullString
			if err := rows.Scan(&cursor, &payload, &refs); err != nil {
				return err
			}
			ev, err := storeutil.DecodeEvent(cursor, payload, refs.String)
			if err != nil {
				return err
			}
			if refs.String != "" {
				withImages = append(withImages, storeutil.Pending{I: len(evs), Refs: refs.String})
			}
			evs = append(evs, ev)
			return nil
		}, qEvents, conversationID, after, limit); err != nil {
			return err
		}
		if len(evs) == 0 {
			return exists(ctx, r, conversationID)
		}
		return restoreConversation(ctx, r, conversationID, withImages, func(i int) []agentik.Content { return evs[i].Message.Content })
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// EventsJSON is Events as the wire carries them, each row passed through
// as stored unless it has images to restore (agentik.EventJSONReader).
func (s *Store) EventsJSON(ctx context.Context, conversationID string, after int64, limit int) ([]*agentik.Shared[agentik.Event], error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var rows storeutil.EventRows
	err := s.read(ctx, "events "+conversationID, func(r *reader) error {
		rows = storeutil.EventRows{}
		if err := queryEach(ctx, r, func(q *sql.Rows) error {
			var cursor int64
			var typ string
			var payload string // the driver's own string: no copy
			var refs sql.NullString
			if err := q.Scan(&cursor, &typ, &payload, &refs); err != nil {
				return err
			}
			return rows.AddString(cursor, typ, payload, refs.String)
		}, qEventsJSON, conversationID, after, limit); err != nil {
			return err
		}
		if rows.Len() == 0 {
			return exists(ctx, r, conversationID)
		}
		return restoreConversation(ctx, r, conversationID, rows.Pending(), rows.Content)
	})
	if err != nil {
		return nil, err
	}
	return rows.Events(), nil
}

// LastCursor is the greatest cursor of the conversation's events.
func (s *Store) LastCursor(ctx context.Context, conversationID string) (int64, error) {
	var cursor int64
	err := s.read(ctx, "last cursor "+conversationID, func(r *reader) error {
		var found bool
		if err := r.QueryRowContext(ctx, qLastCursor, conversationID, conversationID).Scan(&found, &cursor); err != nil {
			return err
		}
		if !found {
			return notFound(conversationID)
		}
		return nil
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
	err := s.read(ctx, "agent events", func(r *reader) error {
		return queryEach(ctx, r, func(rows *sql.Rows) error {
			var cursor int64
			var owner string
			var payload []byte
			if err := rows.Scan(&cursor, &owner, &payload); err != nil {
				return err
			}
			ev, err := storeutil.DecodeAgentEvent(cursor, owner, payload)
			evs = append(evs, ev)
			return err
		}, qAgentEvents, s.agent, after, limit)
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// LastAgentCursor is the greatest agent-event cursor (0 when none).
func (s *Store) LastAgentCursor(ctx context.Context) (int64, error) {
	var cursor int64
	err := s.read(ctx, "last agent cursor", func(r *reader) error {
		return r.QueryRowContext(ctx, qLastAgentCursor).Scan(&cursor)
	})
	return cursor, err
}

// Memory returns the working memory in order.
func (s *Store) Memory(ctx context.Context, conversationID string) ([]agentik.MemoryEntry, error) {
	entries := []agentik.MemoryEntry{}
	err := s.read(ctx, "memory "+conversationID, func(r *reader) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, r, func(rows *sql.Rows) error {
			var ord int64
			var payload []byte
			var refs sql.NullString
			if err := rows.Scan(&ord, &payload, &refs); err != nil {
				return err
			}
			e, err := storeutil.DecodeMemory(ord, payload)
			if err != nil {
				return err
			}
			if refs.String != "" {
				withImages = append(withImages, storeutil.Pending{I: len(entries), Refs: refs.String})
			}
			entries = append(entries, e)
			return nil
		}, qMemory, conversationID); err != nil {
			return err
		}
		if len(entries) == 0 {
			return exists(ctx, r, conversationID)
		}
		return restoreConversation(ctx, r, conversationID, withImages, func(i int) []agentik.Content { return entries[i].Message.Content })
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

// OpenTurnsOf returns the open turns of one conversation in seq order.
func (s *Store) OpenTurnsOf(ctx context.Context, conversationID string) ([]agentik.Message, error) {
	return s.openTurns(ctx, qOpenTurnsOf, conversationID)
}

func (s *Store) openTurns(ctx context.Context, query string, args ...any) ([]agentik.Message, error) {
	msgs := []agentik.Message{}
	err := s.read(ctx, "open turns", func(r *reader) error {
		var withImages []storeutil.Pending
		if err := queryEach(ctx, r, func(rows *sql.Rows) error {
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
		missing, err := restoreImages(ctx, r, withImages, func(i int) []agentik.Content { return msgs[i].Content })
		msgs = storeutil.DropIndexes(msgs, missing)
		return err
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// queryEach runs a query and calls fn for each row.
func queryEach(ctx context.Context, q queryer, fn func(*sql.Rows) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
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
	err := s.read(ctx, "state "+conversationID, func(r *reader) error {
		var raw []byte
		err := r.QueryRowContext(ctx, qState, conversationID, key).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		v = raw
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
	err := s.read(ctx, "approval events "+conversationID, func(r *reader) error {
		return queryEach(ctx, r, func(rows *sql.Rows) error {
			var cursor int64
			var payload []byte
			if err := rows.Scan(&cursor, &payload); err != nil {
				return err
			}
			ev, err := storeutil.DecodeEvent(cursor, payload, "")
			if err != nil {
				return err
			}
			evs = append(evs, ev)
			return nil
		}, qApprovalEvents, conversationID, after)
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}
