package schedule

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/agentik/agentik"
)

var _ agentik.Schedules = (*Service)(nil)

// ServiceOptions configures an agent's schedules API.
type ServiceOptions struct {
	// MinInterval is the shortest interval a schedule may have
	// (AGENTIK_SCHEDULE_MIN_INTERVAL).
	MinInterval time.Duration
	// Limit is the most schedules a principal may have on the agent
	// (AGENTIK_SCHEDULE_LIMIT); <= 0: DefaultLimit.
	Limit int
}

// Service is the schedules API of one agent (agentik.Schedules).
type Service struct {
	agent agentik.Agent
	store agentik.ScheduleStore // the agent's view
	sched *Scheduler
	opts  ServiceOptions
	now   func() time.Time
}

// NewService returns the schedules API of agent, kept in store (the
// agent's view) and fired by sched.
func NewService(agent agentik.Agent, store agentik.ScheduleStore, sched *Scheduler, opts ServiceOptions) *Service {
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	return &Service{agent: agent, store: store, sched: sched, opts: opts, now: time.Now}
}

// CreateSchedule checks req and stores the schedule. Nothing is stored
// when it is refused.
func (s *Service) CreateSchedule(ctx context.Context, req agentik.ScheduleRequest) (agentik.Schedule, error) {
	now := agentik.TimeOf(s.now())
	sc := agentik.Schedule{ID: agentik.NewID(), Enabled: true, CatchUp: agentik.CatchUpOne, Source: agentik.SourceAPI,
		CreatedAt: now, UpdatedAt: now, Owner: agentik.PrincipalFrom(ctx)}
	apply(&sc, req)
	if err := s.check(ctx, &sc, now.Time); err != nil {
		return agentik.Schedule{}, err
	}
	if err := s.store.CreateSchedule(ctx, sc, s.opts.Limit); err != nil {
		return agentik.Schedule{}, err
	}
	s.sched.Wake()
	return sc, nil
}

