package langgraph

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/agentik/agentik"
)

// The store API (/store/…) is the caller's memory blocks (SPEC §19) of the
// door's agent (at /langgraph: the first assistant the caller may use,
// the default agent when it may): one namespace, ["memory"], whose items
// are the blocks, key = label and value = {"value": the block's text}.
// The blocks are those the agent's configuration declares: an item cannot
// be made with a new key, and deleting one resets it to its configured
// value (docs/langgraph.md).

// memoryNamespace is the one namespace of the store.
const memoryNamespace = "memory"

// Item is a memory block as the store API shows it.
type Item struct {
	Namespace []string          `json:"namespace"`
	Key       string            `json:"key"`
	Value     map[string]string `json:"value"`
	CreatedAt string            `json:"created_at"`
	UpdatedAt string            `json:"updated_at"`
}

func itemOf(b agentik.MemoryBlock) Item {
	it := Item{Namespace: []string{memoryNamespace}, Key: b.Label, Value: map[string]string{"value": b.Value},
		CreatedAt: epoch, UpdatedAt: epoch}
	if !b.UpdatedAt.IsZero() {
		it.UpdatedAt = b.UpdatedAt.String()
	}
	return it
}

// memory is the memory the store API serves the caller: ENotFound, with
// a detail that says why, when the agent keeps none.
func (h *Handler) memory(r *http.Request) (agentik.Memory, error) {
	as := h.opts.Agents(r.Context())
	if len(as) == 0 {
		return nil, agentik.Errorf(agentik.ENotFound, "no assistant here: the store API is an assistant's memory blocks")
	}
	id := as[0].Info().ID
	var m agentik.Memory
	if h.opts.Memory != nil {
		m = h.opts.Memory(id)
	}
	if m == nil {
		return nil, agentik.Errorf(agentik.ENotFound, "memory is off for assistant %q: the store API maps to its memory blocks (docs/memory.md, docs/langgraph.md)", id)
	}
	return m, nil
}

// inMemory checks a namespace: the store has ["memory"] alone.
func inMemory(ns []string) error {
	if len(ns) == 1 && ns[0] == memoryNamespace {
		return nil
	}
	b, _ := json.Marshal(ns)
	return agentik.Errorf(agentik.ENotFound, "namespace %s not found: the store's one namespace is [\"memory\"], whose items are the memory blocks", b)
}

type putItemRequest struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Index     json.RawMessage `json:"index"`
	TTL       *float64        `json:"ttl"`
}

// blockText is the text of an item's value: {"value": text} alone.
func blockText(raw json.RawMessage) (string, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return "", agentik.Errorf(agentik.EInvalid, `value: an object {"value": text} (a memory block holds text)`)
	}
	var s string
	if err := json.Unmarshal(v["value"], &s); err != nil || len(v) != 1 {
		return "", agentik.Errorf(agentik.EInvalid, `value: exactly {"value": text}: a memory block holds text, not other JSON`)
	}
	return s, nil
}

func (h *Handler) putItem(w http.ResponseWriter, r *http.Request) error {
	m, err := h.memory(r)
	if err != nil {
		return err
	}
	var q putItemRequest
	if err := h.decode(w, r, &q); err != nil {
		return err
	}
	if err := inMemory(q.Namespace); err != nil {
		return agentik.Errorf(agentik.EInvalid, "%s", agentik.ErrorMessage(err))
	}
	if q.TTL != nil {
		return agentik.Errorf(agentik.EInvalid, "ttl is not supported: memory blocks do not expire")
	}
	text, err := blockText(q.Value)
	if err != nil {
		return err
	}
	if _, err := m.Set(r.Context(), agentik.PrincipalFrom(r.Context()), q.Key, text); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) getItem(w http.ResponseWriter, r *http.Request) error {
	m, err := h.memory(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := inMemory(strings.Split(q.Get("namespace"), ".")); err != nil {
		return err
	}
	b, err := m.Block(r.Context(), agentik.PrincipalFrom(r.Context()), q.Get("key"))
	if err != nil {
		return err
	}
	writeJSON(w, itemOf(b))
	return nil
}

func (h *Handler) deleteItem(w http.ResponseWriter, r *http.Request) error {
	m, err := h.memory(r)
	if err != nil {
		return err
	}
	var q putItemRequest
	if err := h.decode(w, r, &q); err != nil {
		return err
	}
	if err := inMemory(q.Namespace); err != nil {
		return err
	}
	if _, err := m.Reset(r.Context(), agentik.PrincipalFrom(r.Context()), q.Key); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type searchItemsRequest struct {
	NamespacePrefix []string       `json:"namespace_prefix"`
	Filter          map[string]any `json:"filter"`
	Limit           *int           `json:"limit"`
	Offset          int            `json:"offset"`
	Query           string         `json:"query"`
}

// matches reports whether b is an item the search asks for: its value
// equals every filter's, and its label or text holds every word of the
// query (case-insensitive).
func (q *searchItemsRequest) matches(b agentik.MemoryBlock) bool {
	for k, v := range q.Filter {
		if k != "value" || v != any(b.Value) {
			return false
		}
	}
	hay := strings.ToLower(b.Label + "\n" + b.Value)
	for _, w := range strings.Fields(strings.ToLower(q.Query)) {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

func (h *Handler) searchItems(w http.ResponseWriter, r *http.Request) error {
	m, err := h.memory(r)
	if err != nil {
		return err
	}
	var q searchItemsRequest
	if err := h.decode(w, r, &q); err != nil {
		return err
	}
	limit := 10
	if q.Limit != nil {
		limit = *q.Limit
	}
	if limit < 0 || q.Offset < 0 {
		return agentik.Errorf(agentik.EInvalid, "limit and offset must not be negative")
	}
	items := []Item{}
	if len(q.NamespacePrefix) == 0 || inMemory(q.NamespacePrefix) == nil {
		blocks, err := m.Blocks(r.Context(), agentik.PrincipalFrom(r.Context()))
		if err != nil {
			return err
		}
		for _, b := range blocks {
			if q.matches(b) {
				items = append(items, itemOf(b))
			}
		}
	}
	writeJSON(w, map[string][]Item{"items": page(items, q.Offset, limit)})
	return nil
}

type namespacesRequest struct {
	Prefix   []string `json:"prefix"`
	Suffix   []string `json:"suffix"`
	MaxDepth *int     `json:"max_depth"`
	Limit    *int     `json:"limit"`
	Offset   int      `json:"offset"`
}

func (h *Handler) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.memory(r); err != nil {
		return err
	}
	var q namespacesRequest
	if err := h.decode(w, r, &q); err != nil {
		return err
	}
	ns := []string{memoryNamespace}
	out := [][]string{}
	fits := func(part []string) bool { return len(part) == 0 || slices.Equal(part, ns) }
	if fits(q.Prefix) && fits(q.Suffix) && (q.MaxDepth == nil || *q.MaxDepth >= 1) {
		out = append(out, ns)
	}
	limit := 100
	if q.Limit != nil {
		limit = *q.Limit
	}
	writeJSON(w, map[string][][]string{"namespaces": page(out, q.Offset, limit)})
	return nil
}
