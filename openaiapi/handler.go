package openaiapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/defaults"
)

// DefaultPath is where the door answers for every agent of the process.
const DefaultPath = "/v1"

// ConversationHeader names the conversation a Chat Completions request
// continues, and the one it went to in the response.
const ConversationHeader = "X-Agentik-Conversation-Id"

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 16 << 20
	DefaultMaxMessages  = 2048
	DefaultKeepAlive    = 15 * time.Second
	DefaultIndexSize    = 100_000
)

// Channel is the origin channel of the messages this door stores.
const Channel = "openai"

// A Model is an agent offered as a model: its id is the model name.
type Model struct {
	ID    string
	Agent agentik.Agent
}

// Options configure a Handler. Models is required.
type Options struct {
	// Models returns the agents the request's caller may use, as models.
	// A handler of one agent returns that one.
	Models func(ctx context.Context) []Model
	// Single makes every request go to the one model Models returns,
	// whatever its model field says (the door of one agent, under
	// /agents/{id}/v1).
	Single bool
	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int64
	// MaxMessages bounds the messages of a resent Chat Completions history.
	MaxMessages int
	// IfBusy is the busy policy of a request's message when its
	// conversation has a turn running; "" is enqueue.
	IfBusy string
	// KeepAlive is the interval of SSE comments on a silent stream.
	KeepAlive time.Duration
	// IndexSize bounds the histories the Chat Completions index keeps.
	IndexSize int
	// Logger receives failed requests; nil means slog.Default().
	Logger *slog.Logger
}

// Handler serves the OpenAI-compatible API. Safe for concurrent use.
type Handler struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	created int64
	index   *index

	mu    sync.Mutex
	convs map[string]*convLock
}

// NewHandler returns the door's handler; mount it under a path with Mount
// (or serve it with the path stripped).
func NewHandler(opts Options) *Handler {
	defaults.Positive(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&opts.MaxMessages, DefaultMaxMessages)
	defaults.Positive(&opts.KeepAlive, DefaultKeepAlive)
	defaults.Positive(&opts.IndexSize, DefaultIndexSize)
	h := &Handler{opts: opts, log: opts.Logger, created: time.Now().Unix(), index: newIndex(opts.IndexSize), convs: map[string]*convLock{}}
	defaults.Logger(&h.log)
	m := http.NewServeMux()
	m.HandleFunc("GET /models", h.listModels)
	m.HandleFunc("GET /models/{model}", h.getModel)
	m.HandleFunc("POST /chat/completions", h.chat)
	m.HandleFunc("POST /responses", h.createResponse)
	m.HandleFunc("GET /responses/{id}", h.getResponse)
	m.HandleFunc("DELETE /responses/{id}", h.deleteResponse)
	m.HandleFunc("POST /responses/{id}/cancel", h.cancelResponse)
	m.HandleFunc("GET /responses/{id}/input_items", h.listInputItems)
	m.HandleFunc("POST /conversations", h.createConversation)
	m.HandleFunc("GET /conversations/{id}", h.getConversation)
	m.HandleFunc("POST /conversations/{id}", h.updateConversation)
	m.HandleFunc("DELETE /conversations/{id}", h.deleteConversation)
	m.HandleFunc("GET /conversations/{id}/items", h.listItems)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, agentik.Errorf(agentik.ENotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	h.mux = m
	return h
}

// ServeHTTP serves a request whose path is relative to the door's (the
// prefix stripped: /models, /chat/completions, …).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Mount registers h at path on mux (every method: the door answers
// unknown routes in its own error shape), wrapped by wrap (the edge's
// guard; nil for none).
func Mount(mux *http.ServeMux, path string, h *Handler, wrap func(http.Handler) http.Handler) {
	defaults.String(&path, DefaultPath)
	path = "/" + strings.Trim(path, "/")
	var next http.Handler = http.StripPrefix(path, h)
	if wrap != nil {
		next = wrap(next)
	}
	mux.Handle(path+"/", next)
}

// Refuse writes an edge refusal in OpenAI's shape (edge.Route.Refuse).
func Refuse(w http.ResponseWriter, r *http.Request, err error) { edge.WriteOpenAIError(w, r, nil, err) }

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	edge.WriteOpenAIError(w, r, h.log, err)
}

