package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

// CreateConversation stores c and its created agent event in one transaction.
// An id that already exists is EConflict.
func (s *Store) CreateConversation(ctx context.Context, c agentik.ConversationRecord) (agentik.AgentEvent, error) {
	ev, err := storeutil.Created(&c)
	if err != nil {
		return agentik.AgentEvent{}, err
	}
	hooked := false // webhooks' outbox rows written (webhooks.go)
	err = s.write(ctx, "create conversation "+c.ID, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, qInsertConversation,
			c.ID, c.Owner, c.Title, c.Temporal, ms(c.CreatedAt), ms(c.UpdatedAt), c.Tokens.Input, c.Tokens.Output, s.agent,
			storeutil.ForkedFromID(c.ForkedFrom), storeutil.ForkedFromSeq(c.ForkedFrom)); err != nil {
			return err
		}
		if err := insertAgentEvent(ctx, tx, s.agent, &ev); err != nil {
			return err
		}
		hooked, err = enqueueAgentEvent(ctx, tx, s.agent, ev)
		return err
	})
	if err != nil {
		return agentik.AgentEvent{}, err
	}
	s.notifyOutbox(hooked)
	return ev, nil
}

// GetConversation returns the conversation, ENotFound when there is none.
func (s *Store) GetConversation(ctx context.Context, id string) (agentik.ConversationRecord, error) {
	var c agentik.ConversationRecord
	err := s.read(ctx, "get conversation "+id, func(r *reader) error {
		var err error
		c, err = getConversation(ctx, r, s.agent, id)
		return err
	})
	return c, err
}

func getConversation(ctx context.Context, q queryer, agent, id string) (agentik.ConversationRecord, error) {
	c, err := scanConversation(q.QueryRowContext(ctx, qGetConversation, id, agent))
	if errors.Is(err, sql.ErrNoRows) {
		return c, notFound(id)
	}
	return c, err
}

func scanConversation(row storeutil.Scanner) (agentik.ConversationRecord, error) {
	var c agentik.ConversationRecord
	var created, updated, forkedSeq int64
	var forked string
	err := row.Scan(&c.ID, &c.Owner, &c.Title, &c.Temporal, &created, &updated, &c.Tokens.Input, &c.Tokens.Output,
		&c.Head, &forked, &forkedSeq)
	c.ForkedFrom = storeutil.Forked(forked, forkedSeq)
	c.CreatedAt = fromMS(created)
	c.UpdatedAt = fromMS(updated)
	return c, err
}

// ListConversations pages the owner's conversations, newest updated_at first
// (ties by id, descending), using the (owner, updated_at, id) index. limit <= 0
// means 50; it is capped at 500.
func (s *Store) ListConversations(ctx context.Context, owner string, limit int, before string) ([]agentik.ConversationRecord, string, error) {
	limit = storeutil.ListLimit(limit)
	// One more than the limit tells whether a next page exists.
	query, args := qList, []any{s.agent, owner, limit + 1}
	if before != "" {
		at, id, err := agentik.ParseListToken(before)
		if err != nil {
			return nil, "", err
		}
		query, args = qListBefore, []any{s.agent, owner, ms(at), ms(at), id, limit + 1}
	}

	list := []agentik.ConversationRecord{}
	err := s.read(ctx, "list conversations", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			c, err := scanConversation(row)
			list = append(list, c)
			return err
		}, query, args...)
	})
	if err != nil {
		return nil, "", err
	}
	list, next := storeutil.ListPage(list, limit)
	return list, next, nil
}

// RenameConversation sets the title and appends a renamed agent event dated
// at. It does not change updated_at: the renamed event carries no updated_at,
// so clients keeping a list from agent events would drift from the store.
func (s *Store) RenameConversation(ctx context.Context, id, title string, at agentik.Time) (agentik.ConversationRecord, agentik.AgentEvent, error) {
	var c agentik.ConversationRecord
	var ev agentik.AgentEvent
	err := s.write(ctx, "rename conversation "+id, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, qRename, title, id, s.agent)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound(id)
		}
		if c, err = getConversation(ctx, tx, s.agent, id); err != nil {
			return err
		}
		ev = storeutil.Renamed(id, title, c.Owner, at)
		return insertAgentEvent(ctx, tx, s.agent, &ev)
	})
	if err != nil {
		return agentik.ConversationRecord{}, agentik.AgentEvent{}, err
	}
	return c, ev, nil
}

// DeleteConversation removes the conversation; foreign keys cascade to its
// journal, events and memory. The deleted agent event stays.
func (s *Store) DeleteConversation(ctx context.Context, id string, at agentik.Time) (agentik.AgentEvent, error) {
	var ev agentik.AgentEvent
	hooked := false // webhooks' outbox rows written (webhooks.go)
	err := s.write(ctx, "delete conversation "+id, func(tx *wtx) error {
		var owner string
		err := tx.QueryRowContext(ctx, qDelete, id, s.agent).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		ev = storeutil.Deleted(id, owner, at)
		if err := insertAgentEvent(ctx, tx, s.agent, &ev); err != nil {
			return err
		}
		hooked, err = enqueueAgentEvent(ctx, tx, s.agent, ev)
		return err
	})
	if err != nil {
		return agentik.AgentEvent{}, err
	}
	s.notifyOutbox(hooked)
	return ev, nil
}

// insertAgentEvent stores ev and sets its cursor. The payload is the event's
// JSON without the cursor (a column) and without the owner (not on the wire,
// a column too).
func insertAgentEvent(ctx context.Context, tx *wtx, agent string, ev *agentik.AgentEvent) error {
	ev.Cursor = 0
	payload, err := storeutil.AgentPayload(ev)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, qInsertAgentEvent, ev.ConversationID, ev.Owner, ev.Type, ms(ev.Date), payload, agent)
	if err != nil {
		return err
	}
	ev.Cursor, err = res.LastInsertId()
	return err
}

// ms is the stored form of a time: Unix milliseconds, the wire precision.
func ms(t agentik.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) agentik.Time { return agentik.TimeOf(time.UnixMilli(v)) }
