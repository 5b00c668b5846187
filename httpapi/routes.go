package httpapi

import (
	"net/http"
	"strings"

	"github.com/agentik/agentik/edge"
)

// route is one endpoint: its method, path, handler and access.
type route struct {
	method, path string
	h            http.HandlerFunc
	access       edge.Access
}

// routes registers the agent's endpoints (SPEC §4) under prefix p. This is
// the whole surface of the facade: one line per endpoint.
func (s *server) routes(mux *http.ServeMux, p string) {
	info := p
	if info == "" { // mounted at the root
		info = "/{$}"
	}
	const private, stream = edge.Private, edge.Stream // stream: EventSource may pass ?access_token=
	table := []route{
		{"GET", info, s.agentInfo, private},
		{"GET", p + "/events", s.agentEvents, stream},
		{"POST", p + "/conversations", s.createConversation, private},
		{"GET", p + "/conversations", s.listConversations, private},
		{"GET", p + "/conversations/{id}", s.getConversation, private},
		{"PATCH", p + "/conversations/{id}", s.renameConversation, private},
		{"DELETE", p + "/conversations/{id}", s.deleteConversation, private},
		{"POST", p + "/conversations/{id}/messages", s.send, private},
		{"GET", p + "/conversations/{id}/messages", s.messages, private},
		{"POST", p + "/conversations/{id}/interrupt", s.interrupt, private},
		{"POST", p + "/conversations/{id}/regenerate", s.regenerate, private},
		{"PUT", p + "/conversations/{id}/head", s.setHead, private},
		{"POST", p + "/conversations/{id}/fork", s.fork, private},
		{"GET", p + "/conversations/{id}/state", s.getState, private},
		{"PUT", p + "/conversations/{id}/state", s.putState, private},
		{"PATCH", p + "/conversations/{id}/state", s.patchState, private},
		{"GET", p + "/conversations/{id}/events", s.conversationEvents, stream},
		{"GET", p + "/conversations/{id}/approvals", s.approvals, private},
		{"POST", p + "/conversations/{id}/approvals/{call_id}", s.resolveApproval, private},
		{"GET", p + "/conversations/{id}/messages/{seq}/images/{n}", s.image, private},
	}
	if s.opts.Schedules != nil {
		table = append(table, []route{
			{"POST", p + "/schedules", s.createSchedule, private},
			{"GET", p + "/schedules", s.listSchedules, private},
			{"GET", p + "/schedules/{id}", s.getSchedule, private},
			{"PATCH", p + "/schedules/{id}", s.updateSchedule, private},
			{"DELETE", p + "/schedules/{id}", s.deleteSchedule, private},
			{"POST", p + "/schedules/{id}/run", s.runSchedule, private},
			{"GET", p + "/schedules/{id}/runs", s.scheduleRuns, private},
		}...)
	}
	if s.opts.Webhooks != nil {
		table = append(table, []route{
			{"POST", p + "/webhooks", s.createWebhook, private},
			{"GET", p + "/webhooks", s.listWebhooks, private},
			{"GET", p + "/webhooks/{id}", s.getWebhook, private},
			{"DELETE", p + "/webhooks/{id}", s.deleteWebhook, private},
			{"GET", p + "/webhooks/{id}/deliveries", s.webhookDeliveries, private},
		}...)
	}
	if s.opts.Memory != nil {
		table = append(table, []route{
			{"GET", p + "/memory", s.listMemory, private},
			{"DELETE", p + "/memory", s.forgetMemory, private},
			{"GET", p + "/memory/blocks/{label}", s.getMemoryBlock, private},
			{"PUT", p + "/memory/blocks/{label}", s.putMemoryBlock, private},
			{"DELETE", p + "/memory/blocks/{label}", s.deleteMemoryBlock, private},
			{"GET", p + "/memory/blocks/{label}/history", s.memoryBlockHistory, private},
		}...)
	}
	if s.opts.Recall != nil {
		table = append(table, route{"GET", p + "/memory/search", s.memorySearch, private})
	}
	allowed := map[string][]string{}
	var paths []string
	for _, rt := range table {
		mux.Handle(rt.method+" "+rt.path, s.guard(rt.h, rt.access))
		if allowed[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// Without these, ServeMux would answer a wrong method or an unknown path
	// under the prefix in plain text; clients expect the JSON error body.
	for _, path := range paths {
		mux.Handle(path, methodNotAllowed(allowed[path]))
	}
	mux.HandleFunc(p+"/", s.notFound)
}

// routeHealth registers the liveness and readiness probes.
func (s *server) routeHealth(mux *http.ServeMux) {
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /health/ready", s.ready)
}

// methodNotAllowed answers 405 with the Allow header, in the error body form.
// 405 is a routing answer, not a core error code.
func methodNotAllowed(methods []string) http.Handler {
	allow := strings.Join(methods, ", ")
	if strings.Contains(allow, "GET") {
		allow += ", HEAD"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{
			Code: edge.CodeMethodNotAllowed, Message: r.Method + " is not allowed here; use " + allow,
		}})
	})
}
