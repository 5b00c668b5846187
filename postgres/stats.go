package postgres

import (
	"context"

	"github.com/agentik/agentik"
)

var _ agentik.StatsReader = (*Store)(nil)

// Stats counts the view's conversations, their messages (from the seq
// counters, one row per conversation), their durable events (the
// events primary key, (conversation_id, cursor)) and the agent's events, in one
// statement, and reports the size of the store's tables in its schema
// with their indexes and TOAST (pg_total_relation_size): other schemas of
// the same database are not counted.
func (s *Store) Stats(ctx context.Context) (agentik.StoreStats, error) {
	var st agentik.StoreStats
	err := s.read(ctx, "stats", func(q querier) error {
		return q.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM conversations WHERE agent_id = $1),
			(SELECT coalesce(sum(next_seq - 1), 0)::bigint FROM conversations WHERE agent_id = $1),
			(SELECT count(*) FROM conversations AS c JOIN events AS e ON e.conversation_id = c.id WHERE c.agent_id = $1),
			(SELECT count(*) FROM agent_events WHERE agent_id = $1 AND cursor IS NOT NULL) +
				(SELECT count(*) FROM agent_events WHERE agent_id = $1 AND cursor IS NULL),
			(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class AS c
				JOIN pg_namespace AS n ON n.oid = c.relnamespace
				WHERE n.nspname = current_schema() AND c.relkind = 'r')`, s.agent).
			Scan(&st.Conversations, &st.Messages, &st.Events, &st.AgentEvents, &st.DatabaseBytes)
	})
	return st, err
}
