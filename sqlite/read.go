package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

// The reads of a conversation's journal, events, memory and state, and of
// the open turns, are storeutil.Reads over this store's SQL.
var reads = storeutil.ReadQueries{
	Exists:         qExists,
	MessagesAfter:  qMessagesAfter,
	MessagesBefore: qMessagesBefore,
	Message:        qMessage,
	Events:         qEvents,
	EventsJSON:     qEventsJSON,
	ApprovalEvents: qApprovalEvents,
	Memory:         qMemory,
	OpenTurns:      qOpenTurns,
	OpenTurnsOf:    qOpenTurnsOf,
	State:          qState,
	Key:            qKey,
	PathAfter:      qPathAfter,
	PathBefore:     qPathBefore,
	Children:       qChildren,
	All:            -1, // SQLite: LIMIT -1 is no limit
}

// readDB runs storeutil.Reads on the reader pool.
type readDB struct{ d *db }

func (r readDB) Read(ctx context.Context, op string, fn func(c storeutil.ReadConn) error) error {
	return r.d.read(ctx, op, func(rd *reader) error { return fn(rd) })
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
		return r.Each(ctx, func(row storeutil.Scanner) error {
			ev, err := storeutil.ScanAgentEvent(row)
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

// Each runs a query and calls fn for each row (storeutil.ReadConn).
func (r *reader) Each(ctx context.Context, fn func(storeutil.Scanner) error, query string, args ...any) error {
	rows, err := r.QueryContext(ctx, query, args...)
	if err == nil {
		defer rows.Close()
		err = storeutil.Each(rows, func(r *sql.Rows) error { return fn(r) })
	}
	return err
}

// One runs a query of at most one row and scans it into dest
// (storeutil.ReadConn).
func (r *reader) One(ctx context.Context, dest []any, query string, args ...any) (bool, error) {
	err := r.QueryRowContext(ctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Images reads stored images, one indexed lookup each, only for rows that
// reference images (storeutil.ReadConn).
func (r *reader) Images(ctx context.Context, hashes []string) (map[string]string, error) {
	data := make(map[string]string, len(hashes))
	for _, h := range hashes {
		var raw []byte
		err := r.QueryRowContext(ctx, qImage, h).Scan(&raw)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		data[h] = base64.StdEncoding.EncodeToString(raw)
	}
	return data, nil
}
