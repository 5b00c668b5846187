package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/defaults"
)

// DefaultPrefix is where NewHandler mounts the agent.
const DefaultPrefix = "/agentik"

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 16 << 20
	DefaultKeepAlive    = 15 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// Options configures the server side. The zero value is usable: open access,
// always ready, the defaults above.
type Options struct {
	// MaxBodyBytes bounds request bodies; larger ones are refused with 413.
	MaxBodyBytes int64
	// KeepAlive is the interval of ": keep-alive" comments on idle event
	// streams, so that proxies and clients see a live connection.
	KeepAlive time.Duration
	// WriteTimeout bounds each write to an event stream. A client that does
	// not read for this long is disconnected (it resumes by cursor) instead of
	// pinning the handler. It replaces http.Server.WriteTimeout for streams,
	// which would otherwise cut every stream at a fixed age.
	WriteTimeout time.Duration
	// Ready reports whether the agent can serve (store reachable); it backs
	// GET /health/ready. Nil means always ready.
	Ready func(ctx context.Context) error
	// Guard puts each endpoint behind the HTTP edge (edge.Edge.Guard), which
	// authenticates the request and puts its principal in the context; the
	// facade reads it there. access says how the endpoint is authenticated
	// (the event streams take ?access_token=). Nil means open access: every
	// request is the anonymous principal "".
	Guard func(h http.Handler, access edge.Access) http.Handler
	// Logger receives refused and failed requests; nil means slog.Default().
	Logger *slog.Logger
	// Schedules and Webhooks serve {p}/schedules and {p}/webhooks (SPEC
	// §20); nil: those paths are 404.
	Schedules agentik.Schedules
	Webhooks  agentik.Webhooks
	// Memory serves {p}/memory (SPEC §19, memory.go); nil: those paths
	// are 404.
	Memory agentik.Memory
	// Recall serves GET {p}/memory/search (SPEC §19) for the caller's own
	// messages; nil: that path is 404.
	Recall agentik.Recall
}

// server holds one mounted agent and its options, defaults applied.
type server struct {
	agent agentik.Agent
	opts  Options
	log   *slog.Logger

	handedOff streamCount // event streams served off their requests (handOff)
}

func newServer(agent agentik.Agent, opts Options) *server {
	defaults.Positive(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&opts.KeepAlive, DefaultKeepAlive)
	defaults.Positive(&opts.WriteTimeout, DefaultWriteTimeout)
	defaults.Logger(&opts.Logger)
	return &server{agent: agent, opts: opts, log: opts.Logger}
}

// NewHandler serves agent at DefaultPrefix, plus GET /health and
// GET /health/ready.
func NewHandler(agent agentik.Agent, opts Options) http.Handler {
	mux := http.NewServeMux()
	s := newServer(agent, opts)
	s.routeHealth(mux)
	s.routes(mux, DefaultPrefix)
	return mux
}

// Mount serves agent under prefix on mux ("/agentik", "/agents/support"…), so
// that several agents can share one server. It does not register the health
// probes: use MountHealth once per mux. Mount panics, like ServeMux, when the
// prefix is already taken.
//
// It returns wait, which waits until ctx ends for the event streams served
// off their requests to end: call it at shutdown, once the agent has shut
// down (which ends its streams), so that their last events reach the
// clients before the process exits.
func Mount(mux *http.ServeMux, prefix string, agent agentik.Agent, opts Options) (wait func(ctx context.Context)) {
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		prefix = ""
	}
	s := newServer(agent, opts)
	s.routes(mux, prefix)
	return s.wait
}

// MountHealth registers GET /health (liveness) and GET /health/ready (calls
// ready; nil means always ready) on mux.
func MountHealth(mux *http.ServeMux, ready func(ctx context.Context) error) {
	newServer(nil, Options{Ready: ready}).routeHealth(mux)
}

// guard puts an endpoint behind the edge, if there is one.
func (s *server) guard(h http.Handler, access edge.Access) http.Handler {
	if s.opts.Guard == nil {
		return h
	}
	return s.opts.Guard(h, access)
}

type status struct {
	Status string `json:"status"`
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, status{"ok"})
}

func (s *server) ready(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			s.writeError(w, r, agentik.WrapError(agentik.EUnavailable, "not ready", err))
			return
		}
	}
	writeJSON(w, http.StatusOK, status{"ok"})
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, agentik.Errorf(agentik.ENotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
}

func (s *server) agentInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.agent.Info())
}

