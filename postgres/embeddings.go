package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

var _ agentik.MessageEmbeddings = (*Store)(nil)

// The vector index of migrations/0016.
const (
	// The agent's messages of the full-text index (search IS NOT NULL,
	// user and assistant messages only) dated $3 or later with no vector
	// of the model, newest first: a walk of messages_embed_walk down to
	// $3 (migrations/0017: the type condition keeps searches off it;
	// ensureEmbedWalk builds it).
	qUnembedded = `SELECT m.id, m.payload FROM messages AS m
		JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.search IS NOT NULL AND m.type IN ('user_message', 'assistant_message')
			AND c.agent_id = $1 AND m.date >= $3
			AND NOT EXISTS (SELECT 1 FROM message_vectors AS v WHERE v.message_id = m.id AND v.model = $2)
		ORDER BY m.date DESC LIMIT $4`
	// A message deleted meanwhile is not there to select: nothing is
	// written. Two processes that embedded the same message write the
	// same row.
	qPutVector = `INSERT INTO message_vectors (message_id, agent_id, scope, model, date, vector)
		SELECT m.id, c.agent_id, m.search_scope, $1, m.date, $2
		FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.id = $3 AND c.agent_id = $4 AND m.search_scope IS NOT NULL
		ON CONFLICT (message_id) DO UPDATE SET model = excluded.model, vector = excluded.vector`
	qScopeVectors = `SELECT message_id, vector FROM message_vectors
		WHERE scope = $1 AND agent_id = $2 AND model = $3 AND length(vector) > 0
		ORDER BY date DESC LIMIT $4`
	// A hit is checked on its conversation: the owner and the agent.
	qVectorHit = `SELECT m.conversation_id, m.seq, m.type, m.date, m.payload
		FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.id = $1 AND c.owner = $2 AND c.agent_id = $3`
)

// The walk's index (migrations/0017, 0020): built by the first walk of a
// process, CONCURRENTLY (commits go on meanwhile), when it is missing or
// a build cut short left it invalid. The schema is named, never found
// through search_path: another deployment's schema later in the path may
// hold an index of the same name.
const (
	qEmbedWalkValid = `SELECT i.indisvalid FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
		WHERE c.relname = 'messages_embed_walk' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`
	qEmbedWalkDrop   = `DROP INDEX CONCURRENTLY IF EXISTS %s.messages_embed_walk`
	qEmbedWalkCreate = `CREATE INDEX CONCURRENTLY messages_embed_walk ON %s.messages (date DESC)
		WHERE search IS NOT NULL AND type IN ('user_message', 'assistant_message')`
)

// embedWalkRetry is how often a process tries the lock of the walk's index
// while another process builds it.
const embedWalkRetry = time.Second

// embedWalk is whether the walk's index is known to be there, and the
// turn to make sure of it: one caller of the process at a time, taken
// with a context (a build takes minutes over a large journal, and a
// shutdown must not wait for another agent's).
type embedWalk struct {
	ready atomic.Bool
	turn  chan struct{}
}

// ensureEmbedWalk makes sure the walk's index exists, once per Open: the
// first call builds it when needed, on a connection of its own with no
// statement or lock timeout, under an advisory lock, so that of several
// processes one builds and the others wait for it. A failed build is
// retried by the next call.
func (s *Store) ensureEmbedWalk(ctx context.Context) error {
	if s.embedWalk.ready.Load() {
		return nil
	}
	select {
	case s.embedWalk.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.embedWalk.turn }()
	if s.embedWalk.ready.Load() {
		return nil
	}
	cfg := s.cfg.Copy()
	cfg.RuntimeParams["statement_timeout"] = "0"
	cfg.RuntimeParams["lock_timeout"] = "0"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("embedding walk index: %w", unavailable(err))
	}
	defer conn.Close(context.WithoutCancel(ctx)) // the advisory lock goes with the session
	// Tried, not waited for: a build waits for every transaction open
	// when it starts, a session waiting for the lock among them.
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended('agentik embed walk ' || current_schema(), 0))").Scan(&got); err != nil {
			return fmt.Errorf("embedding walk index: %w", classify(err))
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(embedWalkRetry):
		}
	}
	var valid bool
	switch err := conn.QueryRow(ctx, qEmbedWalkValid).Scan(&valid); {
	case err == nil && valid:
	case err == nil || errors.Is(err, pgx.ErrNoRows):
		schema := pgx.Identifier{s.schema}.Sanitize()
		for _, q := range []string{qEmbedWalkDrop, qEmbedWalkCreate} { // no arguments: one statement, no transaction
			if _, err := conn.Exec(ctx, fmt.Sprintf(q, schema)); err != nil {
				return fmt.Errorf("embedding walk index: %w", classify(err))
			}
		}
	default:
		return fmt.Errorf("embedding walk index: %w", classify(err))
	}
	s.embedWalk.ready.Store(true)
	return nil
}

