package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Schedules: the scheduler's overhead with many idle schedules, and how
// long a webhook event takes to reach a receiver (SPEC §20).
type Schedules struct {
	Schedules int `json:"schedules"` // idle schedules (every 1h, none due)
	// CPU of the idle server over IdleSeconds, without and with them, in
	// percent of one core.
	IdleSeconds         float64 `json:"idle_seconds"`
	BaselineCPUPercent  float64 `json:"baseline_cpu_percent"`
	SchedulesCPUPercent float64 `json:"schedules_cpu_percent"`
	// RSS before the schedules were made and after, idle.
	BaselineRSSKB  int64   `json:"baseline_rss_kb"`
	SchedulesRSSKB int64   `json:"schedules_rss_kb"`
	CreateSeconds  float64 `json:"create_seconds"` // making them through the API, 8 at a time
	// Delivery: from the event (a conversation created, its timestamp)
	// to the receiver's handler, over Deliveries events sent one after
	// the other.
	Deliveries int  `json:"deliveries"`
	Delivery   Dist `json:"delivery_latency"`
}

// schedules runs the phase against the server binary.
func (r *runner) schedules(ctx context.Context) (err error) {
	if r.server.binary == "" {
		note := "schedules: not measured in-process (the in-process server has no scheduler)"
		r.res.Notes = append(r.res.Notes, note)
		r.logf("%s", note)
		return nil
	}
	s := &Schedules{Schedules: r.plan.Schedules, IdleSeconds: r.plan.ScheduleIdle.Seconds(), Deliveries: r.plan.Deliveries}
	r.res.Schedules = s
	db, err := r.newDB(ctx)
	if err != nil {
		return err
	}
	sc := r.server
	if r.pg != nil {
		sc.pgDSN = db
	} else {
		sc.dbPath = db
	}
	sc.env = append(sc.env, "AGENTIK_SCHEDULE_LIMIT=1000000", "AGENTIK_WEBHOOK_ALLOW_PRIVATE=on")
	t, _, err := startTarget(ctx, sc)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	a := &api{base: t.Base(), hc: r.hc}
	if s.BaselineCPUPercent, s.BaselineRSSKB, err = idleCPU(ctx, t, r.plan.ScheduleIdle); err != nil {
		return err
	}
	t0 := time.Now()
	if err := makeSchedules(ctx, a, s.Schedules); err != nil {
		return err
	}
	s.CreateSeconds = round3(time.Since(t0).Seconds())
	if s.SchedulesCPUPercent, s.SchedulesRSSKB, err = idleCPU(ctx, t, r.plan.ScheduleIdle); err != nil {
		return err
	}
	r.logf("%d idle schedules: CPU %.2f%% (without: %.2f%%), RSS %.1f MiB (without: %.1f MiB)", s.Schedules,
		s.SchedulesCPUPercent, s.BaselineCPUPercent, float64(s.SchedulesRSSKB)/1024, float64(s.BaselineRSSKB)/1024)
	lat, err := deliveryLatency(ctx, a, s.Deliveries)
	if err != nil {
		return err
	}
	s.Delivery = dist(lat).rounded()
	r.logf("webhook delivery, event to receiver: p50 %.1f ms (p90 %.1f, max %.1f) over %d", s.Delivery.P50Ms, s.Delivery.P90Ms, s.Delivery.MaxMs, s.Delivery.N)
	return nil
}

// idleCPU measures the server's CPU over d while nothing is asked of it,
// in percent of one core, and then its RSS.
func idleCPU(ctx context.Context, t target, d time.Duration) (float64, int64, error) {
	c0, err := t.CPU()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(d):
	}
	c1, err := t.CPU()
	if err != nil {
		return 0, 0, err
	}
	rss, err := t.RSSKB()
	return round3(100 * float64(c1-c0) / float64(time.Since(t0))), rss, err
}

// makeSchedules makes n hourly schedules, 8 requests at a time; their due
// times spread over the hour, none within the measurement.
func makeSchedules(ctx context.Context, a *api, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				body := map[string]any{"every": "1h", "content": []map[string]string{{"type": "text", "text": fmt.Sprintf("report %d", i)}}}
				if err := a.do(ctx, http.MethodPost, "/agentik/schedules", body, http.StatusCreated, nil); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// deliveryLatency makes n conversations one after the other, each
// announced by a conversation.created webhook to a local receiver, and
// returns the time from each event's timestamp to its arrival.
func deliveryLatency(ctx context.Context, a *api, n int) ([]time.Duration, error) {
	arrived := make(chan time.Duration, n)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		var body struct {
			Timestamp time.Time `json:"timestamp"`
		}
		b, _ := io.ReadAll(req.Body)
		if json.Unmarshal(b, &body) == nil {
			arrived <- now.Sub(body.Timestamp)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	hook := map[string]any{"url": recv.URL + "/hook", "events": []string{"conversation.created"}}
	if err := a.do(ctx, http.MethodPost, "/agentik/webhooks", hook, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range n {
		if _, err := a.createConversation(ctx, fmt.Sprintf("hook %d", i)); err != nil {
			return nil, err
		}
		select {
		case d := <-arrived:
			out = append(out, d)
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("delivery %d did not arrive", i)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
