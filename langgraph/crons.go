package langgraph

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/agentik/agentik"
)

// Crons are the agent's schedules (SPEC §20, docs/schedules.md): a cron's
// schedule is the schedule's cron expression, its input's messages the
// message each run sends, its thread the schedule's conversation (none:
// a new thread per run), its multitask_strategy the schedule's if_busy.
// The schedules API checks the rest: the minimum interval, the
// per-principal limit, the owner (another principal's cron is not found).

// Cron is a schedule as the LangGraph API shows a cron.
type Cron struct {
	CronID         string         `json:"cron_id"`
	AssistantID    string         `json:"assistant_id"`
	ThreadID       *string        `json:"thread_id"`
	UserID         string         `json:"user_id"`
	Payload        map[string]any `json:"payload"`
	Schedule       string         `json:"schedule"`
	Timezone       *string        `json:"timezone"`
	NextRunDate    *agentik.Time  `json:"next_run_date"`
	EndTime        *string        `json:"end_time"`
	CreatedAt      agentik.Time   `json:"created_at"`
	UpdatedAt      agentik.Time   `json:"updated_at"`
	Metadata       map[string]any `json:"metadata"`
	Enabled        bool           `json:"enabled"`
	OnRunCompleted string         `json:"on_run_completed,omitempty"`
}

// cronOf shows sc, a schedule of agent a; false for one no cron
// expression says (a one-shot "at" schedule of the native API).
func cronOf(a string, sc agentik.Schedule) (Cron, bool) {
	expr := sc.Cron
	if sc.Every != "" {
		expr = "@every " + sc.Every
	}
	if expr == "" {
		return Cron{}, false
	}
	c := Cron{CronID: sc.ID, AssistantID: a, UserID: sc.Owner, Schedule: expr, NextRunDate: sc.NextRunAt,
		CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt, Metadata: map[string]any{}, Enabled: sc.Enabled}
	if sc.ConversationID != "" {
		c.ThreadID = &sc.ConversationID
	} else {
		c.OnRunCompleted = "keep"
	}
	if sc.Timezone != "" {
		c.Timezone = &sc.Timezone
	}
	msgs := []LCMessage{{Type: "human", Content: jsonString(agentik.JoinText(sc.Content))}}
	c.Payload = map[string]any{"assistant_id": a, "input": map[string]any{"messages": msgs}}
	if sc.IfBusy != "" {
		c.Payload["multitask_strategy"] = sc.IfBusy
	}
	return c, true
}

// cronRequest is the body of POST …/crons and PATCH /runs/crons/{id}.
type cronRequest struct {
	AssistantID string  `json:"assistant_id"`
	Schedule    *string `json:"schedule"`
	Timezone    *string `json:"timezone"`
	Input       *struct {
		Messages []LCMessage `json:"messages"`
	} `json:"input"`
	Enabled           *bool           `json:"enabled"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	EndTime           json.RawMessage `json:"end_time"`
	OnRunCompleted    string          `json:"on_run_completed"`
	Webhook           json.RawMessage `json:"webhook"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	Config            json.RawMessage `json:"config"`
	Context           json.RawMessage `json:"context"`
	Metadata          json.RawMessage `json:"metadata"`
}

// schedule is the schedules API request q makes.
func (q *cronRequest) schedule() (agentik.ScheduleRequest, error) {
	var req agentik.ScheduleRequest
	switch {
	case isSet(q.EndTime):
		return req, agentik.Errorf(agentik.EInvalid, "end_time is not supported: delete the cron, or disable it (enabled: false)")
	case isSet(q.Webhook):
		return req, agentik.Errorf(agentik.EInvalid, "a cron webhook is not supported (native webhooks have a schedule.run event)")
	case q.OnRunCompleted != "" && q.OnRunCompleted != "keep":
		return req, agentik.Errorf(agentik.EInvalid, "on_run_completed: only keep (a run's thread is kept)")
	}
	if raw := strings.TrimSpace(string(q.InterruptBefore) + string(q.InterruptAfter)); raw != "" && raw != "null" && raw != "nullnull" && raw != "[]" && raw != "[][]" {
		return req, agentik.Errorf(agentik.EInvalid, "interrupt_before/interrupt_after are not supported: an agent has one node; approvals interrupt on their own")
	}
	busy, err := busyPolicy(q.MultitaskStrategy, "")
	if err != nil {
		return req, err
	}
	if busy != "" {
		req.IfBusy = &busy
	}
	req.Cron, req.Timezone, req.Enabled = q.Schedule, q.Timezone, q.Enabled
	if q.Input != nil {
		if len(q.Input.Messages) == 0 {
			return req, agentik.Errorf(agentik.EInvalid, "input.messages: a cron needs the message each run sends")
		}
		content, ctxParts, err := runInput(q.Input.Messages)
		if err != nil {
			return req, err
		}
		if ctxParts > 0 {
			return req, agentik.Errorf(agentik.EInvalid, "input.messages: a cron sends human messages only (no history, no system message)")
		}
		req.Content = content
	}
	return req, nil
}

