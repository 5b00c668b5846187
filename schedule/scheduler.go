// Package schedule runs an agent's schedules (SPEC §20): a Scheduler per
// process fires every due schedule of every agent once per due time,
// whichever of the processes sharing the store claims it first, and a
// Service is the schedules API of one agent.
//
// A run is claimed in the store (the schedule moved to its next due time
// and the run stored, in one transaction), then its message sent, then its
// outcome recorded. A process that stops between claim and outcome leaves
// the run claimed; once its lease ends, any process takes it over and
// sends the message — unless the journal already has it (the message
// carries the run's id in its metadata), so a run is neither lost nor
// doubled.
package schedule

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/defaults"
)

// Defaults of Options.
const (
	DefaultMinInterval = time.Minute
	DefaultLease       = time.Minute
	DefaultPoll        = time.Second
	DefaultLimit       = 100
)

// MetaRunID is the metadata key of a scheduled message that holds its
// run's id.
const MetaRunID = "schedule_run_id"

// Options configures a Scheduler.
type Options struct {
	// Store is the database's store: Due, Claim, Stale, Retake and Finish
	// work across its agents.
	Store agentik.ScheduleStore
	// Agent returns the agent of an id (false: none in this process).
	Agent func(id string) (agentik.Agent, bool)
	// ForAgent returns an agent's view of the store.
	ForAgent func(id string) agentik.ScheduleStore
	// Lease is how long a claimed run may stay unfinished before another
	// process takes it over.
	Lease time.Duration
	// Poll bounds the wait between two looks at the store, so that
	// schedules made by other processes are seen.
	Poll time.Duration
	// Outcome counts finished runs (a metric); nil: none.
	Outcome func(outcome string)
	// Fault, for tests of crash recovery only: "after_claim" or
	// "after_send" stops the run there, forever (the test kills the
	// process).
	Fault  string
	Logger *slog.Logger
}

// Scheduler fires due schedules. Run it once per process.
type Scheduler struct {
	opts Options
	log  *slog.Logger
	wake chan struct{}
	now  func() time.Time
	wg   sync.WaitGroup
}

// New returns a Scheduler; Run starts it.
func New(opts Options) *Scheduler {
	defaults.Positive(&opts.Lease, DefaultLease)
	defaults.Positive(&opts.Poll, DefaultPoll)
	defaults.Logger(&opts.Logger)
	return &Scheduler{opts: opts, log: opts.Logger, wake: make(chan struct{}, 1), now: time.Now}
}

