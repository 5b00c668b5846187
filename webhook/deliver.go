package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/defaults"
)

// Defaults of Options.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultRetryWindow = 24 * time.Hour
	DefaultFirstRetry  = 5 * time.Second
	DefaultMaxBackoff  = time.Hour
	DefaultPoll        = time.Second
	batch              = 32
)

// Delivery outcomes (the deliveries metric's label).
const (
	OutcomeDelivered = "delivered"
	OutcomeRetry     = "retry"    // failed, will be tried again
	OutcomeFailed    = "failed"   // failed for good: out of the retry window
	OutcomeRefused   = "refused"  // an inward target, not dialled
	OutcomeDisabled  = "disabled" // the receiver answered 410: the webhook is off
)

// Options configures a Deliverer.
type Options struct {
	Store agentik.WebhookStore
	// AllowPrivate lets deliveries reach inward addresses
	// (AGENTIK_WEBHOOK_ALLOW_PRIVATE=on).
	AllowPrivate bool
	// Timeout bounds one attempt (AGENTIK_WEBHOOK_TIMEOUT).
	Timeout time.Duration
	// RetryWindow is how long after its event a delivery is retried
	// (AGENTIK_WEBHOOK_RETRY_WINDOW); then it is failed.
	RetryWindow time.Duration
	// FirstRetry is the backoff after the first failure; each next one
	// doubles, up to MaxBackoff, each with jitter (half of it random).
	FirstRetry time.Duration
	MaxBackoff time.Duration
	// Poll bounds the wait between two looks at the outbox, for rows
	// written by other processes.
	Poll time.Duration
	// Outcome counts attempts by outcome (a metric); nil: none.
	Outcome func(outcome string)
	Logger  *slog.Logger
}

// Deliverer sends the outbox's deliveries. Run it once per process: the
// store hands each due delivery to one process at a time.
type Deliverer struct {
	opts   Options
	client *http.Client
	log    *slog.Logger
	wake   chan struct{}
	now    func() time.Time
}

// New returns a Deliverer; Run starts it.
func New(opts Options) *Deliverer {
	defaults.Positive(&opts.Timeout, DefaultTimeout)
	defaults.Positive(&opts.RetryWindow, DefaultRetryWindow)
	defaults.Positive(&opts.FirstRetry, DefaultFirstRetry)
	defaults.Positive(&opts.MaxBackoff, DefaultMaxBackoff)
	defaults.Positive(&opts.Poll, DefaultPoll)
	defaults.Logger(&opts.Logger)
	d := &Deliverer{opts: opts, client: NewClient(opts.Timeout, opts.AllowPrivate), log: opts.Logger,
		wake: make(chan struct{}, 1), now: time.Now}
	opts.Store.OnOutbox(d.Wake)
	return d
}

// Wake makes the deliverer look at the outbox now. It never blocks.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends; attempts under way then finish (each is
// bounded by Timeout).
func (d *Deliverer) Run(ctx context.Context) {
	for {
		n := d.round(ctx)
		if n == batch {
			continue // more may be due
		}
		t := time.NewTimer(d.opts.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// round claims due deliveries and sends them, concurrently; it returns
// how many it claimed.
func (d *Deliverer) round(ctx context.Context) int {
	now := d.now()
	// The lease covers every attempt of the batch, with room to record it.
	lease := agentik.TimeOf(now.Add(d.opts.Timeout + 30*time.Second))
	list, err := d.opts.Store.ClaimDeliveries(ctx, agentik.TimeOf(now), lease, batch)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("webhooks: reading the outbox", "err", err)
		}
		return 0
	}
	var wg sync.WaitGroup
	for _, dl := range list {
		wg.Go(func() { d.deliver(context.WithoutCancel(ctx), dl) })
	}
	wg.Wait()
	return len(list)
}

// deliver makes one attempt and records its result.
func (d *Deliverer) deliver(ctx context.Context, dl agentik.Delivery) {
	status, err := d.attempt(ctx, dl)
	now := agentik.TimeOf(d.now())
	dl.Attempts++
	dl.LastAttemptAt, dl.LastStatus, dl.LastError, dl.NextAttemptAt = &now, status, "", nil
	disable, outcome := "", OutcomeDelivered
	switch {
	case err == nil && status >= 200 && status < 300:
		dl.Status = agentik.DeliveryDelivered
	case status == http.StatusGone:
		dl.Status, dl.LastError = agentik.DeliveryFailed, "410 Gone: the webhook is disabled"
		disable, outcome = "the receiver answered 410 Gone", OutcomeDisabled
	default:
		dl.LastError = fmt.Sprintf("HTTP %d", status)
		if err != nil {
			dl.LastError = err.Error()
		}
		outcome = d.retry(&dl, now.Time, errors.Is(err, ErrInward))
	}
	if err := d.opts.Store.RecordDelivery(ctx, dl, disable); err != nil {
		d.log.Warn("webhooks: recording a delivery", "delivery", dl.ID, "err", err)
		return // its lease ends and it is tried again
	}
	if d.opts.Outcome != nil {
		d.opts.Outcome(outcome)
	}
	d.log.Debug("webhooks: delivery", "delivery", dl.ID, "webhook", dl.WebhookID, "outcome", outcome, "status", status)
}

// retry sets the failed attempt's next try, or fails the delivery once the
// retry window is over; an inward target is refused for good.
func (d *Deliverer) retry(dl *agentik.Delivery, now time.Time, inward bool) string {
	if inward {
		dl.Status = agentik.DeliveryFailed
		return OutcomeRefused
	}
	wait := d.backoff(dl.Attempts)
	if now.Add(wait).After(dl.CreatedAt.Add(d.opts.RetryWindow)) {
		dl.Status = agentik.DeliveryFailed
		return OutcomeFailed
	}
	next := agentik.TimeOf(now.Add(wait))
	dl.Status, dl.NextAttemptAt = agentik.DeliveryPending, &next
	return OutcomeRetry
}

// backoff is the wait after attempt n: FirstRetry doubled n-1 times, at
// most MaxBackoff, its second half random (jitter).
func (d *Deliverer) backoff(n int) time.Duration {
	w := d.opts.FirstRetry
	for i := 1; i < n && w < d.opts.MaxBackoff; i++ {
		w *= 2
	}
	w = min(w, d.opts.MaxBackoff)
	return w/2 + rand.N(w/2+1)
}

// attempt POSTs the delivery, signed; it returns the receiver's status.
func (d *Deliverer) attempt(ctx context.Context, dl agentik.Delivery) (int, error) {
	now := d.now()
	sig, err := Sign(dl.Secret, dl.ID, now, dl.Payload)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.URL, bytes.NewReader(dl.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentik-webhooks")
	req.Header.Set("webhook-id", dl.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, ErrInward) {
			return 0, ErrInward
		}
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // drained for reuse only
	resp.Body.Close()
	return resp.StatusCode, nil
}
