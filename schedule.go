package agentik

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule starts turns on time (SPEC §20): a user message with
// context.origin = {channel: "schedule", schedule_id} sent to its
// conversation (or to a new conversation per run) on every due time of its
// cron expression (5 fields, in Timezone), its interval (Every) or once (At).
// Owner is the principal that made it; Agent the agent it belongs to.
type Schedule struct {
	ID             string    `json:"id"`
	Name           string    `json:"name,omitempty"`
	Cron           string    `json:"cron,omitempty"`
	Every          string    `json:"every,omitempty"`
	At             *Time     `json:"at,omitempty"`
	Timezone       string    `json:"timezone,omitempty"`
	ConversationID string    `json:"conversation_id,omitempty"`
	Content        []Content `json:"content"`
	IfBusy         string    `json:"if_busy,omitempty"`
	CatchUp        string    `json:"catch_up"`
	Enabled        bool      `json:"enabled"`
	NextRunAt      *Time     `json:"next_run_at"` // nil: it will not run again
	LastRunAt      *Time     `json:"last_run_at,omitempty"`
	Source         string    `json:"source"` // "api" or "config"
	CreatedAt      Time      `json:"created_at"`
	UpdatedAt      Time      `json:"updated_at"`
	Owner          string    `json:"-"`
	Agent          string    `json:"-"`
}

// Catch-up policies: what a schedule does about due times missed while no
// process was up.
const (
	CatchUpOne  = "one"  // one run for all of them (the default)
	CatchUpNone = "none" // none; the next due time after now runs
)

// Schedule sources.
const (
	SourceAPI    = "api"
	SourceConfig = "config"
)

// ScheduleRun outcomes.
const (
	RunClaimed = "claimed" // a process took it; its message is being sent
	RunSent    = "sent"    // its message is committed (the turn runs or ran)
	RunFailed  = "failed"  // its message was refused (busy, gone conversation, …)
	RunSkipped = "skipped" // a missed due time of a catch_up: none schedule
)

// OriginSchedule is the Origin.Channel of a scheduled run's message.
const OriginSchedule = "schedule"

// ScheduleRun is one run of a schedule: claimed in the store for one due
// time by one process, then its message sent.
type ScheduleRun struct {
	ID             string `json:"id"`
	ScheduleID     string `json:"schedule_id"`
	DueAt          Time   `json:"due_at"`
	ClaimedAt      Time   `json:"claimed_at"`
	FinishedAt     *Time  `json:"finished_at,omitempty"`
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id,omitempty"`
	Outcome        string `json:"outcome"`
	Error          string `json:"error,omitempty"`
	Manual         bool   `json:"manual,omitempty"` // POST …/run
	// Attempts counts the processes that took the run: more than one when
	// the first stopped between claim and message.
	Attempts int    `json:"attempts"`
	Owner    string `json:"-"`
	Agent    string `json:"-"`
}

// ScheduleStore keeps schedules and their runs. The methods of an agent's
// view (Create…, Get…, List…, Update…, Delete…) see that agent's schedules
// only; Due, Claim, Stale, Retake and Finish work across agents (one
// scheduler per process serves them all). Safe for concurrent use, also
// across processes sharing the database. Errors: ENotFound for an unknown
// id, EUnavailable when the database cannot be reached.
type ScheduleStore interface {
	// CreateSchedule stores s unless its owner already has limit schedules
	// of the agent (ERateLimited, nothing stored); limit <= 0: no limit.
	CreateSchedule(ctx context.Context, s Schedule, limit int) error
	// PutSchedule stores s, replacing the schedule of that id (the config
	// file's, on each start) and keeping its next due time when the timing
	// did not change.
	PutSchedule(ctx context.Context, s Schedule) error
	GetSchedule(ctx context.Context, id string) (Schedule, error)
	ListSchedules(ctx context.Context, owner string) ([]Schedule, error)
	// UpdateSchedule replaces the stored fields of s (by id).
	UpdateSchedule(ctx context.Context, s Schedule) error
	DeleteSchedule(ctx context.Context, id string) error
	ScheduleRuns(ctx context.Context, scheduleID string, limit int) ([]ScheduleRun, error)

	// NextDue is the earliest next_run_at of an enabled schedule (ok false
	// when none).
	NextDue(ctx context.Context) (Time, bool, error)
	// DueSchedules returns up to limit enabled schedules due at now.
	DueSchedules(ctx context.Context, now Time, limit int) ([]Schedule, error)
	// ClaimRun takes run for the due time the schedule had (run.DueAt, or
	// none for a manual run) and moves the schedule to next (nil: it will
	// not run again) in one transaction; false when another process took
	// that due time first (the schedule's next_run_at moved). leaseUntil is
	// how long the claimer has to finish before another may retake it.
	ClaimRun(ctx context.Context, run ScheduleRun, next *Time, leaseUntil Time) (bool, error)
	// StaleRuns returns runs still claimed whose lease ended before now.
	StaleRuns(ctx context.Context, now Time, limit int) ([]ScheduleRun, error)
	// RetakeRun takes a stale run over (false when another process did).
	RetakeRun(ctx context.Context, runID string, now, leaseUntil Time) (bool, error)
	// FinishRun records the run's outcome and, in the same transaction,
	// the schedule.run webhook event of the owner's webhooks.
	FinishRun(ctx context.Context, run ScheduleRun, ev WebhookEvent) error
}

