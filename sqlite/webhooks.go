package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

var _ agentik.WebhookStore = (*Store)(nil)

// outboxHooks are the functions told of outbox rows this process wrote.
type outboxHooks struct {
	mu  sync.Mutex
	fns []func()
}

func (h *outboxHooks) add(fn func()) {
	h.mu.Lock()
	h.fns = append(h.fns, fn)
	h.mu.Unlock()
}

func (h *outboxHooks) notify() {
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// OnOutbox registers fn, called after a commit that wrote outbox rows.
func (s *Store) OnOutbox(fn func()) { s.hooks.add(fn) }

const qEnqueueHook = `INSERT INTO webhook_deliveries (id, webhook_id, event, payload, created_at, next_attempt_at)
	SELECT 'msg_' || lower(hex(randomblob(16))), id, ?1, ?2, ?3, ?3 FROM webhooks
	WHERE agent_id = ?4 AND enabled = 1 AND (owner = ?5 OR all_owners = 1) AND instr(events, ' ' || ?1 || ' ') > 0`

// enqueueHooks writes ev to the outbox of every webhook of the agent that
// wants it, in tx, and reports whether it wrote any row: the caller tells
// the hooks (notifyOutbox) once tx committed.
func enqueueHooks(ctx context.Context, tx *wtx, agent string, ev agentik.WebhookEvent, at agentik.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, qEnqueueHook, ev.Type, string(ev.Payload), ms(at), agent, ev.Owner)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// enqueueEvents writes the webhook events of a commit's events.
func enqueueEvents(ctx context.Context, tx *wtx, agent, owner string, n *storeutil.Numbered) (bool, error) {
	wrote := false
	for i := range n.Events {
		if ev, ok := agentik.WebhookEventOf(n.Events[i].Event, owner); ok {
			w, err := enqueueHooks(ctx, tx, agent, ev, n.Events[i].Event.Date)
			if err != nil {
				return false, err
			}
			wrote = wrote || w
		}
	}
	return wrote, nil
}

// enqueueAgentEvent writes the webhook event of an agent event.
func enqueueAgentEvent(ctx context.Context, tx *wtx, agent string, ae agentik.AgentEvent) (bool, error) {
	if ev, ok := agentik.WebhookAgentEventOf(ae); ok {
		return enqueueHooks(ctx, tx, agent, ev, ae.Date)
	}
	return false, nil
}

// notifyOutbox tells the hooks when a committed write wrote outbox rows.
func (s *Store) notifyOutbox(wrote bool) {
	if wrote {
		s.hooks.notify()
	}
}

const webhookColumns = `id, agent_id, owner, all_owners, url, events, description, secret, enabled, disabled_reason, source, created_at`

func scanWebhook(row storeutil.Scanner) (agentik.Webhook, error) {
	var w agentik.Webhook
	var events string
	var created int64
	err := row.Scan(&w.ID, &w.Agent, &w.Owner, &w.AllOwners, &w.URL, &events, &w.Description, &w.Secret, &w.Enabled,
		&w.DisabledReason, &w.Source, &created)
	w.Events = strings.Fields(events)
	w.CreatedAt = fromMS(created)
	return w, err
}

func insertWebhook(ctx context.Context, tx *wtx, agent string, w agentik.Webhook) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, agent, w.Owner, w.AllOwners, w.URL, " "+strings.Join(w.Events, " ")+" ", w.Description, w.Secret, w.Enabled,
		w.DisabledReason, w.Source, ms(w.CreatedAt))
	return err
}

// CreateWebhook stores w unless its owner has limit webhooks already.
func (s *Store) CreateWebhook(ctx context.Context, w agentik.Webhook, limit int) error {
	return s.write(ctx, "create webhook", func(tx *wtx) error {
		if limit > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM webhooks WHERE agent_id = ? AND owner = ? AND all_owners = 0`, s.agent, w.Owner).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return agentik.Errorf(agentik.ERateLimited, "at most %d webhooks per principal", limit)
			}
		}
		return insertWebhook(ctx, tx, s.agent, w)
	})
}

// PutWebhook replaces the webhook of w.ID (its deliveries stay when the
// URL and the secret are the same).
func (s *Store) PutWebhook(ctx context.Context, w agentik.Webhook) error {
	return s.write(ctx, "put webhook", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhooks SET owner = ?, all_owners = ?, url = ?, events = ?, description = ?, secret = ?,
			enabled = ?, disabled_reason = ? WHERE id = ? AND agent_id = ?`, w.Owner, w.AllOwners, w.URL, " "+strings.Join(w.Events, " ")+" ",
			w.Description, w.Secret, w.Enabled, w.DisabledReason, w.ID, s.agent)
		if err := oneRow(res, err, w.ID); !agentik.IsNotFound(err) {
			return err
		}
		return insertWebhook(ctx, tx, s.agent, w)
	})
}

