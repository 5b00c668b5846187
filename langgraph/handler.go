package langgraph

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/defaults"
)

// DefaultPath is where the process mounts the door for the default agent's
// callers.
const DefaultPath = "/langgraph"

// Defaults of Options.
const (
	DefaultMaxBodyBytes   = 16 << 20
	DefaultKeepAlive      = 15 * time.Second
	DefaultMaxRunMessages = 32
	// maxPathMessages bounds the head path a state or a run reads: a
	// thread longer than this is answered with its newest messages.
	maxPathMessages = 10_000
)

// Options configures a Handler.
type Options struct {
	// Agents returns the agents the caller (the principal in ctx) may use
	// as assistants, the default one first. Required.
	Agents func(ctx context.Context) []agentik.Agent
	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int64
	// KeepAlive is the interval of SSE comments on a silent stream.
	KeepAlive time.Duration
	// IfBusy is the busy policy of a run that names no multitask_strategy.
	IfBusy string
	// MaxRunMessages bounds the input messages of one run (one turn's
	// input); more is 422 and stores nothing.
	MaxRunMessages int
	// Logger receives failed requests; nil is slog.Default().
	Logger *slog.Logger
	// Memory returns the memory blocks of agent id (nil: memory is off
	// for it). The store API (store.go) serves the caller's blocks of the
	// first agent Agents gives; nil Memory: the store API answers 404.
	Memory func(agentID string) agentik.Memory
	// Schedules returns the schedules API of agent id (nil: none). The
	// crons API (crons.go) maps to it; nil Schedules: crons are off.
	Schedules func(agentID string) agentik.Schedules
}

// Handler serves the LangGraph API for a set of agents. Safe for concurrent
// use.
type Handler struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	// deleteMu orders this process's changes of a thread's deleted runs.
	deleteMu sync.Mutex
}

// New returns the door. Mount it behind the HTTP edge (package edge): every
// request acts for the principal in its context.
func New(opts Options) *Handler {
	defaults.Positive(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&opts.KeepAlive, DefaultKeepAlive)
	defaults.Positive(&opts.MaxRunMessages, DefaultMaxRunMessages)
	h := &Handler{opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	defaults.Logger(&h.log)
	h.routes()
	return h
}

// route is one endpoint of the door.
type route struct {
	pattern string
	fn      func(w http.ResponseWriter, r *http.Request) error
}

func (h *Handler) routes() {
	rs := []route{
		{"GET /ok", h.ok},
		{"GET /info", h.info},
		{"POST /assistants/search", h.searchAssistants},
		{"POST /assistants/count", h.countAssistants},
		{"GET /assistants/{aid}", h.getAssistant},
		{"GET /assistants/{aid}/schemas", h.assistantSchemas},
		{"GET /assistants/{aid}/graph", h.assistantGraph},
		{"POST /threads", h.createThread},
		{"POST /threads/search", h.searchThreads},
		{"POST /threads/count", h.countThreads},
		{"GET /threads/{tid}", h.getThread},
		{"PATCH /threads/{tid}", h.patchThread},
		{"DELETE /threads/{tid}", h.deleteThread},
		{"POST /threads/{tid}/copy", h.copyThread},
		{"GET /threads/{tid}/state", h.getState},
		{"GET /threads/{tid}/state/{cid}", h.getState},
		{"POST /threads/{tid}/state/checkpoint", h.postStateCheckpoint},
		{"POST /threads/{tid}/state", h.updateState},
		{"POST /threads/{tid}/history", h.history},
		{"GET /threads/{tid}/history", h.history},
		{"POST /threads/{tid}/runs", h.createRun},
		{"POST /threads/{tid}/runs/stream", h.streamRun},
		{"POST /threads/{tid}/runs/wait", h.waitRun},
		{"GET /threads/{tid}/runs", h.listRuns},
		{"GET /threads/{tid}/runs/{rid}", h.getRun},
		{"GET /threads/{tid}/runs/{rid}/join", h.joinRun},
		{"GET /threads/{tid}/runs/{rid}/stream", h.joinStream},
		{"POST /threads/{tid}/runs/{rid}/cancel", h.cancelRun},
		{"DELETE /threads/{tid}/runs/{rid}", h.deleteRun},
		{"POST /runs/stream", h.streamRun},
		{"POST /runs/wait", h.waitRun},
		{"POST /runs", h.createStatelessRun},
		{"PUT /store/items", h.putItem},
		{"GET /store/items", h.getItem},
		{"DELETE /store/items", h.deleteItem},
		{"POST /store/items/search", h.searchItems},
		{"POST /store/namespaces", h.listNamespaces},
		{"POST /threads/{tid}/runs/crons", h.createThreadCron},
		{"POST /runs/crons", h.createStatelessCron},
		{"POST /runs/crons/search", h.searchCrons},
		{"POST /runs/crons/count", h.countCrons},
		{"PATCH /runs/crons/{cid}", h.updateCron},
		{"DELETE /runs/crons/{cid}", h.deleteCron},
	}
	for _, rt := range rs {
		fn := rt.fn
		h.mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := fn(w, r); err != nil {
				h.writeError(w, r, err)
			}
		})
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, agentik.Errorf(agentik.ENotFound, "not found: %s %s is not an endpoint of the LangGraph API here (docs/langgraph.md)", r.Method, r.URL.Path))
	})
}

// ServeHTTP serves a request whose path is relative to the door's mount
// point (see Mount).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Mount registers the door at path on mux; wrap puts each request behind
// the edge (nil: none).
func (h *Handler) Mount(mux *http.ServeMux, path string, wrap func(http.Handler) http.Handler) {
	path = "/" + strings.Trim(cmp.Or(path, DefaultPath), "/")
	var hd http.Handler = http.StripPrefix(path, h)
	if wrap != nil {
		hd = wrap(hd)
	}
	mux.Handle(path+"/", hd)
}

// errorBody is the LangGraph API's error shape (its server answers
// {"detail": …}); code is Agentik's error code, for clients that want it.
type errorBody struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := agentik.ErrorCode(err)
	status := edge.Status(code)
	msg := agentik.ErrorMessage(err)
	if status == http.StatusInternalServerError {
		code, msg = agentik.EInternal, "internal error"
		h.log.ErrorContext(r.Context(), "langgraph: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	edge.PrepareError(w, r, err)
	edge.WriteJSON(w, status, errorBody{Detail: msg, Code: code})
}

// decode reads a JSON body into v; an empty body is the zero v.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return nil
	}
	body, err := edge.ReadJSON(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return agentik.Errorf(agentik.EMalformed, "malformed JSON body: %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) { edge.WriteJSON(w, http.StatusOK, v) }

func (h *Handler) ok(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, map[string]bool{"ok": true})
	return nil
}

func (h *Handler) info(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, map[string]any{
		"version": "agentik",
		"flags":   map[string]bool{"assistants": true, "crons": h.opts.Schedules != nil, "langsmith": false},
	})
	return nil
}
