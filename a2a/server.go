package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/internal/defaults"
)

// CardPath is where the agent card is served (A2A 0.3 and 1.0).
const CardPath = "/.well-known/agent-card.json"

// LegacyCardPath serves the card without its 1.0 interfaces, for clients
// that must speak 0.3 (see docs/a2a.md).
const LegacyCardPath = "/.well-known/agent.json"

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 16 << 20
	DefaultKeepAlive    = 15 * time.Second
)

// Skill is one skill advertised in the agent card.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	// InputModes and OutputModes override the card's defaults for this
	// skill; empty takes them.
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// Options configures the facade. The zero value is usable.
type Options struct {
	// Name, Description and Version of the card; empty takes the agent's Info.
	Name, Description, Version string
	// URL is the absolute public URL of the JSON-RPC endpoint written into
	// the card. Empty derives it from the address of the listener the card
	// request arrived on and Path — never from the request's Host header,
	// which any caller can set (the card would send other clients
	// elsewhere). Behind a proxy or under a DNS name, set URL.
	URL string
	// Path is the JSON-RPC endpoint path used when URL is empty ("/a2a").
	Path string
	// Skills of the card; empty advertises one general "chat" skill.
	Skills []Skill
	// Bearer declares HTTP bearer authentication in the card. The
	// authentication itself is done by whoever mounts the handler.
	Bearer bool
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// KeepAlive is the interval of SSE comments on idle streams; idle ticks
	// also re-check the task in the journal, so a dropped online event can
	// never leave a stream hanging.
	KeepAlive time.Duration
	// Logger receives failed requests; nil means slog.Default().
	Logger *slog.Logger
}

// Server is the A2A facade over one agentik.Agent: it serves the card and the
// JSON-RPC endpoint. It holds no state of its own — a task is a turn, read
// from the conversation's journal and events — so it is safe for concurrent
// use and survives restarts of the process. The principal of each request is
// taken from its context (agentik.WithPrincipal), set by the caller's
// authentication.
type Server struct {
	agent agentik.Agent
	opts  Options
	log   *slog.Logger
}

// NewServer returns the facade for agent.
func NewServer(agent agentik.Agent, opts Options) *Server {
	defaults.Positive(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&opts.KeepAlive, DefaultKeepAlive)
	defaults.String(&opts.Path, "/a2a")
	log := opts.Logger
	defaults.Logger(&log)
	return &Server{agent: agent, opts: opts, log: log}
}

// ---- agent card ----

type cardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type card struct {
	// 0.3 fields (a 1.0 client ignores them).
	ProtocolVersion    string `json:"protocolVersion"`
	URL                string `json:"url"`
	PreferredTransport string `json:"preferredTransport"`
	// 1.0 fields (a 0.3 client ignores them).
	SupportedInterfaces []cardInterface `json:"supportedInterfaces,omitempty"`
	// Common.
	Name               string                    `json:"name"`
	Description        string                    `json:"description"`
	Version            string                    `json:"version"`
	Capabilities       cardCapabilities          `json:"capabilities"`
	DefaultInputModes  []string                  `json:"defaultInputModes"`
	DefaultOutputModes []string                  `json:"defaultOutputModes"`
	Skills             []Skill                   `json:"skills"`
	SecuritySchemes    map[string]securityScheme `json:"securitySchemes,omitempty"`
	Security           []map[string][]string     `json:"security,omitempty"`
}

type cardCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

