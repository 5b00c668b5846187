package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ agentik.ScheduleStore = (*Store)(nil)

const scheduleColumns = `id, agent_id, owner, source, enabled, next_run_at, last_run_at, created_at, updated_at, payload`

func optTime(t *agentik.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	return &t.Time
}

func fromOptTime(t *time.Time) *agentik.Time {
	if t == nil {
		return nil
	}
	v := agentik.TimeOf(*t)
	return &v
}

func insertSchedule(ctx context.Context, q querier, agent string, sc agentik.Schedule) error {
	payload, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO schedules (`+scheduleColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		sc.ID, agent, sc.Owner, sc.Source, sc.Enabled, optTime(sc.NextRunAt), optTime(sc.LastRunAt), sc.CreatedAt.Time, sc.UpdatedAt.Time, string(payload))
	return err
}

// CreateSchedule stores sc unless its owner has limit schedules of the
// agent already (ERateLimited). The count and the insert run under a
// transaction-scoped advisory lock of the owner, so that two processes
// cannot both pass the limit.
func (s *Store) CreateSchedule(ctx context.Context, sc agentik.Schedule, limit int) error {
	return s.write(ctx, "create schedule", func(tx pgx.Tx) error {
		if limit > 0 {
			var n int
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentik.schedules/' || $1 || '/' || $2))`, s.agent, sc.Owner); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE agent_id = $1 AND owner = $2`, s.agent, sc.Owner).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return agentik.Errorf(agentik.ERateLimited, "at most %d schedules per principal", limit)
			}
		}
		return insertSchedule(ctx, tx, s.agent, sc)
	})
}

// PutSchedule stores sc in place of the schedule of its id; the stored
// next_run_at stays when the timing is the same.
func (s *Store) PutSchedule(ctx context.Context, sc agentik.Schedule) error {
	return s.write(ctx, "put schedule", func(tx pgx.Tx) error {
		old, err := getSchedule(ctx, tx, s.agent, sc.ID, " FOR UPDATE")
		switch {
		case agentik.IsNotFound(err):
		case err != nil:
			return err
		case sameTiming(old, sc):
			sc.NextRunAt, sc.LastRunAt, sc.CreatedAt = old.NextRunAt, old.LastRunAt, old.CreatedAt
		}
		if _, err := tx.Exec(ctx, `DELETE FROM schedules WHERE id = $1 AND agent_id = $2 AND source = $3`, sc.ID, s.agent, agentik.SourceConfig); err != nil {
			return err
		}
		return insertSchedule(ctx, tx, s.agent, sc)
	})
}

func sameTiming(a, b agentik.Schedule) bool {
	return a.Cron == b.Cron && a.Every == b.Every && a.Timezone == b.Timezone && a.Enabled == b.Enabled &&
		(a.At == nil) == (b.At == nil) && (a.At == nil || a.At.Equal(b.At.Time))
}

// GetSchedule returns the agent's schedule id.
func (s *Store) GetSchedule(ctx context.Context, id string) (agentik.Schedule, error) {
	var sc agentik.Schedule
	err := s.read(ctx, "get schedule", func(q querier) error {
		var err error
		sc, err = getSchedule(ctx, q, s.agent, id, "")
		return err
	})
	return sc, err
}

func getSchedule(ctx context.Context, q querier, agent, id, lock string) (agentik.Schedule, error) {
	sc, err := scanSchedule(q.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = $1 AND agent_id = $2`+lock, id, agent))
	if errors.Is(err, pgx.ErrNoRows) {
		return sc, notFound(id)
	}
	return sc, err
}

func scanSchedule(row storeutil.Scanner) (agentik.Schedule, error) {
	var sc agentik.Schedule
	var id, agent, owner, source, payload string
	var enabled bool
	var next, last *time.Time
	var created, updated time.Time
	if err := row.Scan(&id, &agent, &owner, &source, &enabled, &next, &last, &created, &updated, &payload); err != nil {
		return sc, err
	}
	if err := json.Unmarshal([]byte(payload), &sc); err != nil {
		return sc, fmt.Errorf("schedule %s: %w", id, err)
	}
	sc.ID, sc.Agent, sc.Owner, sc.Source, sc.Enabled = id, agent, owner, source, enabled
	sc.NextRunAt, sc.LastRunAt = fromOptTime(next), fromOptTime(last)
	sc.CreatedAt, sc.UpdatedAt = agentik.TimeOf(created), agentik.TimeOf(updated)
	return sc, nil
}

func collect[T any](ctx context.Context, q querier, scan func(storeutil.Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, rows.Err()
}

// ListSchedules returns the owner's schedules of the agent, oldest first.
func (s *Store) ListSchedules(ctx context.Context, owner string) ([]agentik.Schedule, error) {
	var list []agentik.Schedule
	err := s.read(ctx, "list schedules", func(q querier) error {
		var err error
		list, err = collect(ctx, q, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules WHERE agent_id = $1 AND owner = $2 ORDER BY created_at, id`, s.agent, owner)
		return err
	})
	return list, err
}

// UpdateSchedule replaces the stored schedule of sc.ID.
func (s *Store) UpdateSchedule(ctx context.Context, sc agentik.Schedule) error {
	payload, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return s.write(ctx, "update schedule", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE schedules SET enabled = $1, next_run_at = $2, updated_at = $3, payload = $4 WHERE id = $5 AND agent_id = $6`,
			sc.Enabled, optTime(sc.NextRunAt), sc.UpdatedAt.Time, string(payload), sc.ID, s.agent)
		return oneRow(tag, err, sc.ID)
	})
}

// DeleteSchedule removes the schedule and its runs.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return s.write(ctx, "delete schedule", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM schedules WHERE id = $1 AND agent_id = $2`, id, s.agent)
		return oneRow(tag, err, id)
	})
}

