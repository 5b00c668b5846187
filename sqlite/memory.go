package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

var _ agentik.MemoryStore = (*Store)(nil)

// MemoryValues returns the stored values of owner's memory blocks.
func (s *Store) MemoryValues(ctx context.Context, owner string) ([]agentik.MemoryBlock, error) {
	var out []agentik.MemoryBlock
	err := s.read(ctx, "read memory", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			var b agentik.MemoryBlock
			var at int64
			err := row.Scan(&b.Label, &b.Value, &at, &b.UpdatedBy)
			b.UpdatedAt = fromMS(at)
			out = append(out, b)
			return err
		}, `SELECT label, value, updated_at, updated_by FROM memory_blocks WHERE agent_id = ? AND owner = ? ORDER BY label`, s.agent, owner)
	})
	return out, err
}

// ChangeMemory writes the change, its history row and its memory_updated
// agent event in one transaction (numbered in it: the single writer).
func (s *Store) ChangeMemory(ctx context.Context, c agentik.MemoryChange) (agentik.AgentEvent, error) {
	var ev agentik.AgentEvent
	err := s.write(ctx, "change memory", func(tx *wtx) error {
		cur := c.Seed
		err := tx.QueryRowContext(ctx, `SELECT value FROM memory_blocks WHERE agent_id = ? AND owner = ? AND label = ?`, s.agent, c.Owner, c.Label).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if cur != c.Old {
			return agentik.Errorf(agentik.EConflict, "memory block %s changed meanwhile", c.Label)
		}
		newValue := c.New
		if c.Reset {
			newValue = c.Seed
			_, err = tx.ExecContext(ctx, `DELETE FROM memory_blocks WHERE agent_id = ? AND owner = ? AND label = ?`, s.agent, c.Owner, c.Label)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO memory_blocks (agent_id, owner, label, value, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (agent_id, owner, label) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
				s.agent, c.Owner, c.Label, c.New, ms(c.Date), c.By)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_history (agent_id, owner, label, old_value, new_value, by, conversation_id, date) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			s.agent, c.Owner, c.Label, cur, newValue, c.By, c.ConversationID, ms(c.Date)); err != nil {
			return err
		}
		ev = agentik.MemoryEvent(c.Label, c.By, c.ConversationID, c.Principal, c.Date)
		return insertAgentEvent(ctx, tx, s.agent, &ev)
	})
	if err != nil {
		return agentik.AgentEvent{}, err
	}
	return ev, nil
}

// MemoryHistory returns label's past changes in owner's set, newest first.
func (s *Store) MemoryHistory(ctx context.Context, owner, label string, before int64, limit int) ([]agentik.MemoryHistoryEntry, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	out := []agentik.MemoryHistoryEntry{}
	err := s.read(ctx, "read memory history", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			var h agentik.MemoryHistoryEntry
			var at int64
			err := row.Scan(&h.ID, &h.Label, &h.OldValue, &h.NewValue, &h.By, &h.ConversationID, &at)
			h.Date = fromMS(at)
			out = append(out, h)
			return err
		}, `SELECT id, label, old_value, new_value, by, conversation_id, date FROM memory_history
			WHERE agent_id = ? AND owner = ? AND label = ? AND id < ? ORDER BY id DESC LIMIT ?`, s.agent, owner, label, before, limit)
	})
	return out, err
}

// ForgetMemory removes owner's stored values and history.
func (s *Store) ForgetMemory(ctx context.Context, owner, by string, at agentik.Time) ([]agentik.AgentEvent, error) {
	var evs []agentik.AgentEvent
	err := s.write(ctx, "forget memory", func(tx *wtx) error {
		evs = nil
		rows, err := tx.QueryContext(ctx, `DELETE FROM memory_blocks WHERE agent_id = ? AND owner = ? RETURNING label`, s.agent, owner)
		if err != nil {
			return err
		}
		var labels []string
		err = storeutil.Each(rows, func(r *sql.Rows) error {
			var l string
			labels = append(labels, l)
			return r.Scan(&labels[len(labels)-1])
		})
		rows.Close()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_history WHERE agent_id = ? AND owner = ?`, s.agent, owner); err != nil {
			return err
		}
		slices.Sort(labels)
		for _, l := range labels {
			ev := agentik.MemoryEvent(l, by, "", by, at)
			if err := insertAgentEvent(ctx, tx, s.agent, &ev); err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		return nil
	})
	return evs, err
}