// ScheduleTiming is what decides a schedule's due times, parsed.
type ScheduleTiming struct {
	cron  cron.Schedule
	every time.Duration
	at    time.Time
	loc   *time.Location
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseTiming checks the timing fields of s: exactly one of cron, every and
// at; a 5-field cron expression; a time zone of the IANA database; an
// interval (and the gaps of a cron expression) of at least minInterval.
// Errors are EInvalid.
func ParseTiming(s Schedule, minInterval time.Duration) (ScheduleTiming, error) {
	var t ScheduleTiming
	n := 0
	for _, set := range []bool{s.Cron != "", s.Every != "", s.At != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return t, Errorf(EInvalid, "a schedule needs exactly one of cron, every and at")
	}
	t.loc = time.UTC
	if s.Timezone != "" {
		if s.Cron == "" {
			return t, Errorf(EInvalid, "timezone applies to cron schedules only")
		}
		loc, err := time.LoadLocation(s.Timezone)
		if err != nil || strings.EqualFold(s.Timezone, "local") {
			return t, Errorf(EInvalid, "unknown time zone %q", s.Timezone)
		}
		t.loc = loc
	}
	switch {
	case s.Cron != "":
		if strings.Contains(s.Cron, "TZ=") || len(s.Cron) > 200 {
			return t, Errorf(EInvalid, "invalid cron expression %q: give the zone in timezone", s.Cron)
		}
		c, err := cronParser.Parse(s.Cron)
		if err != nil {
			return t, Errorf(EInvalid, "invalid cron expression %q: %v", s.Cron, err)
		}
		t.cron = c
		if gap := t.minGap(); gap < minInterval {
			return t, Errorf(EInvalid, "cron %q runs every %s, below the minimum interval %s", s.Cron, gap, minInterval)
		}
	case s.Every != "":
		d, err := time.ParseDuration(s.Every)
		if err != nil {
			return t, Errorf(EInvalid, "invalid interval %q (want a duration such as 90s or 1h)", s.Every)
		}
		if d < minInterval || d <= 0 {
			return t, Errorf(EInvalid, "interval %s is below the minimum %s", d, minInterval)
		}
		t.every = d
	default:
		t.at = s.At.Time
	}
	return t, nil
}

// minGap is the shortest gap between the next due times of a cron
// expression (a year of them at most).
func (t ScheduleTiming) minGap() time.Duration {
	gap := time.Duration(1<<63 - 1)
	prev := t.cron.Next(time.Date(2025, 1, 1, 0, 0, 0, 0, t.loc))
	for range 64 {
		next := t.cron.Next(prev)
		if next.IsZero() {
			break
		}
		gap = min(gap, next.Sub(prev))
		prev = next
	}
	return gap
}

// First is the first due time of a schedule made at now: zero when there
// is none (an at in the past).
func (t ScheduleTiming) First(now time.Time) time.Time {
	switch {
	case t.cron != nil:
		return t.cron.Next(now.In(t.loc)).UTC()
	case t.every > 0:
		return now.Add(t.every)
	case t.at.After(now):
		return t.at
	}
	return time.Time{}
}

// After is the first due time after both due (the one being run) and now:
// due times missed meanwhile are skipped (one run catches up). Zero when
// none (a one-shot schedule).
func (t ScheduleTiming) After(due, now time.Time) time.Time {
	switch {
	case t.cron != nil:
		next := t.cron.Next(maxTime(due, now).In(t.loc))
		if t.repeatsWallClock(due, next) {
			next = t.cron.Next(next)
		}
		return next.UTC()
	case t.every > 0:
		next := due.Add(t.every)
		if !next.After(now) {
			next = next.Add((now.Sub(next)/t.every + 1) * t.every)
		}
		return next
	}
	return time.Time{}
}

// repeatsWallClock says next is due only because the clocks of the zone
// went back (the end of daylight saving time): the same local time as due,
// of an expression with fixed hours. Such a time is run once, as cron does;
// an expression of every hour (hour field *) runs in both hours.
func (t ScheduleTiming) repeatsWallClock(due, next time.Time) bool {
	spec, ok := t.cron.(*cron.SpecSchedule)
	if !ok || spec.Hour&(1<<63) != 0 || next.IsZero() {
		return false
	}
	d, n := due.In(t.loc), next.In(t.loc)
	return n.Sub(d) < 2*time.Hour && d.Format(time.DateTime) == n.Format(time.DateTime)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Webhook events (SPEC §20).
const (
	HookTurnCompleted        = "turn.completed"
	HookTurnFailed           = "turn.failed"
	HookTurnInterrupted      = "turn.interrupted"
	HookApprovalRequested    = "approval.requested"
	HookConversationCreated  = "conversation.created"
	HookConversationDeleted  = "conversation.deleted"
	HookScheduleRun          = "schedule.run"
	WebhookEventSeparator    = " "
	maxWebhookEventsPerHook  = 16
	maxWebhookDescriptionLen = 1024
)

// WebhookEvents lists the events a webhook may subscribe to.
var WebhookEvents = []string{HookTurnCompleted, HookTurnFailed, HookTurnInterrupted, HookApprovalRequested,
	HookConversationCreated, HookConversationDeleted, HookScheduleRun}

// Webhook tells a receiver of the owner's events (per principal, through
// the API) or of every conversation of an agent (the config file's:
// AllOwners). Secret signs deliveries (Standard Webhooks: "whsec_" and the
// base64 key); the API shows it once, at creation.
type Webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
	Secret      string   `json:"secret,omitempty"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why a webhook stopped (a receiver's 410).
	DisabledReason string `json:"disabled_reason,omitempty"`
	Source         string `json:"source"`
	CreatedAt      Time   `json:"created_at"`
	Owner          string `json:"-"`
	AllOwners      bool   `json:"-"`
	Agent          string `json:"-"`
}

// ValidateWebhookEvents checks a webhook's event list: known, no
// duplicates, at least one. Errors are EInvalid.
func ValidateWebhookEvents(events []string) error {
	if len(events) == 0 || len(events) > maxWebhookEventsPerHook {
		return Errorf(EInvalid, "events: give 1 to %d of %s", maxWebhookEventsPerHook, strings.Join(WebhookEvents, ", "))
	}
	seen := map[string]bool{}
	for _, e := range events {
		known := false
		for _, k := range WebhookEvents {
			known = known || e == k
		}
		if !known {
			return Errorf(EInvalid, "unknown event %q (known: %s)", e, strings.Join(WebhookEvents, ", "))
		}
		if seen[e] {
			return Errorf(EInvalid, "event %q given twice", e)
		}
		seen[e] = true
	}
	return nil
}

// ValidateWebhookDescription bounds a description.
func ValidateWebhookDescription(d string) error {
	if len(d) > maxWebhookDescriptionLen {
		return Errorf(EInvalid, "description is longer than %d bytes", maxWebhookDescriptionLen)
	}
	return nil
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its (next) attempt
	DeliveryDelivered = "delivered" // a 2xx answer
	DeliveryFailed    = "failed"    // out of retries, refused target, or the webhook disabled
)

// Delivery is one event for one webhook: a row of the outbox, written in
// the transaction of the event, and its log (attempts and the last result).
type Delivery struct {
	ID            string  `json:"id"` // the webhook-id header: the same on every attempt
	WebhookID     string  `json:"webhook_id"`
	Event         string  `json:"event"`
	Status        string  `json:"status"`
	Attempts      int     `json:"attempts"`
	CreatedAt     Time    `json:"created_at"`
	NextAttemptAt *Time   `json:"next_attempt_at,omitempty"`
	LastAttemptAt *Time   `json:"last_attempt_at,omitempty"`
	LastStatus    int     `json:"last_status,omitempty"` // the receiver's HTTP status
	LastError     string  `json:"last_error,omitempty"`
	Payload       RawJSON `json:"payload"`

	// Set on claimed deliveries: where and how to send it.
	URL    string `json:"-"`
	Secret string `json:"-"`
}

// WebhookEvent is an event to deliver: its type, the owner of the
// conversation it concerns and its JSON body {type, timestamp, data}.
type WebhookEvent struct {
	Type    string
	Owner   string
	Payload []byte
}

// WebhookStore keeps webhooks, the outbox and the delivery log. The
// methods of an agent's view see that agent's webhooks only;
// ClaimDeliveries, RecordDelivery and OutboxStats work across agents.
// Stores write outbox rows in the transaction of the event they announce
// (Commit, CreateConversation, DeleteConversation, FinishRun). Safe for
// concurrent use, also across processes.
type WebhookStore interface {
	// CreateWebhook stores w unless its owner has limit webhooks of the
	// agent already (ERateLimited).
	CreateWebhook(ctx context.Context, w Webhook, limit int) error
	// PutWebhook stores w, replacing the webhook of that id (the config
	// file's, on each start).
	PutWebhook(ctx context.Context, w Webhook) error
	GetWebhook(ctx context.Context, id string) (Webhook, error)
	ListWebhooks(ctx context.Context, owner string) ([]Webhook, error)
	DeleteWebhook(ctx context.Context, id string) error
	Deliveries(ctx context.Context, webhookID string, limit int) ([]Delivery, error)

	// ClaimDeliveries takes up to limit pending deliveries due at now, for
	// the caller alone until leaseUntil (then another process may take
	// them again: at least once).
	ClaimDeliveries(ctx context.Context, now, leaseUntil Time, limit int) ([]Delivery, error)
	// RecordDelivery stores the result of an attempt (d's Status,
	// Attempts, NextAttemptAt, LastStatus, LastError, LastAttemptAt);
	// disable also disables d's webhook with that reason.
	RecordDelivery(ctx context.Context, d Delivery, disable string) error
	// OutboxStats counts pending deliveries and gives the creation time of
	// the oldest (zero when none).
	OutboxStats(ctx context.Context) (pending int64, oldest Time, err error)
	// OnOutbox registers fn, called (without blocking) after a commit of
	// this process wrote outbox rows.
	OnOutbox(fn func())
}

// WebhookBody is the JSON body of a delivery.
type WebhookBody struct {
	Type      string `json:"type"`
	Timestamp Time   `json:"timestamp"`
	Data      any    `json:"data"`
}

// WebhookEventOf returns the webhook event a durable conversation event
// announces, if any, for the conversation's owner.
func WebhookEventOf(ev Event, owner string) (WebhookEvent, bool) {
	data := map[string]any{"conversation_id": ev.ConversationID}
	var typ string
	switch {
	case ev.Message != nil && ev.Message.ClosesTurn() && ev.Message.Type == MsgAssistant:
		typ = HookTurnCompleted
		data["reply_to"], data["message_id"], data["content"] = ev.Message.ReplyTo, ev.Message.ID, ev.Message.Content
		if ev.Message.Tokens != nil {
			data["tokens"] = ev.Message.Tokens
		}
	case ev.Message != nil && ev.Message.Type == MsgError:
		typ = HookTurnFailed
		data["reply_to"], data["message_id"], data["code"] = ev.Message.ReplyTo, ev.Message.ID, ev.Message.Code
	case ev.Type == EvInterrupted:
		typ = HookTurnInterrupted
		data["reply_to"], data["reason"] = ev.ReplyTo, ev.Reason
	case ev.Type == EvApprovalRequested:
		typ = HookApprovalRequested
		data["reply_to"], data["call_id"], data["name"], data["arguments"] = ev.ReplyTo, ev.CallID, ev.Name, ev.Arguments
		if !ev.ExpiresAt.IsZero() {
			data["expires_at"] = ev.ExpiresAt
		}
	default:
		return WebhookEvent{}, false
	}
	return NewWebhookEvent(typ, owner, ev.Date, data), true
}

// WebhookAgentEventOf returns the webhook event of an agent event, if any.
func WebhookAgentEventOf(ev AgentEvent) (WebhookEvent, bool) {
	var typ string
	switch ev.Type {
	case AgentEvCreated:
		typ = HookConversationCreated
	case AgentEvDeleted:
		typ = HookConversationDeleted
	default:
		return WebhookEvent{}, false
	}
	data := map[string]any{"conversation_id": ev.ConversationID}
	if ev.Conversation != nil && ev.Conversation.Title != "" {
		data["title"] = ev.Conversation.Title
	}
	return NewWebhookEvent(typ, ev.Owner, ev.Date, data), true
}

// NewWebhookEvent makes the event of type typ with its body.
func NewWebhookEvent(typ, owner string, at Time, data any) WebhookEvent {
	b, err := json.Marshal(WebhookBody{Type: typ, Timestamp: at, Data: data})
	if err != nil { // every value above marshals
		panic(fmt.Sprintf("webhook body: %v", err))
	}
	return WebhookEvent{Type: typ, Owner: owner, Payload: b}
}

// ScheduleRequest creates a schedule (POST {p}/schedules) or changes one
// (PATCH: only the fields given change; a timing field given replaces the
// timing).
type ScheduleRequest struct {
	Name           *string   `json:"name,omitempty"`
	Cron           *string   `json:"cron,omitempty"`
	Every          *string   `json:"every,omitempty"`
	At             *Time     `json:"at,omitempty"`
	Timezone       *string   `json:"timezone,omitempty"`
	ConversationID *string   `json:"conversation_id,omitempty"`
	Content        []Content `json:"content,omitempty"`
	IfBusy         *string   `json:"if_busy,omitempty"`
	Enabled        *bool     `json:"enabled,omitempty"`
	CatchUp        *string   `json:"catch_up,omitempty"`
}

// Schedules is the schedules API of an agent, for the principal in the
// context: other principals' schedules are ENotFound. Errors: EInvalid for
// a bad timing, content or policy, ENotFound for a conversation the
// principal cannot see, ERateLimited over the per-principal limit.
type Schedules interface {
	CreateSchedule(ctx context.Context, req ScheduleRequest) (Schedule, error)
	ListSchedules(ctx context.Context) ([]Schedule, error)
	GetSchedule(ctx context.Context, id string) (Schedule, error)
	UpdateSchedule(ctx context.Context, id string, req ScheduleRequest) (Schedule, error)
	DeleteSchedule(ctx context.Context, id string) error
	// RunSchedule runs the schedule now (beside its due times).
	RunSchedule(ctx context.Context, id string) (ScheduleRun, error)
	ScheduleRuns(ctx context.Context, id string) ([]ScheduleRun, error)
}

// WebhookRequest creates a webhook (POST {p}/webhooks).
type WebhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
}

// Webhooks is the webhooks API of an agent, for the principal in the
// context. CreateWebhook returns the secret, which no other call shows.
// Errors: EInvalid for a URL that is not http(s) or points inward (without
// the opt-in) and unknown events; ERateLimited over the limit.
type Webhooks interface {
	CreateWebhook(ctx context.Context, req WebhookRequest) (Webhook, error)
	ListWebhooks(ctx context.Context) ([]Webhook, error)
	GetWebhook(ctx context.Context, id string) (Webhook, error)
	DeleteWebhook(ctx context.Context, id string) error
	WebhookDeliveries(ctx context.Context, id string) ([]Delivery, error)
}
