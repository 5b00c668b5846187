package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

var _ agentik.MemoryStore = (*Store)(nil)

// MemoryValues returns the stored values of owner's memory blocks.
func (s *Store) MemoryValues(ctx context.Context, owner string) ([]agentik.MemoryBlock, error) {
	var out []agentik.MemoryBlock
	err := s.read(ctx, "read memory", func(q querier) error {
		var err error
		out, err = collect(ctx, q, func(row storeutil.Scanner) (agentik.MemoryBlock, error) {
			var b agentik.MemoryBlock
			var at time.Time
			err := row.Scan(&b.Label, &b.Value, &at, &b.UpdatedBy)
			b.UpdatedAt = agentik.TimeOf(at)
			return b, err
		}, `SELECT label, value, updated_at, updated_by FROM memory_blocks WHERE agent_id = $1 AND owner = $2 ORDER BY label`, s.agent, owner)
		return err
	})
	return out, err
}

// lockMemory serialises the changes of one set of blocks across processes
// until the transaction ends: a change compares the current value before
// it writes, and a block without a stored row has no row to lock.
func (s *Store) lockMemory(ctx context.Context, tx pgx.Tx, owner string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7919))`, "memory/"+s.agent+"/"+owner)
	return err
}

// ChangeMemory writes the change, its history row and its memory_updated
// agent event in one transaction; the Bus numbers the event once committed.
func (s *Store) ChangeMemory(ctx context.Context, c agentik.MemoryChange) (agentik.AgentEvent, error) {
	var ev agentik.AgentEvent
	err := s.write(ctx, "change memory", func(tx pgx.Tx) error {
		if err := s.lockMemory(ctx, tx, c.Owner); err != nil {
			return err
		}
		cur := c.Seed
		err := tx.QueryRow(ctx, `SELECT value FROM memory_blocks WHERE agent_id = $1 AND owner = $2 AND label = $3`, s.agent, c.Owner, c.Label).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if cur != c.Old {
			return agentik.Errorf(agentik.EConflict, "memory block %s changed meanwhile", c.Label)
		}
		newValue := c.New
		if c.Reset {
			newValue = c.Seed
			_, err = tx.Exec(ctx, `DELETE FROM memory_blocks WHERE agent_id = $1 AND owner = $2 AND label = $3`, s.agent, c.Owner, c.Label)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO memory_blocks (agent_id, owner, label, value, updated_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (agent_id, owner, label) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
				s.agent, c.Owner, c.Label, c.New, c.Date.Time, c.By)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_history (agent_id, owner, label, old_value, new_value, by_whom, conversation_id, date) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			s.agent, c.Owner, c.Label, cur, newValue, c.By, c.ConversationID, c.Date.Time); err != nil {
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
	var out []agentik.MemoryHistoryEntry
	err := s.read(ctx, "read memory history", func(q querier) error {
		var err error
		out, err = collect(ctx, q, func(row storeutil.Scanner) (agentik.MemoryHistoryEntry, error) {
			var h agentik.MemoryHistoryEntry
			var at time.Time
			err := row.Scan(&h.ID, &h.Label, &h.OldValue, &h.NewValue, &h.By, &h.ConversationID, &at)
			h.Date = agentik.TimeOf(at)
			return h, err
		}, `SELECT id, label, old_value, new_value, by_whom, conversation_id, date FROM memory_history
			WHERE agent_id = $1 AND owner = $2 AND label = $3 AND id < $4 ORDER BY id DESC LIMIT $5`, s.agent, owner, label, before, limit)
		return err
	})
	return out, err
}

// ForgetMemory removes owner's stored values and history.
func (s *Store) ForgetMemory(ctx context.Context, owner, by string, at agentik.Time) ([]agentik.AgentEvent, error) {
	var evs []agentik.AgentEvent
	err := s.write(ctx, "forget memory", func(tx pgx.Tx) error {
		evs = nil
		if err := s.lockMemory(ctx, tx, owner); err != nil {
			return err
		}
		labels, err := collect(ctx, tx, func(row storeutil.Scanner) (string, error) {
			var l string
			return l, row.Scan(&l)
		}, `DELETE FROM memory_blocks WHERE agent_id = $1 AND owner = $2 RETURNING label`, s.agent, owner)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM memory_history WHERE agent_id = $1 AND owner = $2`, s.agent, owner); err != nil {
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
