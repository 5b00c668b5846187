package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/agentik/agentik"
)

// searchBody is the answer of GET {p}/memory/search.
type searchBody struct {
	Hits []agentik.SearchHit `json:"hits"`
}

// memorySearch answers GET {p}/memory/search?q=&limit= (SPEC §19): the
// caller's own messages with this agent that hold every word of q, newest
// first.
func (s *server) memorySearch(w http.ResponseWriter, r *http.Request) {
	req, err := parseSearchQuery(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hits, err := s.opts.Recall.Search(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if hits == nil {
		hits = []agentik.SearchHit{} // [] on the wire, never null
	}
	writeJSON(w, http.StatusOK, searchBody{Hits: hits})
}

// parseSearchQuery reads ?q (required) and ?limit (1 to
// agentik.MaxSearchLimit; absent: the default). The query itself is
// checked by the search (agentik.ParseSearchQuery); errors are EInvalid.
func parseSearchQuery(q url.Values) (agentik.SearchRequest, error) {
	req := agentik.SearchRequest{Query: q.Get("q")}
	if req.Query == "" {
		return req, agentik.Errorf(agentik.EInvalid, "q, the words to search for, is required")
	}
	if _, err := agentik.ParseSearchQuery(req.Query); err != nil {
		return req, err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > agentik.MaxSearchLimit {
			return req, agentik.Errorf(agentik.EInvalid, "limit must be an integer between 1 and %d", agentik.MaxSearchLimit)
		}
		req.Limit = n
	}
	return req, nil
}
