package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ agentik.WebhookStore = (*Store)(nil)

// outboxHooks are the functions told of outbox rows this process wrote.
type outboxHooks struct {
	mu  sync.Mutex
	fns []func()
}

// OnOutbox registers fn, called after a commit that wrote outbox rows.
func (s *Store) OnOutbox(fn func()) {
	s.hooks.mu.Lock()
	s.hooks.fns = append(s.hooks.fns, fn)
	s.hooks.mu.Unlock()
}

// notifyOutbox tells the hooks when a committed write wrote outbox rows.
func (s *Store) notifyOutbox(wrote bool) {
	if !wrote {
		return
	}
	s.hooks.mu.Lock()
	fns := s.hooks.fns
	s.hooks.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// qEnqueueHook writes an event ($1, body $2, at $3) to the outbox of
// every enabled webhook of agent $4 that wants it: the owner's ($5) and
// the agent's own (all_owners).
const qEnqueueHook = `INSERT INTO webhook_deliveries (id, webhook_id, event, payload, created_at, next_attempt_at)
	SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), id, $1, $2, $3, $3 FROM webhooks
	WHERE agent_id = $4 AND enabled AND (owner = $5 OR all_owners) AND $1 = ANY (events)`

// queueHooks queues the outbox rows of a commit's events in its batch;
// *wrote is set once a row was written.
func queueHooks(b *pgx.Batch, agent, owner string, n *storeutil.Numbered, wrote *bool) {
	for i := range n.Events {
		ev, ok := agentik.WebhookEventOf(n.Events[i].Event, owner)
		if !ok {
			continue
		}
		b.Queue(qEnqueueHook, ev.Type, string(ev.Payload), n.Events[i].Event.Date.Time, agent, ev.Owner).Exec(func(ct pgconn.CommandTag) error {
			*wrote = *wrote || ct.RowsAffected() > 0
			return nil
		})
	}
}

// enqueueAgentEvent writes the webhook event of an agent event in tx.
func enqueueAgentEvent(ctx context.Context, tx pgx.Tx, agent string, ae agentik.AgentEvent) (bool, error) {
	ev, ok := agentik.WebhookAgentEventOf(ae)
	if !ok {
		return false, nil
	}
	tag, err := tx.Exec(ctx, qEnqueueHook, ev.Type, string(ev.Payload), ae.Date.Time, agent, ev.Owner)
	return err == nil && tag.RowsAffected() > 0, err
}

const webhookColumns = `id, agent_id, owner, all_owners, url, events, description, secret, enabled, disabled_reason, source, created_at`

func scanWebhook(row storeutil.Scanner) (agentik.Webhook, error) {
	var w agentik.Webhook
	var created time.Time
	err := row.Scan(&w.ID, &w.Agent, &w.Owner, &w.AllOwners, &w.URL, &w.Events, &w.Description, &w.Secret, &w.Enabled,
		&w.DisabledReason, &w.Source, &created)
	w.CreatedAt = agentik.TimeOf(created)
	return w, err
}

func insertWebhook(ctx context.Context, q querier, agent string, w agentik.Webhook) error {
	_, err := q.Exec(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		w.ID, agent, w.Owner, w.AllOwners, w.URL, w.Events, w.Description, w.Secret, w.Enabled, w.DisabledReason, w.Source, w.CreatedAt.Time)
	return err
}

// CreateWebhook stores w unless its owner has limit webhooks already.
func (s *Store) CreateWebhook(ctx context.Context, w agentik.Webhook, limit int) error {
	return s.write(ctx, "create webhook", func(tx pgx.Tx) error {
		if limit > 0 {
			var n int
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentik.webhooks/' || $1 || '/' || $2))`, s.agent, w.Owner); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE agent_id = $1 AND owner = $2 AND NOT all_owners`, s.agent, w.Owner).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return agentik.Errorf(agentik.ERateLimited, "at most %d webhooks per principal", limit)
			}
		}
		return insertWebhook(ctx, tx, s.agent, w)
	})
}

// PutWebhook replaces the webhook of w.ID.
func (s *Store) PutWebhook(ctx context.Context, w agentik.Webhook) error {
	return s.write(ctx, "put webhook", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET owner = $1, all_owners = $2, url = $3, events = $4, description = $5, secret = $6,
			enabled = $7, disabled_reason = $8 WHERE id = $9 AND agent_id = $10`, w.Owner, w.AllOwners, w.URL, w.Events,
			w.Description, w.Secret, w.Enabled, w.DisabledReason, w.ID, s.agent)
		if err := oneRow(tag, err, w.ID); !agentik.IsNotFound(err) {
			return err
		}
		return insertWebhook(ctx, tx, s.agent, w)
	})
}

// GetWebhook returns the agent's webhook id.
func (s *Store) GetWebhook(ctx context.Context, id string) (agentik.Webhook, error) {
	var w agentik.Webhook
	err := s.read(ctx, "get webhook", func(q querier) error {
		var err error
		w, err = scanWebhook(q.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1 AND agent_id = $2`, id, s.agent))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		return err
	})
	return w, err
}

