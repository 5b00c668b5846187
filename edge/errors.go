package edge

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/agentik/agentik"
)

// Codes the edge answers with that are routing or transport answers, not
// errors of the core.
const (
	CodeMethodNotAllowed = "method_not_allowed" // HTTP 405
	CodeRequestTimeout   = "request_timeout"    // HTTP 408: the body did not arrive in time
)

// Status is the one place that maps the core's error codes to HTTP statuses:
// a code not in the table is a 500.
func Status(code string) int { return cmp.Or(statuses[code], http.StatusInternalServerError) }

// CodeOf is the client's inverse of Status, for an error response that
// carries no usable error body (a proxy's HTML page, say): it also knows
// the statuses only proxies answer with, and a status not in the table is
// internal.
func CodeOf(status int) string { return cmp.Or(codes[status], agentik.EInternal) }

var (
	statuses = map[string]int{
		agentik.EMalformed:      http.StatusBadRequest,
		agentik.EInvalid:        http.StatusUnprocessableEntity,
		agentik.EUnauthorized:   http.StatusUnauthorized,
		agentik.ENotFound:       http.StatusNotFound,
		agentik.EBusy:           http.StatusConflict,
		agentik.EConflict:       http.StatusConflict,
		agentik.ETooLarge:       http.StatusRequestEntityTooLarge,
		agentik.EUnsupportedMed: http.StatusUnsupportedMediaType,
		agentik.ERateLimited:    http.StatusTooManyRequests,
		agentik.EUnavailable:    http.StatusServiceUnavailable,
		CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
		CodeRequestTimeout:      http.StatusRequestTimeout,
	}
	codes = map[int]string{
		http.StatusBadRequest:            agentik.EMalformed,
		http.StatusUnprocessableEntity:   agentik.EInvalid,
		http.StatusUnauthorized:          agentik.EUnauthorized,
		http.StatusForbidden:             agentik.EUnauthorized,
		http.StatusNotFound:              agentik.ENotFound,
		http.StatusGone:                  agentik.ENotFound,
		http.StatusConflict:              agentik.EConflict,
		http.StatusRequestEntityTooLarge: agentik.ETooLarge,
		http.StatusUnsupportedMediaType:  agentik.EUnsupportedMed,
		http.StatusTooManyRequests:       agentik.ERateLimited,
		http.StatusServiceUnavailable:    agentik.EUnavailable,
		http.StatusBadGateway:            agentik.EUnavailable,
		http.StatusGatewayTimeout:        agentik.EUnavailable,
	}
)

// JSON-RPC error codes: the standard ones and those of the server-error
// range that A2A names (the same numbers in A2A 0.3 and 1.0).
const (
	RPCParseError              = -32700
	RPCInvalidRequest          = -32600
	RPCMethodNotFound          = -32601
	RPCInvalidParams           = -32602
	RPCInternalError           = -32603
	RPCNotFound                = -32001 // A2A TaskNotFoundError
	RPCUnsupportedOperation    = -32004
	RPCContentTypeNotSupported = -32005
	RPCUnauthenticated         = -31401 // A2A 1.0; 0.3 clients see only the HTTP 401
	RPCUnavailable             = RPCInternalError
)

// RPCCode is the one place that maps the core's error codes to JSON-RPC
// error codes.
func RPCCode(code string) int {
	switch code {
	case agentik.ENotFound:
		return RPCNotFound
	case agentik.EInvalid, agentik.EMalformed, agentik.ETooLarge, CodeRequestTimeout:
		return RPCInvalidParams
	case agentik.EUnsupportedMed:
		return RPCContentTypeNotSupported
	case agentik.EBusy, agentik.EConflict:
		return RPCUnsupportedOperation
	case agentik.EUnauthorized:
		return RPCUnauthenticated
	case CodeMethodNotAllowed:
		return RPCInvalidRequest
	}
	return RPCInternalError
}

// Public returns what a client may see of err: its code and user-safe
// message, or internal and a generic message for an internal error — the
// mapping of the formats that carry the core's codes as text (WebSocket
// ERROR, AG-UI RUN_ERROR). It never returns a detail meant for the operator.
func Public(err error) (code, message string) {
	code = agentik.ErrorCode(err)
	if code == agentik.EInternal {
		return agentik.EInternal, "internal error"
	}
	return code, agentik.ErrorMessage(err)
}

// Challenge is the WWW-Authenticate value of every 401.
const Challenge = `Bearer realm="agentik"`

// ErrorBody is the HTTP JSON form of every error response (WriteError), as
// clients read it too.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error of an ErrorBody: a core error code (or one of
// the edge's Code constants) and a message safe to show.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError answers err in the HTTP JSON form every HTTP facade uses: the
// status for its code, {"error":{"code","message"}}, WWW-Authenticate on
// 401, Retry-After when the error says when to retry, and a generic message
// for internal errors (the detail goes to log; nil means slog.Default()).
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if log == nil {
		log = slog.Default()
	}
	code := agentik.ErrorCode(err)
	status := Status(code)
	msg := agentik.ErrorMessage(err)
	if status == http.StatusInternalServerError {
		code, msg = agentik.EInternal, "internal error"
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		log.DebugContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	PrepareError(w, r, err)
	WriteJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}

// PrepareError sets the headers every error response of any format carries:
// WWW-Authenticate on 401 (Challenge, unless the route set its own) and
// Retry-After when err says when to retry.
func PrepareError(w http.ResponseWriter, r *http.Request, err error) {
	h := w.Header()
	if Status(agentik.ErrorCode(err)) == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", Challenge)
	}
	if d := agentik.RetryAfter(err); d > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	}
}

// WriteJSON answers v with the given status. v is marshalled before anything
// is written so that a marshalling failure can still become a clean 500.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("edge: encode response", "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