// Wake makes the scheduler look at the store now (a schedule was made or
// changed). It never blocks.
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run fires due schedules until ctx ends, then waits for the runs it
// started.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.wg.Wait()
	for {
		s.recover(ctx)
		s.fire(ctx)
		wait := s.opts.Poll
		if next, ok, err := s.opts.Store.NextDue(ctx); err == nil && ok {
			wait = min(wait, max(time.Until(next.Time), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// fire claims and runs every due schedule.
func (s *Scheduler) fire(ctx context.Context) {
	now := agentik.TimeOf(s.now())
	due, err := s.opts.Store.DueSchedules(ctx, now, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("schedules: reading due schedules", "err", err)
		}
		return
	}
	for _, sc := range due {
		if _, ok := s.opts.Agent(sc.Agent); !ok {
			continue // an agent of another process's configuration
		}
		run, ok := s.claim(ctx, sc, now)
		if ok {
			s.start(ctx, sc, run, false)
		}
	}
}

// claim takes the schedule's due time; false when another process did.
func (s *Scheduler) claim(ctx context.Context, sc agentik.Schedule, now agentik.Time) (agentik.ScheduleRun, bool) {
	run := newRun(sc, *sc.NextRunAt, now)
	var next *agentik.Time
	timing, err := agentik.ParseTiming(sc, 0)
	if err == nil {
		if t := timing.After(sc.NextRunAt.Time, now.Time); !t.IsZero() {
			v := agentik.TimeOf(t)
			next = &v
		}
	}
	ok, err := s.opts.Store.ClaimRun(ctx, run, next, agentik.TimeOf(now.Add(s.opts.Lease)))
	if err != nil {
		s.log.Warn("schedules: claiming a run", "schedule", sc.ID, "err", err)
		return run, false
	}
	if ok && sc.CatchUp == agentik.CatchUpNone && now.Sub(sc.NextRunAt.Time) > s.opts.Poll+s.opts.Lease {
		run.Outcome = agentik.RunSkipped // missed while no process was up
	}
	return run, ok
}

func newRun(sc agentik.Schedule, due, now agentik.Time) agentik.ScheduleRun {
	run := agentik.ScheduleRun{ID: agentik.NewID(), ScheduleID: sc.ID, DueAt: due, ClaimedAt: now,
		ConversationID: sc.ConversationID, Owner: sc.Owner, Agent: sc.Agent, Attempts: 1, Outcome: agentik.RunClaimed}
	if run.ConversationID == "" {
		run.ConversationID = run.ID // a new conversation per run, named after it
	}
	return run
}

// ClaimNow claims a manual run of sc (POST …/run) and starts it.
func (s *Scheduler) ClaimNow(ctx context.Context, sc agentik.Schedule) (agentik.ScheduleRun, error) {
	now := agentik.TimeOf(s.now())
	run := newRun(sc, now, now)
	run.Manual = true
	if _, err := s.opts.Store.ClaimRun(ctx, run, nil, agentik.TimeOf(now.Add(s.opts.Lease))); err != nil {
		return run, err
	}
	s.start(context.WithoutCancel(ctx), sc, run, false)
	return run, nil
}

// recover takes over runs whose process stopped between claim and outcome.
func (s *Scheduler) recover(ctx context.Context) {
	now := agentik.TimeOf(s.now())
	stale, err := s.opts.Store.StaleRuns(ctx, now, 100)
	if err != nil {
		return
	}
	for _, run := range stale {
		if _, ok := s.opts.Agent(run.Agent); !ok {
			continue
		}
		taken, err := s.opts.Store.RetakeRun(ctx, run.ID, now, agentik.TimeOf(now.Add(s.opts.Lease)))
		if err != nil || !taken {
			continue
		}
		sc, err := s.opts.ForAgent(run.Agent).GetSchedule(ctx, run.ScheduleID)
		if err != nil {
			run.Outcome, run.Error = agentik.RunFailed, "schedule gone"
			s.finish(ctx, run)
			continue
		}
		s.log.Info("schedules: taking over a run left unfinished", "schedule", sc.ID, "run", run.ID)
		s.start(ctx, sc, run, true)
	}
}

// start runs the run in a goroutine the scheduler waits for.
func (s *Scheduler) start(ctx context.Context, sc agentik.Schedule, run agentik.ScheduleRun, recovered bool) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.execute(ctx, sc, run, recovered)
	}()
}

// execute sends the run's message and records the outcome.
func (s *Scheduler) execute(ctx context.Context, sc agentik.Schedule, run agentik.ScheduleRun, recovered bool) {
	if s.opts.Fault == "after_claim" {
		s.log.Warn("schedules: fault after_claim: stopping before the message", "run", run.ID)
		<-ctx.Done()
		return
	}
	if run.Outcome != agentik.RunSkipped {
		id, err := s.send(ctx, sc, run, recovered)
		run.MessageID, run.Outcome = id, agentik.RunSent
		if err != nil {
			if ctx.Err() != nil {
				return // shutting down: the run stays claimed, another process or the next start takes it
			}
			run.Outcome, run.Error = agentik.RunFailed, agentik.ErrorMessage(err)
		}
	}
	if s.opts.Fault == "after_send" {
		s.log.Warn("schedules: fault after_send: stopping before the outcome", "run", run.ID)
		<-ctx.Done()
		return
	}
	s.finish(ctx, run)
}

// send creates the run's conversation if it has its own, then sends its
// message there unless a previous attempt did.
func (s *Scheduler) send(ctx context.Context, sc agentik.Schedule, run agentik.ScheduleRun, recovered bool) (string, error) {
	agent, ok := s.opts.Agent(run.Agent)
	if !ok {
		return "", agentik.Errorf(agentik.ENotFound, "agent %q is not served", run.Agent)
	}
	ctx = agentik.WithPrincipal(ctx, run.Owner)
	if sc.ConversationID == "" {
		_, err := agent.CreateConversation(ctx, agentik.CreateRequest{ID: run.ConversationID, Title: sc.Name})
		if err != nil && !(recovered && agentik.ErrorCode(err) == agentik.EConflict) {
			return "", err
		}
	}
	conv, err := agent.Conversation(ctx, run.ConversationID)
	if err != nil {
		return "", err
	}
	defer conv.Close()
	if recovered {
		if id, err := sentBefore(ctx, conv, run.ID); err != nil || id != "" {
			return id, err
		}
	}
	res, err := conv.Send(ctx, agentik.SendRequest{
		Content: sc.Content,
		Context: &agentik.MessageContext{
			Origin:   &agentik.Origin{Channel: agentik.OriginSchedule, ScheduleID: sc.ID},
			Metadata: map[string]string{MetaRunID: run.ID},
		},
		IfBusy: sc.IfBusy,
	})
	return res.MessageID, err
}

// sentBefore finds the message of run in the conversation's latest
// messages: sent by a process that stopped before recording it.
func sentBefore(ctx context.Context, conv agentik.Conversation, runID string) (string, error) {
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Before: math.MaxInt64, Limit: agentik.MaxMessagesLimit})
	if err != nil {
		return "", err
	}
	for _, m := range page.Messages {
		if m.Type == agentik.MsgUser && m.Context != nil && m.Context.Metadata[MetaRunID] == runID {
			return m.ID, nil
		}
	}
	return "", nil
}

// finish records the run's outcome with its schedule.run event.
func (s *Scheduler) finish(ctx context.Context, run agentik.ScheduleRun) {
	now := agentik.TimeOf(s.now())
	run.FinishedAt = &now
	data := map[string]any{"schedule_id": run.ScheduleID, "run_id": run.ID, "conversation_id": run.ConversationID,
		"due_at": run.DueAt, "outcome": run.Outcome}
	if run.MessageID != "" {
		data["message_id"] = run.MessageID
	}
	if run.Error != "" {
		data["error"] = run.Error
	}
	ev := agentik.NewWebhookEvent(agentik.HookScheduleRun, run.Owner, now, data)
	err := s.opts.Store.FinishRun(context.WithoutCancel(ctx), run, ev)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("schedules: recording a run", "run", run.ID, "err", err)
		return
	}
	if s.opts.Outcome != nil {
		s.opts.Outcome(run.Outcome)
	}
	s.log.Info("schedules: run", "schedule", run.ScheduleID, "run", run.ID, "outcome", run.Outcome, "conversation", run.ConversationID)
}
