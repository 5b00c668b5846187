package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

var _ agentik.ScheduleStore = (*Store)(nil)

const scheduleColumns = `id, agent_id, owner, source, enabled, next_run_at, last_run_at, created_at, updated_at, payload`

// CreateSchedule stores sc unless its owner has limit schedules of the
// agent already (ERateLimited).
func (s *Store) CreateSchedule(ctx context.Context, sc agentik.Schedule, limit int) error {
	payload, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return s.write(ctx, "create schedule", func(tx *wtx) error {
		if limit > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedules WHERE agent_id = ? AND owner = ?`, s.agent, sc.Owner).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return agentik.Errorf(agentik.ERateLimited, "at most %d schedules per principal", limit)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO schedules (`+scheduleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sc.ID, s.agent, sc.Owner, sc.Source, sc.Enabled, optMS(sc.NextRunAt), optMS(sc.LastRunAt), ms(sc.CreatedAt), ms(sc.UpdatedAt), string(payload))
		return err
	})
}

// PutSchedule stores sc in place of the schedule of its id; the stored
// next_run_at stays when the timing is the same.
func (s *Store) PutSchedule(ctx context.Context, sc agentik.Schedule) error {
	return s.write(ctx, "put schedule", func(tx *wtx) error {
		old, err := getSchedule(ctx, tx, s.agent, sc.ID)
		switch {
		case agentik.IsNotFound(err):
		case err != nil:
			return err
		case sameTiming(old, sc):
			sc.NextRunAt, sc.LastRunAt, sc.CreatedAt = old.NextRunAt, old.LastRunAt, old.CreatedAt
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = ? AND agent_id = ? AND source = ?`, sc.ID, s.agent, agentik.SourceConfig); err != nil {
			return err
		}
		payload, err := json.Marshal(sc)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO schedules (`+scheduleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sc.ID, s.agent, sc.Owner, sc.Source, sc.Enabled, optMS(sc.NextRunAt), optMS(sc.LastRunAt), ms(sc.CreatedAt), ms(sc.UpdatedAt), string(payload))
		return err
	})
}

func sameTiming(a, b agentik.Schedule) bool {
	return a.Cron == b.Cron && a.Every == b.Every && a.Timezone == b.Timezone && a.Enabled == b.Enabled &&
		(a.At == nil) == (b.At == nil) && (a.At == nil || a.At.Equal(b.At.Time))
}

// GetSchedule returns the agent's schedule id.
func (s *Store) GetSchedule(ctx context.Context, id string) (agentik.Schedule, error) {
	var sc agentik.Schedule
	err := s.read(ctx, "get schedule", func(r *reader) error {
		var err error
		sc, err = getSchedule(ctx, r, s.agent, id)
		return err
	})
	return sc, err
}

func getSchedule(ctx context.Context, q queryer, agent, id string) (agentik.Schedule, error) {
	sc, err := scanSchedule(q.QueryRowContext(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = ? AND agent_id = ?`, id, agent))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, notFound(id)
	}
	return sc, err
}

func scanSchedule(row storeutil.Scanner) (agentik.Schedule, error) {
	var sc agentik.Schedule
	var id, agent, owner, source, payload string
	var enabled bool
	var next, last sql.NullInt64
	var created, updated int64
	if err := row.Scan(&id, &agent, &owner, &source, &enabled, &next, &last, &created, &updated, &payload); err != nil {
		return sc, err
	}
	if err := json.Unmarshal([]byte(payload), &sc); err != nil {
		return sc, fmt.Errorf("schedule %s: %w", id, err)
	}
	sc.ID, sc.Agent, sc.Owner, sc.Source, sc.Enabled = id, agent, owner, source, enabled
	sc.NextRunAt, sc.LastRunAt = fromOptMS(next), fromOptMS(last)
	sc.CreatedAt, sc.UpdatedAt = fromMS(created), fromMS(updated)
	return sc, nil
}

// ListSchedules returns the owner's schedules of the agent, oldest first.
func (s *Store) ListSchedules(ctx context.Context, owner string) ([]agentik.Schedule, error) {
	list := []agentik.Schedule{}
	err := s.read(ctx, "list schedules", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			sc, err := scanSchedule(row)
			list = append(list, sc)
			return err
		}, `SELECT `+scheduleColumns+` FROM schedules WHERE agent_id = ? AND owner = ? ORDER BY created_at, id`, s.agent, owner)
	})
	return list, err
}

// UpdateSchedule replaces the stored schedule of sc.ID.
func (s *Store) UpdateSchedule(ctx context.Context, sc agentik.Schedule) error {
	payload, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return s.write(ctx, "update schedule", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE schedules SET enabled = ?, next_run_at = ?, updated_at = ?, payload = ? WHERE id = ? AND agent_id = ?`,
			sc.Enabled, optMS(sc.NextRunAt), ms(sc.UpdatedAt), string(payload), sc.ID, s.agent)
		return oneRow(res, err, sc.ID)
	})
}

// DeleteSchedule removes the schedule and its runs.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return s.write(ctx, "delete schedule", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = ? AND agent_id = ?`, id, s.agent)
		return oneRow(res, err, id)
	})
}

func oneRow(res sql.Result, err error, id string) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return notFound(id)
	}
	return nil
}

const runColumns = `id, schedule_id, agent_id, owner, due_at, manual, claimed_at, finished_at, conversation_id, message_id, outcome, error, attempts`