var errCronsOff = agentik.Errorf(agentik.ENotFound, "crons are off here: they map to schedules, which this server does not run (/info says crons: false)")

// schedules is agent a's schedules API; ENotFound when it has none.
func (h *Handler) schedules(a agentik.Agent) (agentik.Schedules, error) {
	var s agentik.Schedules
	if h.opts.Schedules != nil {
		s = h.opts.Schedules(a.Info().ID)
	}
	if s == nil {
		if h.opts.Schedules == nil {
			return nil, errCronsOff
		}
		return nil, agentik.Errorf(agentik.ENotFound, "assistant %q has no schedules here: its crons are off", a.Info().ID)
	}
	return s, nil
}

func (h *Handler) createThreadCron(w http.ResponseWriter, r *http.Request) error {
	return h.createCron(w, r, r.PathValue("tid"))
}

func (h *Handler) createStatelessCron(w http.ResponseWriter, r *http.Request) error {
	return h.createCron(w, r, "")
}

// createCron makes a schedule of the assistant's, on thread tid ("": a
// new thread per run).
func (h *Handler) createCron(w http.ResponseWriter, r *http.Request, tid string) error {
	var q cronRequest
	if err := h.decode(w, r, &q); err != nil {
		return err
	}
	if q.AssistantID == "" {
		return agentik.Errorf(agentik.EInvalid, "assistant_id is required")
	}
	a, err := h.agent(r, q.AssistantID)
	if err != nil {
		return err
	}
	if tid != "" {
		t, err := h.open(r.Context(), tid)
		if err != nil {
			return err
		}
		t.close()
		if id := t.agent.Info().ID; id != a.Info().ID {
			return agentik.Errorf(agentik.EInvalid, "thread %s belongs to assistant %q, not %q", tid, id, q.AssistantID)
		}
	}
	svc, err := h.schedules(a)
	if err != nil {
		return err
	}
	req, err := q.schedule()
	if err != nil {
		return err
	}
	if req.Cron == nil || *req.Cron == "" {
		return agentik.Errorf(agentik.EInvalid, "schedule: a cron expression (5 fields) is required")
	}
	if tid != "" {
		req.ConversationID = &tid
	}
	sc, err := svc.CreateSchedule(r.Context(), req)
	if err != nil {
		return err
	}
	c, _ := cronOf(a.Info().ID, sc)
	writeJSON(w, c)
	return nil
}

// findCron finds the caller's cron id among the assistants it may use.
func (h *Handler) findCron(ctx context.Context, id string) (agentik.Agent, agentik.Schedules, error) {
	if h.opts.Schedules == nil {
		return nil, nil, errCronsOff
	}
	for _, a := range h.opts.Agents(ctx) {
		svc, err := h.schedules(a)
		if err != nil {
			continue
		}
		_, err = svc.GetSchedule(ctx, id)
		if err == nil {
			return a, svc, nil
		}
		if !agentik.IsNotFound(err) {
			return nil, nil, err
		}
	}
	return nil, nil, agentik.Errorf(agentik.ENotFound, "cron %q not found", id)
}