func oneRow(tag pgconn.CommandTag, err error, id string) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound(id)
	}
	return nil
}

const runColumns = `id, schedule_id, agent_id, owner, due_at, manual, claimed_at, finished_at, conversation_id, message_id, outcome, error, attempts`

func scanRun(row storeutil.Scanner) (agentik.ScheduleRun, error) {
	var r agentik.ScheduleRun
	var due, claimed time.Time
	var finished *time.Time
	err := row.Scan(&r.ID, &r.ScheduleID, &r.Agent, &r.Owner, &due, &r.Manual, &claimed, &finished,
		&r.ConversationID, &r.MessageID, &r.Outcome, &r.Error, &r.Attempts)
	r.DueAt, r.ClaimedAt, r.FinishedAt = agentik.TimeOf(due), agentik.TimeOf(claimed), fromOptTime(finished)
	return r, err
}

// ScheduleRuns returns the schedule's latest runs, newest first.
func (s *Store) ScheduleRuns(ctx context.Context, scheduleID string, limit int) ([]agentik.ScheduleRun, error) {
	var list []agentik.ScheduleRun
	err := s.read(ctx, "schedule runs", func(q querier) error {
		var err error
		list, err = collect(ctx, q, scanRun, `SELECT `+runColumns+` FROM schedule_runs WHERE schedule_id = $1 AND agent_id = $2
			ORDER BY claimed_at DESC, id DESC LIMIT $3`, scheduleID, s.agent, limit)
		return err
	})
	return list, err
}

// NextDue is the earliest due time of an enabled schedule of any agent.
func (s *Store) NextDue(ctx context.Context) (agentik.Time, bool, error) {
	var next *time.Time
	err := s.read(ctx, "next due schedule", func(q querier) error {
		return q.QueryRow(ctx, `SELECT min(next_run_at) FROM schedules WHERE enabled AND next_run_at IS NOT NULL`).Scan(&next)
	})
	if err != nil || next == nil {
		return agentik.Time{}, false, err
	}
	return agentik.TimeOf(*next), true, nil
}

// DueSchedules returns enabled schedules of any agent due at now.
func (s *Store) DueSchedules(ctx context.Context, now agentik.Time, limit int) ([]agentik.Schedule, error) {
	var list []agentik.Schedule
	err := s.read(ctx, "due schedules", func(q querier) error {
		var err error
		list, err = collect(ctx, q, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules
			WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2`, now.Time, limit)
		return err
	})
	return list, err
}

// ClaimRun moves the schedule from run.DueAt to next and stores the run,
// both only if next_run_at is still run.DueAt (a manual run claims
// without moving it). Of two processes claiming the same due time, the
// second's conditional update waits for the first's row lock, then finds
// next_run_at moved and claims nothing.
func (s *Store) ClaimRun(ctx context.Context, run agentik.ScheduleRun, next *agentik.Time, leaseUntil agentik.Time) (bool, error) {
	claimed := false
	err := s.write(ctx, "claim schedule run", func(tx pgx.Tx) error {
		if !run.Manual {
			tag, err := tx.Exec(ctx, `UPDATE schedules SET next_run_at = $1, last_run_at = $2, enabled = enabled AND $1::timestamptz IS NOT NULL
				WHERE id = $3 AND enabled AND next_run_at = $2`, optTime(next), run.DueAt.Time, run.ScheduleID)
			if err != nil || tag.RowsAffected() == 0 {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO schedule_runs (id, schedule_id, agent_id, owner, due_at, manual, claimed_at, lease_until, conversation_id, outcome)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, run.ID, run.ScheduleID, run.Agent, run.Owner, run.DueAt.Time, run.Manual,
			run.ClaimedAt.Time, leaseUntil.Time, run.ConversationID, agentik.RunClaimed)
		claimed = err == nil
		return err
	})
	return claimed, err
}

// StaleRuns returns claimed runs whose lease ended before now.
func (s *Store) StaleRuns(ctx context.Context, now agentik.Time, limit int) ([]agentik.ScheduleRun, error) {
	var list []agentik.ScheduleRun
	err := s.read(ctx, "stale schedule runs", func(q querier) error {
		var err error
		list, err = collect(ctx, q, scanRun, `SELECT `+runColumns+` FROM schedule_runs WHERE outcome = 'claimed' AND lease_until < $1
			ORDER BY lease_until LIMIT $2`, now.Time, limit)
		return err
	})
	return list, err
}

// RetakeRun takes over a stale run.
func (s *Store) RetakeRun(ctx context.Context, runID string, now, leaseUntil agentik.Time) (bool, error) {
	taken := false
	err := s.write(ctx, "retake schedule run", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE schedule_runs SET lease_until = $1, attempts = attempts + 1
			WHERE id = $2 AND outcome = 'claimed' AND lease_until < $3`, leaseUntil.Time, runID, now.Time)
		taken = err == nil && tag.RowsAffected() == 1
		return err
	})
	return taken, err
}

// FinishRun records the run's outcome and its schedule.run event in the
// outbox, in one transaction.
func (s *Store) FinishRun(ctx context.Context, run agentik.ScheduleRun, ev agentik.WebhookEvent) error {
	wrote := false
	err := s.write(ctx, "finish schedule run", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE schedule_runs SET outcome = $1, error = $2, message_id = $3, finished_at = $4 WHERE id = $5`,
			run.Outcome, run.Error, run.MessageID, optTime(run.FinishedAt), run.ID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, qEnqueueHook, ev.Type, string(ev.Payload), run.FinishedAt.Time, run.Agent, ev.Owner)
		wrote = err == nil && tag.RowsAffected() > 0
		return err
	})
	if err == nil {
		s.notifyOutbox(wrote)
	}
	return err
}