// GetWebhook returns the agent's webhook id.
func (s *Store) GetWebhook(ctx context.Context, id string) (agentik.Webhook, error) {
	var w agentik.Webhook
	err := s.read(ctx, "get webhook", func(r *reader) error {
		var err error
		w, err = scanWebhook(r.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND agent_id = ?`, id, s.agent))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		return err
	})
	return w, err
}

// ListWebhooks returns the owner's webhooks of the agent (not the config
// file's), oldest first.
func (s *Store) ListWebhooks(ctx context.Context, owner string) ([]agentik.Webhook, error) {
	list := []agentik.Webhook{}
	err := s.read(ctx, "list webhooks", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			w, err := scanWebhook(row)
			list = append(list, w)
			return err
		}, `SELECT `+webhookColumns+` FROM webhooks WHERE agent_id = ? AND owner = ? AND all_owners = 0 ORDER BY created_at, id`, s.agent, owner)
	})
	return list, err
}

// DeleteWebhook removes the webhook and its deliveries.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.write(ctx, "delete webhook", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND agent_id = ?`, id, s.agent)
		return oneRow(res, err, id)
	})
}

const deliveryColumns = `id, webhook_id, event, payload, status, attempts, created_at, next_attempt_at, last_attempt_at, last_status, last_error`

func scanDelivery(row storeutil.Scanner) (agentik.Delivery, error) {
	var d agentik.Delivery
	var payload string
	var created, next int64
	var last sql.NullInt64
	err := row.Scan(&d.ID, &d.WebhookID, &d.Event, &payload, &d.Status, &d.Attempts, &created, &next, &last,
		&d.LastStatus, &d.LastError)
	d.Payload = agentik.RawJSON(payload)
	d.CreatedAt, d.LastAttemptAt = fromMS(created), fromOptMS(last)
	if d.Status == agentik.DeliveryPending {
		t := fromMS(next)
		d.NextAttemptAt = &t
	}
	return d, err
}

// Deliveries returns the webhook's latest deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, webhookID string, limit int) ([]agentik.Delivery, error) {
	list := []agentik.Delivery{}
	err := s.read(ctx, "webhook deliveries", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			d, err := scanDelivery(row)
			list = append(list, d)
			return err
		}, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, webhookID, limit)
	})
	return list, err
}

// ClaimDeliveries takes due deliveries of any agent until leaseUntil.
func (s *Store) ClaimDeliveries(ctx context.Context, now, leaseUntil agentik.Time, limit int) ([]agentik.Delivery, error) {
	var list []agentik.Delivery
	err := s.write(ctx, "claim deliveries", func(tx *wtx) error {
		list = nil
		// RETURNING sees the updated table only: the webhooks' URL and
		// secret are read after it.
		rows, err := tx.QueryContext(ctx, `UPDATE webhook_deliveries AS d SET next_attempt_at = ?
			WHERE d.id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?)
			RETURNING `+deliveryColumns, ms(leaseUntil), ms(now), limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				rows.Close()
				return err
			}
			list = append(list, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range list {
			if err := tx.QueryRowContext(ctx, `SELECT url, secret FROM webhooks WHERE id = ?`, list[i].WebhookID).Scan(&list[i].URL, &list[i].Secret); err != nil {
				return err
			}
		}
		return nil
	})
	return list, err
}

// RecordDelivery stores an attempt's result; disable (a reason) also
// disables the webhook.
func (s *Store) RecordDelivery(ctx context.Context, d agentik.Delivery, disable string) error {
	return s.write(ctx, "record delivery", func(tx *wtx) error {
		next := d.LastAttemptAt
		if d.NextAttemptAt != nil {
			next = d.NextAttemptAt
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?,
			last_status = ?, last_error = ? WHERE id = ?`, d.Status, d.Attempts, optMS(next), optMS(d.LastAttemptAt),
			d.LastStatus, d.LastError, d.ID); err != nil {
			return err
		}
		if disable == "" {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET enabled = 0, disabled_reason = ? WHERE id = ?`, disable, d.WebhookID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'failed', last_error = ? WHERE webhook_id = ? AND status = 'pending'`,
			"webhook disabled: "+disable, d.WebhookID)
		return err
	})
}

// OutboxStats counts pending deliveries and dates the oldest.
func (s *Store) OutboxStats(ctx context.Context) (int64, agentik.Time, error) {
	var n int64
	var oldest sql.NullInt64
	err := s.read(ctx, "outbox stats", func(r *reader) error {
		return r.QueryRowContext(ctx, `SELECT count(*), min(created_at) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n, &oldest)
	})
	if err != nil || !oldest.Valid {
		return n, agentik.Time{}, err
	}
	return n, fromMS(oldest.Int64), nil
}
