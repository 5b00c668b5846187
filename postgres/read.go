package postgres

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// readDB runs storeutil.Reads on the pool.
type readDB struct{ s *shared }

func (r readDB) Read(ctx context.Context, op string, fn func(c storeutil.ReadConn) error) error {
	return r.s.read(ctx, op, func(q querier) error { return fn(readConn{q}) })
}

// readConn is storeutil.ReadConn over a querier.
type readConn struct{ q querier }

func (c readConn) Each(ctx context.Context, fn func(storeutil.Scanner) error, query string, args ...any) error {
	return queryEach(ctx, c.q, func(rows pgx.Rows) error { return fn(rows) }, query, args...)
}

func (c readConn) One(ctx context.Context, dest []any, query string, args ...any) (bool, error) {
	err := c.q.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Images reads the stored images in one query.
func (c readConn) Images(ctx context.Context, hashes []string) (map[string]string, error) {
	data := make(map[string]string, len(hashes))
	err := queryEach(ctx, c.q, func(r pgx.Rows) error {
		var h string
		var raw []byte
		if err := r.Scan(&h, &raw); err != nil {
			return err
		}
		data[h] = base64.StdEncoding.EncodeToString(raw)
		return nil
	}, qImages, hashes)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// scanEvents returns fn for queryEach that appends event rows to evs,
// noting those with images in withImages.
func scanEvents(evs *[]agentik.Event, withImages *[]storeutil.Pending) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		ev, refs, err := storeutil.ScanEvent(rows)
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

func scanAgentEvent(rows pgx.Rows) (agentik.AgentEvent, error) { return storeutil.ScanAgentEvent(rows) }

// limitArg stands for "all rows" in LIMIT parameters (LIMIT NULL).
func limitArg(limit int) any {
	if limit <= 0 {
		return nil
	}
	return int64(limit)
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

// queryEach runs a query and calls fn for each row.
func queryEach(ctx context.Context, q querier, fn func(pgx.Rows) error, query string, args ...any) error {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return storeutil.Each(rows, fn)
}
