package httpapi

import (
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/agentik/agentik"
)

// statusOf is the one place that maps the core's error codes to HTTP statuses.
func statusOf(code string) int {
	switch code {
	case agentik.EMalformed:
		return http.StatusBadRequest
	case agentik.EInvalid:
		return http.StatusUnprocessableEntity
	case agentik.EUnauthorized:
		return http.StatusUnauthorized
	case agentik.ENotFound:
		return http.StatusNotFound
	case agentik.EBusy, agentik.EConflict:
		return http.StatusConflict
	case agentik.ETooLarge:
		return http.StatusRequestEntityTooLarge
	case agentik.EUnsupportedMed:
		return http.StatusUnsupportedMediaType
	case agentik.ERateLimited:
		return http.StatusTooManyRequests
	case agentik.EUnavailable:
		return http.StatusServiceUnavailable
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// codeMethodNotAllowed is the code of a 405 (a routing answer, not a core error).
const codeMethodNotAllowed = "method_not_allowed"

// codeOf is the client's inverse of statusOf, used only when an error
// response carries no usable error body (a proxy's HTML page, say).
func codeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return agentik.EMalformed
	case http.StatusUnprocessableEntity:
		return agentik.EInvalid
	case http.StatusUnauthorized, http.StatusForbidden:
		return agentik.EUnauthorized
	case http.StatusNotFound, http.StatusGone:
		return agentik.ENotFound
	case http.StatusConflict:
		return agentik.EConflict
	case http.StatusRequestEntityTooLarge:
		return agentik.ETooLarge
	case http.StatusUnsupportedMediaType:
		return agentik.EUnsupportedMed
	case http.StatusTooManyRequests:
		return agentik.ERateLimited
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return agentik.EUnavailable
	default:
		return agentik.EInternal
	}
}

// errorBody is the wire form of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError answers err as an error body. Internal errors get a generic
// message; their detail is logged for the operator.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, s.log, err)
}

// WriteError answers err the way every HTTP facade of Agentik does: the
// status for its code, {"error":{"code","message"}}, WWW-Authenticate on
// 401, Retry-After when the error says when to retry, and a generic message
// for internal errors (the detail goes to log).
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := agentik.ErrorCode(err)
	status := statusOf(code)
	msg := agentik.ErrorMessage(err)
	if status == http.StatusInternalServerError {
		code, msg = agentik.EInternal, "internal error"
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		log.DebugContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentik"`)
	}
	if d := agentik.RetryAfter(err); d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// writeJSON answers v with the given status. v is marshalled before anything
// is written so that a marshalling failure can still become a clean 500.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("httpapi: encode response", "err", err)
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
