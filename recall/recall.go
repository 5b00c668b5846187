// Package recall is a principal's search of their own past messages with
// one agent (SPEC §19): the conversation_search tool the model calls and
// what GET {p}/memory/search answers, over the store's full-text index
// (agentik.MessageSearcher) and, when an embeddings endpoint is
// configured, by meaning too.
//
// Main guarantee: a search acts for the principal in its context
// (agentik.PrincipalFrom: the conversation's owner for a tool call, the
// authenticated caller for the API) and finds nothing of anyone else.
package recall

import (
	"context"
	"log/slog"
	"slices"

	"github.com/agentik/agentik"
)

// DefaultMinSimilarity is the least cosine similarity between a query and
// a message for a search by meaning to find it.
const DefaultMinSimilarity = 0.3

// rrfK is the constant of reciprocal-rank fusion: a hit at rank i (from
// 0) of a list scores 1/(rrfK+i+1) there.
const rrfK = 60

var _ agentik.Recall = (*Recall)(nil)

// Recall searches one agent's conversations. Safe for concurrent use.
type Recall struct {
	text agentik.MessageSearcher
	// By meaning: nil vecs when no embeddings endpoint is configured.
	vecs agentik.MessageEmbeddings
	emb  *Embedder
	log  *slog.Logger
}

// New returns the full-text search of the agent whose store view text is.
func New(text agentik.MessageSearcher) *Recall {
	return &Recall{text: text}
}

// NewSemantic returns the search of the agent whose store view is store,
// by words and by meaning through emb: the vectors the Indexer of store
// and emb writes. log hears of searches that fell back to words alone.
func NewSemantic(store interface {
	agentik.MessageSearcher
	agentik.MessageEmbeddings
}, emb *Embedder, log *slog.Logger) *Recall {
	return &Recall{text: store, vecs: store, emb: emb, log: log}
}

// Search implements agentik.Recall: the messages of the principal in ctx
// that hold every word of the query, newest first; with embeddings, merged
// by reciprocal-rank fusion with the messages nearest to the query in
// meaning (at least DefaultMinSimilarity, among the principal's newest
// agentik.MaxScanVectors embedded ones). When the query cannot be
// embedded, the search answers by words alone and logs why.
func (r *Recall) Search(ctx context.Context, req agentik.SearchRequest) ([]agentik.SearchHit, error) {
	q, err := agentik.ParseSearchQuery(req.Query)
	if err != nil {
		return nil, err
	}
	limit, err := agentik.SearchLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	owner := agentik.PrincipalFrom(ctx)
	words, err := r.text.SearchMessages(ctx, owner, q, limit)
	if err != nil || r.vecs == nil {
		return words, err
	}
	vec, err := r.emb.Embed(ctx, []string{req.Query}, 1, QueryEmbedTimeout)
	if err != nil {
		r.log.Warn("semantic recall: the query could not be embedded; searching by words alone", "error", err)
		return words, nil
	}
	near, err := r.vecs.NearestMessages(ctx, owner, agentik.VectorQuery{
		Model: r.emb.Model(), Vector: vec[0], MinSimilarity: DefaultMinSimilarity, Limit: limit})
	if err != nil {
		return nil, err
	}
	return fuse(words, near, limit), nil
}

// fuse merges two ranked lists of hits by reciprocal-rank fusion: the
// best limit by the sum of their scores in each list, ties newest first.
// A message in both keeps the snippet of the first list.
func fuse(a, b []agentik.SearchHit, limit int) []agentik.SearchHit {
	type key struct {
		conv string
		seq  int64
	}
	type scored struct {
		hit   agentik.SearchHit
		score float64
	}
	var out []*scored
	byKey := map[key]*scored{}
	for _, list := range [][]agentik.SearchHit{a, b} {
		for i, h := range list {
			k := key{h.ConversationID, h.Seq}
			s := byKey[k]
			if s == nil {
				s = &scored{hit: h}
				byKey[k] = s
				out = append(out, s)
			}
			s.score += 1 / float64(rrfK+i+1)
		}
	}
	slices.SortStableFunc(out, func(x, y *scored) int {
		switch {
		case x.score != y.score:
			return cmpDesc(x.score, y.score)
		default:
			return y.hit.Date.Compare(x.hit.Date.Time)
		}
	})
	hits := make([]agentik.SearchHit, 0, min(limit, len(out)))
	for _, s := range out[:min(limit, len(out))] {
		hits = append(hits, s.hit)
	}
	return hits
}

func cmpDesc(x, y float64) int {
	if x > y {
		return -1
	}
	return 1
}