// securityScheme uses the JSON-Schema ("type") form: it is what 0.3 clients
// read and what @a2a-js/sdk 1.x expects, translating the proto form only as
// a fallback.
type securityScheme struct {
	Type         string `json:"type"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Description  string `json:"description,omitempty"`
}

// Card returns the agent card; endpoint is the absolute JSON-RPC URL.
// legacy leaves out the 1.0 interfaces so that a client able to speak both
// versions picks 0.3.
func (s *Server) card(endpoint string, legacy bool) card {
	info := s.agent.Info()
	c := card{
		ProtocolVersion:    "0.3.0",
		URL:                endpoint,
		PreferredTransport: "JSONRPC",
		Name:               firstNonEmpty(s.opts.Name, info.Name, "agentik"),
		Description:        firstNonEmpty(s.opts.Description, info.Description, "An Agentik agent"),
		Version:            firstNonEmpty(s.opts.Version, info.Version, "0.0.0"),
		Capabilities:       cardCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		// Answers carry images whenever a tool returns one (an MCP tool, a
		// remote agent, a client tool), whatever the model: say so.
		DefaultOutputModes: append([]string{"text/plain"}, agentik.ImageMIMEs...),
		Skills:             slices.Clone(s.opts.Skills),
	}
	if !legacy {
		c.SupportedInterfaces = []cardInterface{
			{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		}
	}
	if info.Capabilities.ImageInput {
		c.DefaultInputModes = append(c.DefaultInputModes, agentik.ImageMIMEs...)
	}
	if len(c.Skills) == 0 {
		c.Skills = []Skill{{ID: "chat", Name: "Chat", Description: c.Description + ". Answers requests in natural language and uses its tools.",
			Tags: []string{"chat"}}}
	}
	for i := range c.Skills {
		if c.Skills[i].Tags == nil {
			c.Skills[i].Tags = []string{}
		}
		if len(c.Skills[i].InputModes) == 0 {
			c.Skills[i].InputModes = c.DefaultInputModes
		}
		if len(c.Skills[i].OutputModes) == 0 {
			c.Skills[i].OutputModes = c.DefaultOutputModes
		}
	}
	if s.opts.Bearer {
		c.SecuritySchemes = map[string]securityScheme{"bearer": {Type: "http", Scheme: "bearer",
			Description: "Authorization: Bearer <token> (AGENTIK_AUTH_TOKENS)"}}
		c.Security = []map[string][]string{{"bearer": {}}}
	}
	return c
}

// CardHandler serves the card (public: it carries no secret). At
// LegacyCardPath it serves the 0.3-only variant.
func (s *Server) CardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoint := s.opts.URL
		if endpoint == "" {
			addr, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
			if !ok {
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]string{
					"code": agentik.EUnavailable, "message": "the card has no URL: set the public URL of the endpoint"}})
				return
			}
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			endpoint = scheme + "://" + addr.String() + s.opts.Path
		}
		w.Header().Set("Cache-Control", "no-cache")
		writeJSON(w, http.StatusOK, s.card(endpoint, r.URL.Path == LegacyCardPath))
	})
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// ---- JSON-RPC endpoint ----

// ServeHTTP serves the JSON-RPC endpoint (POST). Errors follow JSON-RPC:
// HTTP 200 with an error object, except for transport-level refusals (405,
// 413, 415) which still carry a JSON-RPC error body.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.writeError(w, http.StatusMethodNotAllowed, nullID, rpcErr(CodeInvalidRequest, "use POST"))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			s.writeError(w, http.StatusUnsupportedMediaType, nullID, rpcErr(CodeInvalidRequest, "Content-Type must be application/json"))
			return
		}
	}
	body, err := edge.ReadBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		// Refused before the request was read: a transport-level answer.
		s.Refuse(w, r, err)
		return
	}
	req, id, rerr := decodeRequest(body)
	if rerr != nil {
		s.writeError(w, http.StatusOK, id, rerr)
		return
	}
	ctx := r.Context()
	var result any
	switch req.op {
	case opSend:
		result, rerr = s.send(ctx, req)
	case opStream:
		s.stream(w, r, req)
		return
	case opSubscribe:
		s.subscribe(w, r, req)
		return
	case opGet:
		result, rerr = s.getTask(ctx, req)
	case opCancel:
		result, rerr = s.cancelTask(ctx, req)
	case opPush:
		rerr = rpcErr(CodePushNotSupported, "push notifications are not supported")
	case opCard:
		rerr = rpcErr(CodeExtendedCardNotAvailable, "there is no authenticated extended card")
	default: // ListTasks: not part of this facade
		rerr = rpcErr(CodeUnsupportedOperation, "%s is not supported", req.Method)
	}
	if rerr != nil {
		s.writeError(w, http.StatusOK, req.ID, rerr)
		return
	}
	writeJSON(w, http.StatusOK, response{JSONRPC: "2.0", ID: req.ID, Result: result})
}

// Refuse answers a request refused before it was read (by the HTTP edge:
// 401, 404 for an agent the caller may not use; or a body too large or too
// slow) with the HTTP status of err's code and a JSON-RPC error body: the
// request is not one the endpoint takes (-32600), or the caller is not
// authenticated (-31401).
func (s *Server) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	edge.PrepareError(w, r, err)
	e := coreErr(err)
	if e.Code != CodeUnauthenticated && e.Code != CodeInternalError {
		e.Code = CodeInvalidRequest
	}
	s.writeError(w, edge.Status(agentik.ErrorCode(err)), nullID, e)
}

func (s *Server) writeError(w http.ResponseWriter, status int, id json.RawMessage, e *Error) {
	if e.Code == CodeInternalError {
		s.log.Warn("a2a request failed", "code", e.Code, "message", e.Message)
	}
	writeJSON(w, status, response{JSONRPC: "2.0", ID: id, Error: e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// coreErr turns a core error into a JSON-RPC error: the code is
// edge.RPCCode's, the message the core's user-safe one.
func coreErr(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code, msg := edge.Public(err)
	switch code {
	case agentik.EInternal:
		return rpcErr(CodeInternalError, "internal error")
	case agentik.EUnavailable, agentik.ERateLimited:
		return rpcErr(CodeInternalError, "unavailable: %s", msg)
	}
	return rpcErr(edge.RPCCode(code), "%s", msg)
}
