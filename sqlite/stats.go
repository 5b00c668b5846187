package sqlite

import (
	"context"

	"github.com/agentik/agentik"
)

var _ agentik.StatsReader = (*Store)(nil)

// Stats counts the view's conversations, their messages (from the seq
// counters, one row per conversation), their durable events (the
// events_conversation_cursor index) and the agent's events, and reports
// the size of the database file (pages in use and free, without the WAL).
func (s *Store) Stats(ctx context.Context) (agentik.StoreStats, error) {
	var st agentik.StoreStats
	err := s.read(ctx, "stats", func(r *reader) error {
		if err := r.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(next_seq - 1), 0) FROM conversations WHERE agent_id = ?`,
			s.agent).Scan(&st.Conversations, &st.Messages); err != nil {
			return err
		}
		if err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM conversations AS c JOIN events AS e ON e.conversation_id = c.id
			WHERE c.agent_id = ?`, s.agent).Scan(&st.Events); err != nil {
			return err
		}
		if err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM agent_events WHERE agent_id = ?`, s.agent).Scan(&st.AgentEvents); err != nil {
			return err
		}
		return r.db.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&st.DatabaseBytes)
	})
	return st, err
}