// model returns the agent a request names (the only one of a Single
// handler): an unknown model, or one the caller may not use, is 404
// model_not_found.
func (h *Handler) model(ctx context.Context, name string) (Model, error) {
	models := h.opts.Models(ctx)
	if h.opts.Single && len(models) > 0 {
		return models[0], nil
	}
	if name == "" {
		return Model{}, param(agentik.EInvalid, "model", "model: required (an agent id; GET /v1/models lists them)")
	}
	for _, m := range models {
		if m.ID == name {
			return m, nil
		}
	}
	return Model{}, edge.OpenAIParam(agentik.Errorf(agentik.ENotFound, "the model %q does not exist or you do not have access to it", name), "model", "model_not_found")
}

// modelOrFirst is the model name names, or without a name the first
// the caller may use (the default agent): the Conversations API names no
// model.
func (h *Handler) modelOrFirst(ctx context.Context, name string) (Model, error) {
	if models := h.opts.Models(ctx); name == "" && len(models) > 0 {
		return models[0], nil
	}
	return h.model(ctx, name)
}

// modelObject is one model of GET /v1/models.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	list := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: []modelObject{}}
	for _, m := range h.opts.Models(r.Context()) {
		list.Data = append(list.Data, h.modelObject(m))
	}
	edge.WriteJSON(w, http.StatusOK, list)
}

func (h *Handler) getModel(w http.ResponseWriter, r *http.Request) {
	m, err := h.model(r.Context(), r.PathValue("model"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, h.modelObject(m))
}

func (h *Handler) modelObject(m Model) modelObject {
	return modelObject{ID: m.ID, Object: "model", Created: h.created, OwnedBy: "agentik"}
}

// convLock serialises the requests of one conversation in this process
// from reading its journal to the send, so that two requests resending
// the same history store its new message once.
type convLock struct {
	mu   sync.Mutex
	refs int
}

// lock takes the lock of key; unlock, called once, releases it.
func (h *Handler) lock(key string) (unlock func()) {
	h.mu.Lock()
	l := h.convs[key]
	if l == nil {
		l = &convLock{}
		h.convs[key] = l
	}
	l.refs++
	h.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		h.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(h.convs, key)
		}
		h.mu.Unlock()
	}
}

// findConversation returns the caller's conversation id among the models
// (the first that has it), with its model: 404 when none has it.
func (h *Handler) findConversation(ctx context.Context, id string) (Model, agentik.Conversation, error) {
	if !agentik.ValidID(id) {
		return Model{}, nil, agentik.Errorf(agentik.ENotFound, "no such conversation")
	}
	for _, m := range h.opts.Models(ctx) {
		conv, err := m.Agent.Conversation(ctx, id)
		if err == nil {
			return m, conv, nil
		}
		if !agentik.IsNotFound(err) {
			return Model{}, nil, err
		}
	}
	return Model{}, nil, agentik.Errorf(agentik.ENotFound, "no such conversation")
}

// readJournal returns conv's whole journal and the cursor to subscribe
// from to miss nothing after it.
func readJournal(ctx context.Context, conv agentik.Conversation) ([]agentik.Message, int64, error) {
	return readBranch(ctx, conv, agentik.BranchHead)
}

// readBranch is readJournal of branch: the head path (BranchHead) or
// every message of the tree (BranchAll).
func readBranch(ctx context.Context, conv agentik.Conversation, branch string) ([]agentik.Message, int64, error) {
	var journal []agentik.Message
	var cursor int64 = -1
	var after int64
	for {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{After: after, Limit: agentik.MaxMessagesLimit, Branch: branch})
		if err != nil {
			return nil, 0, err
		}
		if cursor < 0 {
			cursor = page.Cursor
		}
		journal = append(journal, page.Messages...)
		if !page.HasMore || len(page.Messages) == 0 {
			return journal, cursor, nil
		}
		after = page.Messages[len(page.Messages)-1].Seq
	}
}

// readBody reads a JSON request body within the door's limit.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return edge.ReadJSON(w, r, h.opts.MaxBodyBytes)
}

// origin is the context every message of this door carries.
func origin(meta map[string]string) *agentik.MessageContext {
	return &agentik.MessageContext{Origin: &agentik.Origin{Channel: Channel}, Metadata: meta}
}
