package langgraph

import (
	"net/http"
	"reflect"

	"github.com/agentik/agentik"
)

// Assistant is an agent as the LangGraph API shows it.
type Assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
}

// epoch is the created_at of every assistant: agents come from the
// configuration, not from a database row with a date.
const epoch = "1970-01-01T00:00:00Z"

func assistantOf(a agentik.Agent) Assistant {
	info := a.Info()
	return Assistant{
		AssistantID: info.ID, GraphID: info.ID, Name: info.Name, Description: info.Description,
		Config: map[string]any{}, Context: map[string]any{},
		Metadata: map[string]any{"created_by": "agentik"}, Version: 1,
		CreatedAt: epoch, UpdatedAt: epoch,
	}
}

// agent returns the caller's agent whose id is id (assistant_id or
// graph_id), ENotFound otherwise.
func (h *Handler) agent(r *http.Request, id string) (agentik.Agent, error) {
	for _, a := range h.opts.Agents(r.Context()) {
		if a.Info().ID == id {
			return a, nil
		}
	}
	return nil, agentik.Errorf(agentik.ENotFound, "assistant %q not found", id)
}

type assistantSearch struct {
	GraphID  string         `json:"graph_id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
	Limit    int            `json:"limit"`
	Offset   int            `json:"offset"`
}

func (h *Handler) matchingAssistants(w http.ResponseWriter, r *http.Request) ([]Assistant, assistantSearch, error) {
	var q assistantSearch
	if err := h.decode(w, r, &q); err != nil {
		return nil, q, err
	}
	var out []Assistant
	for _, a := range h.opts.Agents(r.Context()) {
		as := assistantOf(a)
		if q.GraphID != "" && q.GraphID != as.GraphID || q.Name != "" && q.Name != as.Name {
			continue
		}
		if !metadataMatches(as.Metadata, q.Metadata) {
			continue
		}
		out = append(out, as)
	}
	return out, q, nil
}

func (h *Handler) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	out, q, err := h.matchingAssistants(w, r)
	if err != nil {
		return err
	}
	writeJSON(w, page(out, q.Offset, q.Limit))
	return nil
}

func (h *Handler) countAssistants(w http.ResponseWriter, r *http.Request) error {
	out, _, err := h.matchingAssistants(w, r)
	if err != nil {
		return err
	}
	writeJSON(w, len(out))
	return nil
}

func (h *Handler) getAssistant(w http.ResponseWriter, r *http.Request) error {
	a, err := h.agent(r, r.PathValue("aid"))
	if err != nil {
		return err
	}
	writeJSON(w, assistantOf(a))
	return nil
}

// assistantSchemas describes the state every assistant has: a list of
// messages.
func (h *Handler) assistantSchemas(w http.ResponseWriter, r *http.Request) error {
	a, err := h.agent(r, r.PathValue("aid"))
	if err != nil {
		return err
	}
	state := map[string]any{
		"type":       "object",
		"properties": map[string]any{"messages": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}},
	}
	writeJSON(w, map[string]any{
		"graph_id": a.Info().ID, "input_schema": state, "output_schema": state, "state_schema": state,
		"config_schema": map[string]any{"type": "object"}, "context_schema": map[string]any{"type": "object"},
	})
	return nil
}

// assistantGraph is the minimal graph of an agent: one node that answers.
func (h *Handler) assistantGraph(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.agent(r, r.PathValue("aid")); err != nil {
		return err
	}
	writeJSON(w, map[string]any{
		"nodes": []map[string]any{{"id": "__start__", "type": "schema"}, {"id": agentNode, "type": "runnable"}, {"id": "__end__", "type": "schema"}},
		"edges": []map[string]any{{"source": "__start__", "target": agentNode}, {"source": agentNode, "target": "__end__"}},
	})
	return nil
}

// agentNode is the name of the one node of every assistant's graph, as
// streams and checkpoints name it.
const agentNode = "agent"

// page is items[offset:offset+limit] (limit 10 when unset), never nil.
func page[T any](items []T, offset, limit int) []T {
	if limit <= 0 {
		limit = 10
	}
	offset = max(offset, 0)
	if offset >= len(items) {
		return []T{}
	}
	return items[offset:min(len(items), offset+limit)]
}

// metadataMatches reports whether have holds every key of want with an
// equal (scalar) value.
func metadataMatches(have, want map[string]any) bool {
	for k, v := range want {
		hv, ok := have[k]
		if !ok || !reflect.DeepEqual(hv, v) {
			return false
		}
	}
	return true
}