func (h *Handler) deleteCron(w http.ResponseWriter, r *http.Request) error {
	_, svc, err := h.findCron(r.Context(), r.PathValue("cid"))
	if err != nil {
		return err
	}
	if err := svc.DeleteSchedule(r.Context(), r.PathValue("cid")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) updateCron(w http.ResponseWriter, r *http.Request) error {
	var q cronRequest
	if err := h.decode(w, r, &q); err != nil {
		return err
	}
	req, err := q.schedule()
	if err != nil {
		return err
	}
	a, svc, err := h.findCron(r.Context(), r.PathValue("cid"))
	if err != nil {
		return err
	}
	sc, err := svc.UpdateSchedule(r.Context(), r.PathValue("cid"), req)
	if err != nil {
		return err
	}
	c, _ := cronOf(a.Info().ID, sc)
	writeJSON(w, c)
	return nil
}

type cronSearch struct {
	AssistantID string         `json:"assistant_id"`
	ThreadID    string         `json:"thread_id"`
	Enabled     *bool          `json:"enabled"`
	Limit       int            `json:"limit"`
	Offset      int            `json:"offset"`
	SortBy      string         `json:"sort_by"`
	SortOrder   string         `json:"sort_order"`
	Metadata    map[string]any `json:"metadata"`
}

// crons returns the caller's crons the search asks for, sorted.
func (h *Handler) crons(w http.ResponseWriter, r *http.Request) ([]Cron, cronSearch, error) {
	var q cronSearch
	if h.opts.Schedules == nil {
		return nil, q, errCronsOff
	}
	if err := h.decode(w, r, &q); err != nil {
		return nil, q, err
	}
	out := []Cron{}
	for _, a := range h.opts.Agents(r.Context()) {
		id := a.Info().ID
		svc, err := h.schedules(a)
		if err != nil || q.AssistantID != "" && q.AssistantID != id {
			continue
		}
		list, err := svc.ListSchedules(r.Context())
		if err != nil {
			return nil, q, err
		}
		for _, sc := range list {
			c, ok := cronOf(id, sc)
			if ok && q.keeps(c) {
				out = append(out, c)
			}
		}
	}
	return out, q, sortCrons(out, q)
}

func (q *cronSearch) keeps(c Cron) bool {
	if q.ThreadID != "" && (c.ThreadID == nil || *c.ThreadID != q.ThreadID) {
		return false
	}
	if q.Enabled != nil && *q.Enabled != c.Enabled {
		return false
	}
	return metadataMatches(c.Metadata, q.Metadata)
}

// sortCrons orders crons by sort_by (created_at by default), newest first
// unless sort_order is asc.
func sortCrons(cs []Cron, q cronSearch) error {
	key := map[string]func(Cron) string{
		"cron_id":      func(c Cron) string { return c.CronID },
		"assistant_id": func(c Cron) string { return c.AssistantID },
		"thread_id": func(c Cron) string {
			if c.ThreadID == nil {
				return ""
			}
			return *c.ThreadID
		},
		"created_at": func(c Cron) string { return c.CreatedAt.String() },
		"updated_at": func(c Cron) string { return c.UpdatedAt.String() },
		"next_run_date": func(c Cron) string {
			if c.NextRunDate == nil {
				return ""
			}
			return c.NextRunDate.String()
		},
	}[cmp.Or(q.SortBy, "created_at")]
	if key == nil {
		return agentik.Errorf(agentik.EInvalid, "sort_by must be cron_id, assistant_id, thread_id, created_at, updated_at or next_run_date")
	}
	desc := q.SortOrder != "asc"
	if q.SortOrder != "" && q.SortOrder != "asc" && q.SortOrder != "desc" {
		return agentik.Errorf(agentik.EInvalid, "sort_order must be asc or desc")
	}
	slices.SortStableFunc(cs, func(a, b Cron) int {
		if desc {
			a, b = b, a
		}
		return cmp.Or(strings.Compare(key(a), key(b)), strings.Compare(a.CronID, b.CronID))
	})
	return nil
}

func (h *Handler) searchCrons(w http.ResponseWriter, r *http.Request) error {
	out, q, err := h.crons(w, r)
	if err != nil {
		return err
	}
	writeJSON(w, page(out, q.Offset, q.Limit))
	return nil
}

func (h *Handler) countCrons(w http.ResponseWriter, r *http.Request) error {
	out, _, err := h.crons(w, r)
	if err != nil {
		return err
	}
	writeJSON(w, len(out))
	return nil
}