func (s *server) createConversation(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeBody(s, w, r, decodeCreate)
	if !ok {
		return
	}
	info, err := s.agent.CreateConversation(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", strings.TrimSuffix(r.URL.Path, "/")+"/"+info.ID)
	writeJSON(w, http.StatusCreated, info)
}

func (s *server) listConversations(w http.ResponseWriter, r *http.Request) {
	req, err := parseListQuery(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.agent.ListConversations(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list.Conversations == nil {
		list.Conversations = []agentik.ConversationInfo{} // [] on the wire, never null
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *server) getConversation(w http.ResponseWriter, r *http.Request) {
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	info, err := conv.Info(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *server) renameConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	title, ok := decodeBody(s, w, r, decodeRename)
	if !ok {
		return
	}
	info, err := s.agent.RenameConversation(r.Context(), id, title)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *server) deleteConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	if err := s.agent.DeleteConversation(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) send(w http.ResponseWriter, r *http.Request) {
	onConversation(s, w, r, decodeSend, http.StatusAccepted, agentik.Conversation.Send)
}

// regenerate answers a user message again on a new branch (SPEC §18).
func (s *server) regenerate(w http.ResponseWriter, r *http.Request) {
	onConversation(s, w, r, decodeRegenerate, http.StatusAccepted, agentik.Conversation.Regenerate)
}

// setHead moves the head to another message (SPEC §18).
func (s *server) setHead(w http.ResponseWriter, r *http.Request) {
	onConversation(s, w, r, decodeHead, http.StatusOK, agentik.Conversation.SetHead)
}

// fork copies a path into a new conversation (SPEC §18).
func (s *server) fork(w http.ResponseWriter, r *http.Request) {
	onConversation(s, w, r, decodeFork, http.StatusCreated, agentik.Conversation.Fork)
}

// onConversation is a POST or PUT on the conversation of the path: its
// body decoded by decode, then call on the opened conversation, whose
// result is answered with status.
func onConversation[Req, Res any](s *server, w http.ResponseWriter, r *http.Request, decode func([]byte) (Req, error), status int,
	call func(agentik.Conversation, context.Context, Req) (Res, error)) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	req, ok := decodeBody(s, w, r, decode)
	if !ok {
		return
	}
	conv, err := s.agent.Conversation(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer conv.Close()
	res, err := call(conv, r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, status, res)
}

type interruptResult struct {
	Interrupted bool `json:"interrupted"`
}

func (s *server) interrupt(w http.ResponseWriter, r *http.Request) {
	// The endpoint takes no body; drain a small one so the connection can be
	// reused, and ignore it.
	io.CopyN(io.Discard, r.Body, 4096)
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	done, err := conv.Interrupt(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, interruptResult{done})
}

func (s *server) messages(w http.ResponseWriter, r *http.Request) {
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	req, err := parseMessagesQuery(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := conv.Messages(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if page.Messages == nil {
		page.Messages = []agentik.Message{}
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *server) conversationEvents(w http.ResponseWriter, r *http.Request) {
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	after, err := parseCursor(r.Header.Get("Last-Event-ID"), r.URL.Query())
	if err != nil {
		conv.Close()
		s.writeError(w, r, err)
		return
	}
	open := func(ctx context.Context) (agentik.Stream[agentik.Event], error) { return conv.Events(ctx, after) }
	release := func() { conv.Close() }
	streamRequest(s, w, r, open, release, func(e agentik.Event) (int64, string) { return e.Cursor, e.Type })
}

func (s *server) agentEvents(w http.ResponseWriter, r *http.Request) {
	after, err := parseCursor(r.Header.Get("Last-Event-ID"), r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	open := func(ctx context.Context) (agentik.Stream[agentik.AgentEvent], error) {
		return s.agent.Events(ctx, after)
	}
	streamRequest(s, w, r, open, nil, func(e agentik.AgentEvent) (int64, string) { return e.Cursor, e.Type })
}

// pathID is the conversation id in the request's path; an invalid one is
// answered with 400 and ok is false.
func (s *server) pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !agentik.ValidID(id) {
		s.writeError(w, r, errBadID(id))
		return "", false
	}
	return id, true
}

// decodeBody reads the request body within the limit and decodes it; on
// failure it has answered the request in the API's error format.
func decodeBody[T any](s *server, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (T, bool) {
	b, err := readBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		s.writeError(w, r, err)
		var zero T
		return zero, false
	}
	v, err := decode(b)
	if err != nil {
		s.writeError(w, r, err)
		return v, false
	}
	return v, true
}

// open validates the path id and opens the conversation handle; on failure it
// has answered the request.
func (s *server) open(w http.ResponseWriter, r *http.Request) (agentik.Conversation, bool) {
	id, ok := s.pathID(w, r)
	if !ok {
		return nil, false
	}
	conv, err := s.agent.Conversation(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return nil, false
	}
	return conv, true
}
