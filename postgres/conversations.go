package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// CreateConversation stores c and its created agent event in one transaction.
// An id that already exists is EConflict.
func (s *Store) CreateConversation(ctx context.Context, c agentik.ConversationRecord) (agentik.AgentEvent, error) {
	ev, err := storeutil.Created(&c)
	if err != nil {
		return agentik.AgentEvent{}, err
	}
	hooked := false // webhooks' outbox rows written (outbox.go)
	err = s.write(ctx, "create conversation "+c.ID, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qInsertConversation,
			c.ID, c.Owner, c.Title, c.Temporal, c.CreatedAt.Time, c.UpdatedAt.Time, c.Tokens.Input, c.Tokens.Output, s.agent,
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
	// Its first commit (most often this process's) starts from the
	// columns' defaults.
	s.states.put(c.ID, commitState{owner: c.Owner, agent: s.agent, nextSeq: 1, nextOrd: 1, sure: true})
	return ev, nil
}

// GetConversation returns the conversation, ENotFound when there is none.
func (s *Store) GetConversation(ctx context.Context, id string) (agentik.ConversationRecord, error) {
	var c agentik.ConversationRecord
	err := s.read(ctx, "get conversation "+id, func(q querier) error {
		var err error
		c, err = scanConversation(q.QueryRow(ctx, qGetConversation, id, s.agent))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		return err
	})
	return c, err
}

func scanConversation(row storeutil.Scanner) (agentik.ConversationRecord, error) {
	var c agentik.ConversationRecord
	var created, updated time.Time
	var forked string
	var forkedSeq int64
	err := row.Scan(&c.ID, &c.Owner, &c.Title, &c.Temporal, &created, &updated, &c.Tokens.Input, &c.Tokens.Output,
		&c.Head, &forked, &forkedSeq)
	c.ForkedFrom = storeutil.Forked(forked, forkedSeq)
	c.CreatedAt = agentik.TimeOf(created)
	c.UpdatedAt = agentik.TimeOf(updated)
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
		query, args = qListBefore, []any{s.agent, owner, at.Time, id, limit + 1}
	}
	list := []agentik.ConversationRecord{}
	err := s.read(ctx, "list conversations", func(q querier) error {
		return queryEach(ctx, q, func(rows pgx.Rows) error {
			c, err := scanConversation(rows)
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
// at. It does not change updated_at (the renamed event carries none).
func (s *Store) RenameConversation(ctx context.Context, id, title string, at agentik.Time) (agentik.ConversationRecord, agentik.AgentEvent, error) {
	var c agentik.ConversationRecord
	var ev agentik.AgentEvent
	err := s.write(ctx, "rename conversation "+id, func(tx pgx.Tx) error {
		var err error
		c, err = scanConversation(tx.QueryRow(ctx, qRename, title, id, s.agent))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
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
// journal, events, memory and image references, whose trigger deletes the
// images no other conversation references (migrations/0003). The deleted
// agent event stays.
func (s *Store) DeleteConversation(ctx context.Context, id string, at agentik.Time) (agentik.AgentEvent, error) {
	var ev agentik.AgentEvent
	hooked := false // webhooks' outbox rows written (outbox.go)
	err := s.write(ctx, "delete conversation "+id, func(tx pgx.Tx) error {
		// Locks in Commit's order — the conversation, then its images by
		// hash — before the cascade takes the images in whatever order it
		// finds them.
		var owner string
		err := tx.QueryRow(ctx, qLockConversation, id).Scan(&owner)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qLockImages, id); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, qDelete, id, s.agent).Scan(&owner)
		if errors.Is(err, pgx.ErrNoRows) {
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
	s.states.drop(id)
	return ev, nil
}

// insertAgentEvent stores ev unnumbered: the sequencer gives it its cursor
// once committed (qSequence), so ev.Cursor stays 0. The payload is the
// event's JSON without the cursor and the owner (both columns).
func insertAgentEvent(ctx context.Context, tx pgx.Tx, agent string, ev *agentik.AgentEvent) error {
	payload, err := storeutil.AgentPayload(ev)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, qInsertAgentEvent, ev.ConversationID, ev.Owner, ev.Type, ev.Date.Time, payload, agent)
	return err
}
