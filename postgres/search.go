package postgres

import (
	"context"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

var _ agentik.MessageSearcher = (*Store)(nil)

// qSearch finds the newest $5 messages of the owner's scope $2 (the
// owner's token, migrations/0013) with every word of $1, checks the owner
// and agent of each on its conversation, and reads their payloads. The
// planner chooses between two walks from what its statistics say of the
// words: for a rare word the GIN index (the words and the scope token
// with weight A, so a word another principal wrote many times costs
// nothing), then a sort of the few matches; for a word in many of the
// owner's messages the btree index of the scope's messages newest first,
// stopping at the limit. It can only choose with the words in hand, so the
// query is planned at every call (QueryExecModeExec: no cached generic
// plan). A query plainto_tsquery reads no word from matches nothing
// (numnode), never every message of the scope.
const qSearch = `SELECT m.conversation_id, m.seq, m.type, m.date, m.payload
	FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
	WHERE numnode(plainto_tsquery('simple', $1::text)) > 0
		AND m.search @@ (plainto_tsquery('simple', $1::text) && CAST($3::text AS tsquery))
		AND m.search IS NOT NULL AND m.search_scope = $2
		AND c.owner = $4 AND c.agent_id = $5
	ORDER BY m.date DESC, m.conversation_id DESC, m.seq DESC LIMIT $6`

// SearchMessages implements agentik.MessageSearcher.
func (s *Store) SearchMessages(ctx context.Context, owner string, q agentik.SearchQuery, limit int) ([]agentik.SearchHit, error) {
	hits := []agentik.SearchHit{}
	if len(q.Terms) == 0 || limit <= 0 {
		return hits, nil
	}
	scope := storeutil.SearchScope(owner)
	err := s.read(ctx, "search messages", func(qr querier) error {
		return queryEach(ctx, qr, func(row pgx.Rows) error {
			var conv, typ, payload string
			var seq int64
			var date time.Time
			if err := row.Scan(&conv, &seq, &typ, &date, &payload); err != nil {
				return err
			}
			h, err := storeutil.SearchHit(conv, seq, typ, agentik.TimeOf(date), payload, q)
			hits = append(hits, h)
			return err
		}, qSearch, pgx.QueryExecModeExec, q.Text(), scope, scope+":A", owner, s.agent, limit)
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}
