package httpapi

import (
	"context"
	"net/http"

	"github.com/agentik/agentik"
)

// The conversation's shared state (SPEC §19, docs/state.md): the JSON
// object itself is the body of every answer, and of a PUT; a PATCH is an
// RFC 6902 patch. A state over agentik.MaxSharedState is 413, one that is
// no object or a patch that does not apply 422; nothing changes then.

func (s *server) getState(w http.ResponseWriter, r *http.Request) {
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	st, err := conv.SharedState(r.Context())
	s.writeState(w, r, st, err)
}

func (s *server) putState(w http.ResponseWriter, r *http.Request) {
	s.changeState(w, r, decodeState, agentik.StateSharer.PutSharedState)
}

func (s *server) patchState(w http.ResponseWriter, r *http.Request) {
	s.changeState(w, r, decodeStatePatch, agentik.StateSharer.PatchSharedState)
}

// changeState decodes the body, then opens the conversation (a bad body
// is refused whoever's conversation it names) and changes its state.
func (s *server) changeState(w http.ResponseWriter, r *http.Request, decode func([]byte) (agentik.RawJSON, error),
	change func(agentik.StateSharer, context.Context, agentik.RawJSON) (agentik.RawJSON, error)) {
	if _, ok := s.pathID(w, r); !ok {
		return
	}
	body, ok := decodeBody(s, w, r, decode)
	if !ok {
		return
	}
	conv, ok := s.open(w, r)
	if !ok {
		return
	}
	defer conv.Close()
	st, err := change(conv, r.Context(), body)
	s.writeState(w, r, st, err)
}

func (s *server) writeState(w http.ResponseWriter, r *http.Request, st agentik.RawJSON, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}