// apply copies the fields req gives into sc; a timing field replaces the
// whole timing.
func apply(sc *agentik.Schedule, req agentik.ScheduleRequest) {
	if req.Cron != nil || req.Every != nil || req.At != nil {
		sc.Cron, sc.Every, sc.At = "", "", nil
		if req.Timezone == nil {
			sc.Timezone = ""
		}
	}
	set(&sc.Name, req.Name)
	set(&sc.Cron, req.Cron)
	set(&sc.Every, req.Every)
	if req.At != nil {
		at := *req.At
		sc.At = &at
	}
	set(&sc.Timezone, req.Timezone)
	set(&sc.ConversationID, req.ConversationID)
	if req.Content != nil {
		sc.Content = req.Content
	}
	set(&sc.IfBusy, req.IfBusy)
	set(&sc.CatchUp, req.CatchUp)
	if req.Enabled != nil {
		sc.Enabled = *req.Enabled
	}
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// check validates sc and sets its next due time.
func (s *Service) check(ctx context.Context, sc *agentik.Schedule, now time.Time) error {
	if len(sc.Name) > 200 || !utf8.ValidString(sc.Name) {
		return agentik.Errorf(agentik.EInvalid, "name: at most 200 bytes of UTF-8")
	}
	if len(sc.Content) == 0 {
		return agentik.Errorf(agentik.EInvalid, "content: a schedule needs the message to send")
	}
	if err := agentik.ValidateInput(sc.Content, 0); err != nil {
		return err
	}
	for _, c := range sc.Content {
		if c.Type != agentik.ContentText {
			return agentik.Errorf(agentik.EInvalid, "content: a schedule sends text only")
		}
	}
	if !agentik.ValidBusyPolicy(sc.IfBusy) {
		return agentik.Errorf(agentik.EInvalid, "if_busy: want enqueue, interrupt or reject")
	}
	if sc.CatchUp != agentik.CatchUpOne && sc.CatchUp != agentik.CatchUpNone {
		return agentik.Errorf(agentik.EInvalid, "catch_up: want one or none")
	}
	timing, err := agentik.ParseTiming(*sc, s.opts.MinInterval)
	if err != nil {
		return err
	}
	if sc.ConversationID != "" {
		if !agentik.ValidID(sc.ConversationID) {
			return agentik.Errorf(agentik.ENotFound, "conversation %q not found", sc.ConversationID)
		}
		conv, err := s.agent.Conversation(ctx, sc.ConversationID) // another principal's: not found
		if err != nil {
			return err
		}
		info, err := conv.Info(ctx)
		conv.Close()
		if err != nil {
			return err
		}
		if info.Temporal {
			return agentik.Errorf(agentik.EInvalid, "conversation_id: a temporal conversation cannot be scheduled")
		}
	}
	sc.NextRunAt = nil
	first := timing.First(now)
	if first.IsZero() {
		if sc.At != nil {
			return agentik.Errorf(agentik.EInvalid, "at %s is in the past", sc.At)
		}
		return agentik.Errorf(agentik.EInvalid, "the cron expression never fires")
	}
	if sc.Enabled {
		t := agentik.TimeOf(first)
		sc.NextRunAt = &t
	}
	return nil
}

// ListSchedules returns the caller's schedules.
func (s *Service) ListSchedules(ctx context.Context) ([]agentik.Schedule, error) {
	return s.store.ListSchedules(ctx, agentik.PrincipalFrom(ctx))
}

// GetSchedule returns the caller's schedule id.
func (s *Service) GetSchedule(ctx context.Context, id string) (agentik.Schedule, error) {
	sc, err := s.store.GetSchedule(ctx, id)
	if err != nil {
		return sc, err
	}
	if sc.Owner != agentik.PrincipalFrom(ctx) {
		return agentik.Schedule{}, agentik.Errorf(agentik.ENotFound, "schedule %s not found", id)
	}
	return sc, nil
}

// UpdateSchedule changes the fields req gives. A schedule of the config
// file is changed there, not here.
func (s *Service) UpdateSchedule(ctx context.Context, id string, req agentik.ScheduleRequest) (agentik.Schedule, error) {
	sc, err := s.GetSchedule(ctx, id)
	if err != nil {
		return sc, err
	}
	if sc.Source == agentik.SourceConfig {
		return agentik.Schedule{}, agentik.Errorf(agentik.EConflict, "schedule %s comes from the config file; change it there", id)
	}
	apply(&sc, req)
	now := agentik.TimeOf(s.now())
	sc.UpdatedAt = now
	if err := s.check(ctx, &sc, now.Time); err != nil {
		return agentik.Schedule{}, err
	}
	if err := s.store.UpdateSchedule(ctx, sc); err != nil {
		return agentik.Schedule{}, err
	}
	s.sched.Wake()
	return sc, nil
}

// DeleteSchedule removes the caller's schedule and its runs.
func (s *Service) DeleteSchedule(ctx context.Context, id string) error {
	sc, err := s.GetSchedule(ctx, id)
	if err != nil {
		return err
	}
	if sc.Source == agentik.SourceConfig {
		return agentik.Errorf(agentik.EConflict, "schedule %s comes from the config file; remove it there", id)
	}
	return s.store.DeleteSchedule(ctx, id)
}

// RunSchedule runs the caller's schedule now.
func (s *Service) RunSchedule(ctx context.Context, id string) (agentik.ScheduleRun, error) {
	sc, err := s.GetSchedule(ctx, id)
	if err != nil {
		return agentik.ScheduleRun{}, err
	}
	return s.sched.ClaimNow(ctx, sc)
}

// ScheduleRuns returns the latest runs of the caller's schedule, newest
// first.
func (s *Service) ScheduleRuns(ctx context.Context, id string) ([]agentik.ScheduleRun, error) {
	if _, err := s.GetSchedule(ctx, id); err != nil {
		return nil, err
	}
	return s.store.ScheduleRuns(ctx, id, 100)
}
