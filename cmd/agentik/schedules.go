package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/schedule"
	"github.com/agentik/agentik/webhook"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
)

// setupSchedules builds each agent's schedules and webhooks APIs (served
// by its native API door) and the process's scheduler and webhook
// deliverer, which start with the engines and stop before they drain
// (SPEC §20, docs/schedules.md).
func (a *app) setupSchedules(ctx context.Context) error {
	base, ok1 := a.store.(agentik.ScheduleStore)
	hooks, ok2 := a.store.(agentik.WebhookStore)
	if !ok1 || !ok2 {
		return fmt.Errorf("the store keeps no schedules or webhooks")
	}
	cfg := a.cfg.Schedules
	views := map[string]*agent{}
	for _, ag := range a.agents {
		views[ag.ID] = ag
	}
	view := func(id string) agentik.ScheduleStore {
		if ag := views[id]; ag != nil {
			return ag.store.(agentik.ScheduleStore)
		}
		return base
	}
	sched := schedule.New(schedule.Options{
		Store: base,
		Agent: func(id string) (agentik.Agent, bool) {
			if ag := views[id]; ag != nil {
				return ag.eng, true
			}
			return nil, false
		},
		ForAgent: view,
		Lease:    cfg.Lease,
		Outcome:  a.scheduleRunObserver(),
		Fault:    cfg.Fault,
		Logger:   a.log,
	})
	deliver := webhook.New(webhook.Options{
		Store: hooks, AllowPrivate: cfg.AllowPrivate, Timeout: cfg.WebhookTimeout,
		RetryWindow: cfg.RetryWindow, FirstRetry: cfg.FirstRetry,
		Outcome: a.deliveryObserver(), Logger: a.log,
	})
	for _, ag := range a.agents {
		if err := a.putConfigured(ag, cfg.MinInterval); err != nil {
			return fmt.Errorf("agent %s: %w", ag.ID, err)
		}
		ag.schedules = schedule.NewService(ag.eng, ag.store.(agentik.ScheduleStore), sched,
			schedule.ServiceOptions{MinInterval: cfg.MinInterval, Limit: cfg.Limit})
		ag.webhooks = webhook.NewService(ag.store.(agentik.WebhookStore), cfg.AllowPrivate, cfg.WebhookLimit)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	a.onStart = append(a.onStart, func() {
		wg.Go(func() { sched.Run(ctx) })
		wg.Go(func() { deliver.Run(ctx) })
	})
	stop := func() { cancel(); wg.Wait() }
	a.onShutdown = append(a.onShutdown, func(context.Context) { stop() })
	a.onClose = append(a.onClose, stop)
	return nil
}

// scheduleRunObserver counts finished runs by outcome
// (agentik_schedule_runs_total{outcome}); nil without metrics.
func (a *app) scheduleRunObserver() func(string) {
	if a.metrics == nil {
		return nil
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_schedule_runs_total",
		Help: "Schedule runs this process finished, by outcome (sent, failed, skipped)."}, []string{"outcome"})
	a.metrics.Registry().MustRegister(c)
	for _, o := range []string{agentik.RunSent, agentik.RunFailed, agentik.RunSkipped} {
		c.WithLabelValues(o)
	}
	return func(outcome string) { c.WithLabelValues(outcome).Inc() }
}

// deliveryObserver counts delivery attempts by outcome
// (agentik_webhook_deliveries_total{outcome}) and registers the outbox
// gauges, read from the store at each scrape (on PostgreSQL: of every
// process); nil without metrics.
func (a *app) deliveryObserver() func(string) {
	if a.metrics == nil {
		return nil
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentik_webhook_deliveries_total",
		Help: "Webhook delivery attempts this process made, by outcome (delivered, retry, failed, refused, disabled)."}, []string{"outcome"})
	a.metrics.Registry().MustRegister(c)
	for _, o := range []string{webhook.OutcomeDelivered, webhook.OutcomeRetry, webhook.OutcomeFailed, webhook.OutcomeRefused, webhook.OutcomeDisabled} {
		c.WithLabelValues(o)
	}
	store, _ := a.store.(agentik.WebhookStore)
	stats := func() (int64, agentik.Time) {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		n, oldest, err := store.OutboxStats(ctx)
		if err != nil {
			return 0, agentik.Time{}
		}
		return n, oldest
	}
	a.metrics.GaugeFunc("agentik_webhook_outbox_depth", "Webhook deliveries not yet delivered nor failed, in the store (on PostgreSQL: of every process).",
		func() float64 { n, _ := stats(); return float64(n) })
	a.metrics.GaugeFunc("agentik_webhook_outbox_oldest_age_seconds", "Age of the oldest undelivered webhook delivery (0 when none).",
		func() float64 {
			_, oldest := stats()
			if oldest.IsZero() {
				return 0
			}
			return time.Since(oldest.Time).Seconds()
		})
	return func(outcome string) { c.WithLabelValues(outcome).Inc() }
}

// putConfigured stores the schedules and webhooks of the agent's entry in
// the configuration file, under ids made from the agent's id and their
// names, so that each start replaces them (a schedule keeps its next due
// time when its timing did not change).
func (a *app) putConfigured(ag *agent, minInterval time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := agentik.Now()
	for _, spec := range ag.cfg.Schedules {
		sc := agentik.Schedule{ID: configID(ag.ID, "schedule", spec.Name), Name: spec.Name, Cron: spec.Cron, Every: spec.Every,
			At: spec.At, Timezone: spec.Timezone, ConversationID: spec.ConversationID, Content: []agentik.Content{agentik.Text(spec.Text)},
			IfBusy: spec.IfBusy, CatchUp: spec.CatchUp, Enabled: spec.Enabled, Source: agentik.SourceConfig,
			CreatedAt: now, UpdatedAt: now, Owner: spec.Principal}
		timing, err := agentik.ParseTiming(sc, minInterval)
		if err != nil {
			return fmt.Errorf("schedule %s: %w", spec.Name, err)
		}
		if first := timing.First(now.Time); !first.IsZero() && sc.Enabled {
			t := agentik.TimeOf(first)
			sc.NextRunAt = &t
		}
		if err := ag.store.(agentik.ScheduleStore).PutSchedule(ctx, sc); err != nil {
			return err
		}
	}
	for _, spec := range ag.cfg.Webhooks {
		if err := webhook.ValidSecret(spec.Secret); err != nil {
			return fmt.Errorf("webhook %s: %w", spec.Name, err)
		}
		if err := webhook.CheckURL(ctx, spec.URL, true); err != nil { // inward targets are refused at delivery
			return fmt.Errorf("webhook %s: %w", spec.Name, err)
		}
		w := agentik.Webhook{ID: configID(ag.ID, "webhook", spec.Name), URL: spec.URL, Events: spec.Events, Description: spec.Description,
			Secret: spec.Secret, Enabled: true, Source: agentik.SourceConfig, CreatedAt: now, AllOwners: true}
		if err := ag.store.(agentik.WebhookStore).PutWebhook(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// configID is the id of a schedule or webhook of the configuration file:
// the same at every start.
func configID(agent, kind, name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("agentik:"+agent+"/"+kind+"/"+name)).String()
}
