package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/agentik/agentik/edge"
)

// codeOf is edge.CodeOf, the client's inverse of edge.Status, used only
// when an error response carries no usable error body.
func codeOf(status int) string { return edge.CodeOf(status) }

// errorBody is the wire form of every error response (written by
// edge.WriteError, read by the client).
type errorBody = edge.ErrorBody

type errorDetail = edge.ErrorDetail

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