// ListWebhooks returns the owner's webhooks of the agent (not the config
// file's), oldest first.
func (s *Store) ListWebhooks(ctx context.Context, owner string) ([]agentik.Webhook, error) {
	var list []agentik.Webhook
	err := s.read(ctx, "list webhooks", func(q querier) error {
		var err error
		list, err = collect(ctx, q, scanWebhook, `SELECT `+webhookColumns+` FROM webhooks WHERE agent_id = $1 AND owner = $2 AND NOT all_owners
			ORDER BY created_at, id`, s.agent, owner)
		return err
	})
	return list, err
}

// DeleteWebhook removes the webhook and its deliveries.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.write(ctx, "delete webhook", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND agent_id = $2`, id, s.agent)
		return oneRow(tag, err, id)
	})
}

const deliveryColumns = `d.id, d.webhook_id, d.event, d.payload, d.status, d.attempts, d.created_at, d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error`

func scanDelivery(row storeutil.Scanner, more ...any) (agentik.Delivery, error) {
	var d agentik.Delivery
	var payload string
	var created, next time.Time
	var last *time.Time
	err := row.Scan(append([]any{&d.ID, &d.WebhookID, &d.Event, &payload, &d.Status, &d.Attempts, &created, &next, &last,
		&d.LastStatus, &d.LastError}, more...)...)
	d.Payload = agentik.RawJSON(payload)
	d.CreatedAt, d.LastAttemptAt = agentik.TimeOf(created), fromOptTime(last)
	if d.Status == agentik.DeliveryPending {
		t := agentik.TimeOf(next)
		d.NextAttemptAt = &t
	}
	return d, err
}

// Deliveries returns the webhook's latest deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, webhookID string, limit int) ([]agentik.Delivery, error) {
	var list []agentik.Delivery
	err := s.read(ctx, "webhook deliveries", func(q querier) error {
		var err error
		list, err = collect(ctx, q, func(r storeutil.Scanner) (agentik.Delivery, error) { return scanDelivery(r) },
			`SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, webhookID, limit)
		return err
	})
	return list, err
}

// ClaimDeliveries takes due deliveries of any agent until leaseUntil;
// rows another process is taking at the same moment are skipped.
func (s *Store) ClaimDeliveries(ctx context.Context, now, leaseUntil agentik.Time, limit int) ([]agentik.Delivery, error) {
	var list []agentik.Delivery
	err := s.write(ctx, "claim deliveries", func(tx pgx.Tx) error {
		var err error
		list, err = collect(ctx, tx, func(r storeutil.Scanner) (agentik.Delivery, error) {
			var url, secret string
			d, err := scanDelivery(r, &url, &secret)
			d.URL, d.Secret = url, secret
			return d, err
		}, `UPDATE webhook_deliveries d SET next_attempt_at = $1 FROM webhooks w
			WHERE w.id = d.webhook_id AND d.id IN (SELECT id FROM webhook_deliveries
				WHERE status = 'pending' AND next_attempt_at <= $2 ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING `+deliveryColumns+`, w.url, w.secret`, leaseUntil.Time, now.Time, limit)
		return err
	})
	return list, err
}

// RecordDelivery stores an attempt's result; disable (a reason) also
// disables the webhook.
func (s *Store) RecordDelivery(ctx context.Context, d agentik.Delivery, disable string) error {
	return s.write(ctx, "record delivery", func(tx pgx.Tx) error {
		next := d.LastAttemptAt
		if d.NextAttemptAt != nil {
			next = d.NextAttemptAt
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = $2, next_attempt_at = $3, last_attempt_at = $4,
			last_status = $5, last_error = $6 WHERE id = $7`, d.Status, d.Attempts, optTime(next), optTime(d.LastAttemptAt),
			d.LastStatus, d.LastError, d.ID); err != nil {
			return err
		}
		if disable == "" {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = $1 WHERE id = $2`, disable, d.WebhookID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', last_error = $1 WHERE webhook_id = $2 AND status = 'pending'`,
			"webhook disabled: "+disable, d.WebhookID)
		return err
	})
}

// OutboxStats counts pending deliveries and dates the oldest.
func (s *Store) OutboxStats(ctx context.Context) (int64, agentik.Time, error) {
	var n int64
	var oldest *time.Time
	err := s.read(ctx, "outbox stats", func(q querier) error {
		return q.QueryRow(ctx, `SELECT count(*), min(created_at) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n, &oldest)
	})
	if err != nil || oldest == nil {
		return n, agentik.Time{}, err
	}
	return n, agentik.TimeOf(*oldest), nil
}