// UnembeddedMessages implements agentik.MessageEmbeddings.
func (s *Store) UnembeddedMessages(ctx context.Context, model string, since time.Time, limit int) ([]agentik.MessageText, error) {
	if err := s.ensureEmbedWalk(ctx); err != nil {
		return nil, err
	}
	if since.IsZero() {
		since = time.Unix(0, 0)
	}
	var out []agentik.MessageText
	err := s.read(ctx, "unembedded messages", func(qr querier) error {
		return queryEach(ctx, qr, func(row pgx.Rows) error {
			var id, payload string
			if err := row.Scan(&id, &payload); err != nil {
				return err
			}
			m, err := storeutil.EmbedText(id, payload)
			out = append(out, m)
			return err
		}, qUnembedded, s.agent, model, since, limit)
	})
	return out, err
}

// PutEmbeddings implements agentik.MessageEmbeddings, in one transaction.
func (s *Store) PutEmbeddings(ctx context.Context, model string, vs []agentik.MessageVector) error {
	if len(vs) == 0 {
		return nil
	}
	return s.write(ctx, "put embeddings", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, v := range vs {
			b.Queue(qPutVector, model, storeutil.EncodeVector(v.Vector), v.ID, s.agent)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// NearestMessages implements agentik.MessageEmbeddings: the newest
// agentik.MaxScanVectors vectors of the owner's scope, compared in memory.
func (s *Store) NearestMessages(ctx context.Context, owner string, q agentik.VectorQuery) ([]agentik.SearchHit, error) {
	hits := []agentik.SearchHit{}
	err := s.read(ctx, "nearest messages", func(qr querier) error {
		var ids []string
		var vecs [][]float32
		err := queryEach(ctx, qr, func(row pgx.Rows) error {
			var id string
			var raw []byte
			if err := row.Scan(&id, &raw); err != nil {
				return err
			}
			v, err := storeutil.DecodeVector(raw)
			ids, vecs = append(ids, id), append(vecs, v)
			return err
		}, qScopeVectors, storeutil.SearchScope(owner), s.agent, q.Model, agentik.MaxScanVectors)
		if err != nil {
			return err
		}
		for _, n := range storeutil.Nearest(vecs, q.Vector, q.MinSimilarity, q.Limit) {
			h, ok, err := vectorHit(ctx, qr, ids[n.Index], owner, s.agent)
			if err != nil {
				return err
			}
			if ok {
				hits = append(hits, h)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// vectorHit reads the hit of message id; false when it is not owner's
// with agent (or is gone).
func vectorHit(ctx context.Context, qr querier, id, owner, agent string) (agentik.SearchHit, bool, error) {
	var conv, typ, payload string
	var seq int64
	var date time.Time
	err := qr.QueryRow(ctx, qVectorHit, id, owner, agent).Scan(&conv, &seq, &typ, &date, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return agentik.SearchHit{}, false, nil
	}
	if err != nil {
		return agentik.SearchHit{}, false, err
	}
	h, err := storeutil.SearchHit(conv, seq, typ, agentik.TimeOf(date), payload, agentik.SearchQuery{})
	return h, err == nil, err
}
