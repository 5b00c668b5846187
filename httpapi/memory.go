package httpapi

import (
	"net/http"

	"github.com/agentik/agentik"
)

// The memory endpoints (SPEC §19), served when the options give the
// agent's Memory: the caller's blocks, each one read, changed (PUT) and
// given its configured value again (DELETE), its history, and forgetting
// the caller's memory (DELETE {p}/memory).

type memoryList struct {
	Scope  string                `json:"scope"`
	Blocks []agentik.MemoryBlock `json:"blocks"`
}

type memoryHistory struct {
	History []agentik.MemoryHistoryEntry `json:"history"`
	// Next is the before= of the next page; 0 on the last one.
	Next int64 `json:"next,omitempty"`
}

// DecodeMemoryValue decodes the body of PUT {p}/memory/blocks/{label}:
// {"value": "…"}; a value that is missing or not a string is EInvalid.
func DecodeMemoryValue(b []byte) (string, error) {
	var req struct {
		Value *string `json:"value"`
	}
	if err := decodeJSON(b, &req); err != nil {
		return "", err
	}
	if req.Value == nil {
		return "", agentik.Errorf(agentik.EInvalid, "value is required: the block's new text")
	}
	return *req.Value, nil
}

// memoryLabel reads the path's label; a label no block could have is not
// found, as an unknown one.
func (s *server) memoryLabel(w http.ResponseWriter, r *http.Request) (string, bool) {
	label := r.PathValue("label")
	if !agentik.ValidMemoryLabel(label) {
		s.writeError(w, r, agentik.Errorf(agentik.ENotFound, "no memory block labelled %q", truncate(label, 64)))
		return "", false
	}
	return label, true
}

func (s *server) listMemory(w http.ResponseWriter, r *http.Request) {
	blocks, err := s.opts.Memory.Blocks(r.Context(), agentik.PrincipalFrom(r.Context()))
	if blocks == nil {
		blocks = []agentik.MemoryBlock{}
	}
	s.answer(w, r, http.StatusOK, memoryList{s.opts.Memory.Scope(), blocks}, err)
}

func (s *server) getMemoryBlock(w http.ResponseWriter, r *http.Request) {
	if label, ok := s.memoryLabel(w, r); ok {
		b, err := s.opts.Memory.Block(r.Context(), agentik.PrincipalFrom(r.Context()), label)
		s.answer(w, r, http.StatusOK, b, err)
	}
}

func (s *server) putMemoryBlock(w http.ResponseWriter, r *http.Request) {
	label, ok := s.memoryLabel(w, r)
	if !ok {
		return
	}
	value, ok := decodeBody(s, w, r, DecodeMemoryValue)
	if !ok {
		return
	}
	b, err := s.opts.Memory.Set(r.Context(), agentik.PrincipalFrom(r.Context()), label, value)
	s.answer(w, r, http.StatusOK, b, err)
}

func (s *server) deleteMemoryBlock(w http.ResponseWriter, r *http.Request) {
	if label, ok := s.memoryLabel(w, r); ok {
		b, err := s.opts.Memory.Reset(r.Context(), agentik.PrincipalFrom(r.Context()), label)
		s.answer(w, r, http.StatusOK, b, err)
	}
}

func (s *server) memoryBlockHistory(w http.ResponseWriter, r *http.Request) {
	label, ok := s.memoryLabel(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, err := parseLimit(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	before, err := parseNonNegative(q, "before")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h, err := s.opts.Memory.History(r.Context(), agentik.PrincipalFrom(r.Context()), label, before, limit)
	if h == nil {
		h = []agentik.MemoryHistoryEntry{}
	}
	page := memoryHistory{History: h}
	if len(h) == limit {
		page.Next = h[len(h)-1].ID
	}
	s.answer(w, r, http.StatusOK, page, err)
}

func (s *server) forgetMemory(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, http.StatusNoContent, nil, s.opts.Memory.Forget(r.Context(), agentik.PrincipalFrom(r.Context())))
}
