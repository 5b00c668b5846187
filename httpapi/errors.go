package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// codeOf is the client's inverse of edge.Status, used only when an error
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

// errorBody is the wire form of every error response (written by
// edge.WriteError, read by the client).
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
	edge.WriteError(w, r, s.log, err)
}

// WriteError is edge.WriteError, kept for callers of this package.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	edge.WriteError(w, r, log, err)
}

// writeJSON answers v with the given status (edge.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, v any) { edge.WriteJSON(w, status, v) }