func scanRun(row storeutil.Scanner) (agentik.ScheduleRun, error) {
	var r agentik.ScheduleRun
	var due, claimed int64
	var finished sql.NullInt64
	err := row.Scan(&r.ID, &r.ScheduleID, &r.Agent, &r.Owner, &due, &r.Manual, &claimed, &finished,
		&r.ConversationID, &r.MessageID, &r.Outcome, &r.Error, &r.Attempts)
	r.DueAt, r.ClaimedAt, r.FinishedAt = fromMS(due), fromMS(claimed), fromOptMS(finished)
	return r, err
}

// ScheduleRuns returns the schedule's latest runs, newest first.
func (s *Store) ScheduleRuns(ctx context.Context, scheduleID string, limit int) ([]agentik.ScheduleRun, error) {
	list := []agentik.ScheduleRun{}
	err := s.read(ctx, "schedule runs", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			run, err := scanRun(row)
			list = append(list, run)
			return err
		}, `SELECT `+runColumns+` FROM schedule_runs WHERE schedule_id = ? AND agent_id = ? ORDER BY claimed_at DESC, id DESC LIMIT ?`,
			scheduleID, s.agent, limit)
	})
	return list, err
}

// NextDue is the earliest due time of an enabled schedule of any agent.
func (s *Store) NextDue(ctx context.Context) (agentik.Time, bool, error) {
	var next sql.NullInt64
	err := s.read(ctx, "next due schedule", func(r *reader) error {
		return r.QueryRowContext(ctx, `SELECT min(next_run_at) FROM schedules WHERE enabled = 1 AND next_run_at IS NOT NULL`).Scan(&next)
	})
	if err != nil || !next.Valid {
		return agentik.Time{}, false, err
	}
	return fromMS(next.Int64), true, nil
}

// DueSchedules returns enabled schedules of any agent due at now.
func (s *Store) DueSchedules(ctx context.Context, now agentik.Time, limit int) ([]agentik.Schedule, error) {
	var list []agentik.Schedule
	err := s.read(ctx, "due schedules", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			sc, err := scanSchedule(row)
			list = append(list, sc)
			return err
		}, `SELECT `+scheduleColumns+` FROM schedules WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at LIMIT ?`,
			ms(now), limit)
	})
	return list, err
}

// ClaimRun moves the schedule from run.DueAt to next and stores the run,
// both only if next_run_at is still run.DueAt (a manual run claims
// without moving it).
func (s *Store) ClaimRun(ctx context.Context, run agentik.ScheduleRun, next *agentik.Time, leaseUntil agentik.Time) (bool, error) {
	claimed := false
	err := s.write(ctx, "claim schedule run", func(tx *wtx) error {
		if !run.Manual {
			res, err := tx.ExecContext(ctx, `UPDATE schedules SET next_run_at = ?, last_run_at = ?, enabled = enabled AND ? IS NOT NULL
				WHERE id = ? AND enabled = 1 AND next_run_at = ?`, optMS(next), ms(run.DueAt), optMS(next), run.ScheduleID, ms(run.DueAt))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO schedule_runs (id, schedule_id, agent_id, owner, due_at, manual, claimed_at, lease_until, conversation_id, outcome)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, run.ID, run.ScheduleID, run.Agent, run.Owner, ms(run.DueAt), run.Manual,
			ms(run.ClaimedAt), ms(leaseUntil), run.ConversationID, agentik.RunClaimed)
		claimed = err == nil
		return err
	})
	return claimed, err
}

// StaleRuns returns claimed runs whose lease ended before now.
func (s *Store) StaleRuns(ctx context.Context, now agentik.Time, limit int) ([]agentik.ScheduleRun, error) {
	var list []agentik.ScheduleRun
	err := s.read(ctx, "stale schedule runs", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			run, err := scanRun(row)
			list = append(list, run)
			return err
		}, `SELECT `+runColumns+` FROM schedule_runs WHERE outcome = 'claimed' AND lease_until < ? ORDER BY lease_until LIMIT ?`, ms(now), limit)
	})
	return list, err
}

// RetakeRun takes over a stale run.
func (s *Store) RetakeRun(ctx context.Context, runID string, now, leaseUntil agentik.Time) (bool, error) {
	taken := false
	err := s.write(ctx, "retake schedule run", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE schedule_runs SET lease_until = ?, attempts = attempts + 1
			WHERE id = ? AND outcome = 'claimed' AND lease_until < ?`, ms(leaseUntil), runID, ms(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		taken = n == 1
		return err
	})
	return taken, err
}

// FinishRun records the run's outcome and its schedule.run event in the
// outbox, in one transaction.
func (s *Store) FinishRun(ctx context.Context, run agentik.ScheduleRun, ev agentik.WebhookEvent) error {
	wrote := false
	err := s.write(ctx, "finish schedule run", func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE schedule_runs SET outcome = ?, error = ?, message_id = ?, finished_at = ? WHERE id = ?`,
			run.Outcome, run.Error, run.MessageID, optMS(run.FinishedAt), run.ID); err != nil {
			return err
		}
		var err error
		wrote, err = enqueueHooks(ctx, tx, run.Agent, ev, *run.FinishedAt)
		return err
	})
	if err == nil {
		s.notifyOutbox(wrote)
	}
	return err
}

func optMS(t *agentik.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return ms(*t)
}

func fromOptMS(v sql.NullInt64) *agentik.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}
