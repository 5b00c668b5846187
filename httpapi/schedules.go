package httpapi

import (
	"net/http"

	"github.com/agentik/agentik"
)

// The schedules and webhooks endpoints (SPEC §20), served when the
// options give the agent's Schedules and Webhooks.

type scheduleList struct {
	Schedules []agentik.Schedule `json:"schedules"`
}

type runList struct {
	Runs []agentik.ScheduleRun `json:"runs"`
}

type webhookList struct {
	Webhooks []agentik.Webhook `json:"webhooks"`
}

type deliveryList struct {
	Deliveries []agentik.Delivery `json:"deliveries"`
}

// decodeSchedule decodes a schedule body; the Schedules service checks the
// values against the schedule they make.
func decodeSchedule(b []byte) (agentik.ScheduleRequest, error) {
	var req agentik.ScheduleRequest
	if err := decodeJSON(b, &req); err != nil {
		return req, err
	}
	if req.Content != nil {
		if err := agentik.ValidateContent(req.Content); err != nil {
			return req, err
		}
	}
	return req, nil
}

// decodeWebhook decodes a webhook body.
func decodeWebhook(b []byte) (agentik.WebhookRequest, error) {
	var req agentik.WebhookRequest
	if err := decodeJSON(b, &req); err != nil {
		return req, err
	}
	if req.URL == "" {
		return req, agentik.Errorf(agentik.EInvalid, "url is required")
	}
	return req, agentik.ValidateWebhookEvents(req.Events)
}

func (s *server) createSchedule(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeBody(s, w, r, decodeSchedule)
	if !ok {
		return
	}
	sc, err := s.opts.Schedules.CreateSchedule(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sc)
}

func (s *server) listSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.opts.Schedules.ListSchedules(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scheduleList{list})
}

func (s *server) getSchedule(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		sc, err := s.opts.Schedules.GetSchedule(r.Context(), id)
		s.answer(w, r, http.StatusOK, sc, err)
	}
}

func (s *server) updateSchedule(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	req, ok := decodeBody(s, w, r, decodeSchedule)
	if !ok {
		return
	}
	sc, err := s.opts.Schedules.UpdateSchedule(r.Context(), id, req)
	s.answer(w, r, http.StatusOK, sc, err)
}

func (s *server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		s.answer(w, r, http.StatusNoContent, nil, s.opts.Schedules.DeleteSchedule(r.Context(), id))
	}
}

func (s *server) runSchedule(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		run, err := s.opts.Schedules.RunSchedule(r.Context(), id)
		s.answer(w, r, http.StatusAccepted, run, err)
	}
}

func (s *server) scheduleRuns(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		runs, err := s.opts.Schedules.ScheduleRuns(r.Context(), id)
		s.answer(w, r, http.StatusOK, runList{runs}, err)
	}
}

func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeBody(s, w, r, decodeWebhook)
	if !ok {
		return
	}
	hook, err := s.opts.Webhooks.CreateWebhook(r.Context(), req)
	s.answer(w, r, http.StatusCreated, hook, err)
}

func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	list, err := s.opts.Webhooks.ListWebhooks(r.Context())
	s.answer(w, r, http.StatusOK, webhookList{list}, err)
}

func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		hook, err := s.opts.Webhooks.GetWebhook(r.Context(), id)
		s.answer(w, r, http.StatusOK, hook, err)
	}
}

func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		s.answer(w, r, http.StatusNoContent, nil, s.opts.Webhooks.DeleteWebhook(r.Context(), id))
	}
}

func (s *server) webhookDeliveries(w http.ResponseWriter, r *http.Request) {
	if id, ok := s.pathID(w, r); ok {
		list, err := s.opts.Webhooks.WebhookDeliveries(r.Context(), id)
		s.answer(w, r, http.StatusOK, deliveryList{list}, err)
	}
}

// answer writes v with status, or err.
func (s *server) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	switch {
	case err != nil:
		s.writeError(w, r, err)
	case status == http.StatusNoContent:
		w.WriteHeader(status)
	default:
		writeJSON(w, status, v)
	}
}
