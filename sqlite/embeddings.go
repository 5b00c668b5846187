package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

var _ agentik.MessageEmbeddings = (*Store)(nil)

// The vector index of migrations/0013.
const (
	// The agent's user and assistant messages, newest first (a walk of the
	// journal by rowid, down from the top), each with whether it is dated
	// before the walk's floor and whether it has a vector of the model
	// (one primary-key lookup): the caller stops at the first one before
	// the floor, so a walk costs the messages since then.
	qUnembedded = `SELECT m.id, m.payload, m.date < ?,
			EXISTS (SELECT 1 FROM message_vectors AS v WHERE v.message_id = m.id AND v.model = ?)
		FROM messages AS m CROSS JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.type IN ('user_message', 'assistant_message') AND c.agent_id = ?
		ORDER BY m.rowid DESC`
	// A message deleted meanwhile is not there to select: nothing is written.
	qPutVector = `INSERT INTO message_vectors (message_id, agent_id, scope, model, date, vector)
		SELECT m.id, c.agent_id, agentik_search_scope(c.owner), ?, m.date, ?
		FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.id = ? AND c.agent_id = ?
		ON CONFLICT (message_id) DO UPDATE SET model = excluded.model, vector = excluded.vector`
	qScopeVectors = `SELECT message_id, vector FROM message_vectors
		WHERE scope = ? AND agent_id = ? AND model = ? AND length(vector) > 0
		ORDER BY date DESC LIMIT ?`
	// A hit is checked on its conversation: the owner and the agent.
	qVectorHit = `SELECT m.conversation_id, m.seq, m.type, m.date, m.payload
		FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.id = ? AND c.owner = ? AND c.agent_id = ?`
)

// UnembeddedMessages implements agentik.MessageEmbeddings.
func (s *Store) UnembeddedMessages(ctx context.Context, model string, since time.Time, limit int) ([]agentik.MessageText, error) {
	var out []agentik.MessageText
	floor := int64(math.MinInt64)
	if !since.IsZero() {
		floor = since.UnixMilli()
	}
	err := s.read(ctx, "unembedded messages", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			var id, payload string
			var old, has bool
			if err := row.Scan(&id, &payload, &old, &has); err != nil {
				return err
			}
			if old || len(out) == limit {
				return errWalked
			}
			if has {
				return nil
			}
			m, err := storeutil.EmbedText(id, payload)
			out = append(out, m)
			return err
		}, qUnembedded, floor, model, s.agent)
	})
	if errors.Is(err, errWalked) {
		err = nil
	}
	return out, err
}

// errWalked ends a walk of the journal that found what it wanted.
var errWalked = errors.New("walked far enough")

// PutEmbeddings implements agentik.MessageEmbeddings.
func (s *Store) PutEmbeddings(ctx context.Context, model string, vs []agentik.MessageVector) error {
	if len(vs) == 0 {
		return nil
	}
	return s.write(ctx, "put embeddings", func(tx *wtx) error {
		for _, v := range vs {
			if _, err := tx.ExecContext(ctx, qPutVector, model, storeutil.EncodeVector(v.Vector), v.ID, s.agent); err != nil {
				return err
			}
		}
		return nil
	})
}

// NearestMessages implements agentik.MessageEmbeddings: the newest
// agentik.MaxScanVectors vectors of the owner's scope, compared in memory.
func (s *Store) NearestMessages(ctx context.Context, owner string, q agentik.VectorQuery) ([]agentik.SearchHit, error) {
	hits := []agentik.SearchHit{}
	err := s.read(ctx, "nearest messages", func(r *reader) error {
		var ids []string
		var vecs [][]float32
		err := r.Each(ctx, func(row storeutil.Scanner) error {
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
			h, ok, err := vectorHit(ctx, r, ids[n.Index], owner, s.agent)
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
func vectorHit(ctx context.Context, r *reader, id, owner, agent string) (agentik.SearchHit, bool, error) {
	var conv, typ, payload string
	var seq, date int64
	err := r.QueryRowContext(ctx, qVectorHit, id, owner, agent).Scan(&conv, &seq, &typ, &date, &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return agentik.SearchHit{}, false, nil
	}
	if err != nil {
		return agentik.SearchHit{}, false, err
	}
	h, err := storeutil.SearchHit(conv, seq, typ, fromMS(date), payload, agentik.SearchQuery{})
	return h, err == nil, err
}
