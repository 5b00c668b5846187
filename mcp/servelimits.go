package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// This file holds what the facade checks before the SDK sees a request: its
// body, under the rules every endpoint of the project keeps, and the
// sessions a principal may open.

// Defaults of ServeOptions' session limits. A session costs about 7.5 KiB
// and lives until it is closed or idle for SessionTimeout.
const (
	DefaultMaxSessions             = 4096
	DefaultMaxSessionsPerPrincipal = 64
	DefaultSessionsPerMinute       = 120
	DefaultSessionBurst            = 10
)

// readBody reads a POST's body for the SDK: application/json, at most
// MaxBodyBytes, within the edge's body timeout (edge.ReadJSON), and refused
// when agentik.CheckJSON refuses it. The SDK would decode anything it is
// given: one array of 1.9 million zeros, 3.8 MB, cost it 747 MiB.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := edge.ReadJSON(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	if err := agentik.CheckJSON(b); err != nil {
		return nil, err
	}
	return b, nil
}

// nullID is the id of a refusal of a request whose id is unknown.
var nullID = json.RawMessage("null")

// rpcResponse is a JSON-RPC error response, MCP's wire form of a refusal.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// refuse answers a request the facade turns away before the SDK reads it:
// the HTTP status of err's code (edge.Status), the headers every refusal of
// the project carries (Retry-After), and a JSON-RPC error response to id
// with the core's user-safe message, which the SDK's client surfaces. A
// body that is not JSON this server takes is a parse error (-32700); one
// too large, too slow or of another type is not a request it takes
// (-32600); the other codes are edge.RPCCode's.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, id json.RawMessage, err error) {
	code, msg := edge.Public(err)
	rpc := edge.RPCCode(code)
	switch code {
	case agentik.EMalformed:
		rpc = edge.RPCParseError
	case agentik.ETooLarge, agentik.EUnsupportedMed, edge.CodeRequestTimeout:
		rpc = edge.RPCInvalidRequest
	case agentik.EInternal:
		h.log.ErrorContext(r.Context(), "mcp request failed", "err", err)
	}
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Error: rpcError{Code: rpc, Message: msg}})
	edge.PrepareError(w, r, err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(edge.Status(code))
	w.Write(append(b, '\n'))
}

// requestID is the id of a JSON-RPC request body, or null when it has none
// that a response may echo (a notification, a batch, an id of another type).
func requestID(body []byte) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return nullID
	}
	var id any
	if json.Unmarshal(req.ID, &id) != nil {
		return nullID
	}
	switch id.(type) {
	case string, float64:
		return req.ID
	}
	return nullID
}

// opensSession reports whether the SDK opens a session for r: a POST
// without Mcp-Session-Id at a previous revision. It keeps the session when
// the body is an initialize and closes it at the end of the request
// otherwise.
func opensSession(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
}

// admit reserves room for the session that a request opens, within the
// principal's cap, the server's cap and the principal's rate. A session
// counts from its reservation until it is closed; the reservation is
// released by the returned func (safe to call more than once) once the
// session is among the SDK's, that is, when the answer starts. Requests
// that open sessions at the same time may each count theirs twice for that
// moment: the caps may refuse early under a burst, never late. Errors are
// ERateLimited (429) past the principal's cap or rate, EUnavailable (503)
// past the server's.
func (h *Handler) admit(f *front) (release func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	mine, all := f.held(), 0
	for _, g := range h.fronts {
		all += g.held()
	}
	switch {
	case mine >= h.opts.MaxSessionsPerPrincipal:
		return nil, agentik.Errorf(agentik.ERateLimited, "too many open MCP sessions (%d): close one (DELETE with its Mcp-Session-Id) or let one expire; protocol revision %s needs none", mine, ProtocolCurrent)
	case all >= h.opts.MaxSessions:
		return nil, &agentik.Error{Code: agentik.EUnavailable, RetryAfter: time.Minute,
			Message: fmt.Sprintf("the server holds as many MCP sessions as it may; try again later, or use protocol revision %s, which needs none", ProtocolCurrent)}
	}
	if wait := f.rate.take(h.opts.now(), float64(h.opts.SessionsPerMinute)/60, h.opts.SessionBurst); wait > 0 {
		return nil, &agentik.Error{Code: agentik.ERateLimited, RetryAfter: wait,
			Message: fmt.Sprintf("MCP sessions are opened too fast (at most %d a minute); try again in %s", h.opts.SessionsPerMinute, wait.Round(time.Second))}
	}
	f.opening++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			f.opening--
			h.mu.Unlock()
		})
	}, nil
}

// held is how many sessions f holds or is opening. h.mu is held. Sessions
// of the current revision live as long as their request and have no id.
func (f *front) held() int {
	n := f.opening
	for ss := range f.server.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// bucket is a token bucket: it holds up to burst tokens and gains rate a
// second. Not safe for concurrent use.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes a token at now, or says how long until one is there.
func (b *bucket) take(now time.Time, rate float64, burst int) time.Duration {
	if b.last.IsZero() {
		b.tokens, b.last = float64(burst), now
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens, b.last = min(float64(burst), b.tokens+d.Seconds()*rate), now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// opening is the ResponseWriter of a request that opens a session: the
// session is among the SDK's before the answer starts, so the reservation
// is released then (a client that opens sessions one after another never
// sees its previous one counted twice).
type opening struct {
	http.ResponseWriter
	release func()
}

func (o *opening) WriteHeader(status int) {
	o.release()
	o.ResponseWriter.WriteHeader(status)
}

func (o *opening) Write(b []byte) (int, error) {
	o.release()
	return o.ResponseWriter.Write(b)
}

func (o *opening) Flush() {
	o.release()
	http.NewResponseController(o.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (the SDK sets
// write deadlines and flushes through it).
func (o *opening) Unwrap() http.ResponseWriter { return o.ResponseWriter }
