package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var _ agentik.MessageSearcher = (*Store)(nil)

// qSearch finds the newest $5 messages of the owner's scope $2 (the
// owner's token, migrations/0014) that match $1 (every word of the query
// and the scope token: searchQuery), checks the owner
// and agent of each on its conversation, and reads their payloads. The
// planner chooses between two walks from what its statistics say of the
// words: for a rare word the GIN index (the words and the scope token
// with weight A, so a word another principal wrote many times costs
// nothing), then a sort of the few matches; for a word in many of the
// owner's messages the btree index of the scope's messages newest first,
// stopping at the limit. It can only choose with the words in hand, so the
// query is planned at every call (QueryExecModeExec: no cached generic
// plan). A parsed query has a word at least (agentik.ParseSearchQuery),
// so no query matches every message of the scope.
const qSearch = `SELECT m.conversation_id, m.seq, m.type, m.date, m.payload
	FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id
	WHERE m.search @@ CAST($1::text AS tsquery)
		AND m.search IS NOT NULL AND m.search_scope = $2
		AND c.owner = $3 AND c.agent_id = $4
	ORDER BY m.date DESC, m.conversation_id DESC, m.seq DESC LIMIT $5`

// SearchMessages implements agentik.MessageSearcher.
func (s *Store) SearchMessages(ctx context.Context, owner string, q agentik.SearchQuery, limit int) ([]agentik.SearchHit, error) {
	hits := []agentik.SearchHit{}
	if len(q.Terms) == 0 || limit <= 0 {
		return hits, nil
	}
	scope := storeutil.SearchScope(owner)
	err := s.read(ctx, "search messages", func(qr querier) error {
		return queryEach(ctx, qr, func(row pgx.Rows) error {
			var conv, typ, payload string
			var seq int64
			var date time.Time
			if err := row.Scan(&conv, &seq, &typ, &date, &payload); err != nil {
				return err
			}
			h, err := storeutil.SearchHit(conv, seq, typ, agentik.TimeOf(date), payload, q)
			hits = append(hits, h)
			return err
		}, qSearch, pgx.QueryExecModeExec, searchQuery(scope, q), scope, owner, s.agent, limit)
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// The bounds of a tsvector: a lexeme is shorter than 2 KiB, all of them
// together shorter than 1 MiB.
const (
	maxLexemeBytes = 2046
	maxVectorBytes = 1 << 19 // half the bound, counted as lexemeBytes
)

// searchVector is the search vector of a message's text filed under
// scope (storeutil.SearchScope): the scope token at position 1 with
// weight A, and every distinct word of text (agentik.SearchWords,
// lowercased) at position 2, sorted and unique as the database keeps
// them. It is made here, not by to_tsvector, so that the database parses
// nothing on the commit's path (it reads the binary form), and so that a
// message's words are exactly what a query's terms can be (searchQuery):
// the database's parser keeps "example.com" or "3.14" whole, which no
// query of words finds. Every word has a position, and so the default
// weight D: a lexeme without one would match a query's weight A, and a
// message that quotes another principal's token would be filed under
// it. A word longer than a lexeme may be (once lowercased) is left out,
// as to_tsvector does, and so are the distinct words past the vector's
// bound, counted in the order the text has them.
func searchVector(scope, text string) pgtype.TSVector {
	words := agentik.SearchWords(text)
	seen := make(map[string]struct{}, len(words))
	kept := make([]string, 0, len(words)+1)
	size := lexemeBytes(scope)
	for _, w := range words {
		w = strings.ToLower(w) // may grow it: measured after
		if _, dup := seen[w]; dup || w == scope || len(w) > maxLexemeBytes {
			continue
		}
		if size += lexemeBytes(w); size > maxVectorBytes {
			break
		}
		seen[w] = struct{}{}
		kept = append(kept, w)
	}
	kept = append(kept, scope)
	slices.Sort(kept)
	v := pgtype.TSVector{Lexemes: make([]pgtype.TSVectorLexeme, len(kept)), Valid: true}
	for i, w := range kept {
		pos := pgtype.TSVectorPosition{Position: 2}
		if w == scope {
			pos = pgtype.TSVectorPosition{Position: 1, Weight: pgtype.TSVectorWeightA}
		}
		v.Lexemes[i] = pgtype.TSVectorLexeme{Word: w, Positions: []pgtype.TSVectorPosition{pos}}
	}
	return v
}

// lexemeBytes is what a lexeme with one position takes of a tsvector's
// bound: its bytes, their alignment, its position count and position, and
// its entry.
func lexemeBytes(w string) int { return len(w) + 1 + 4 + 4 }

// searchQuery is the tsquery of q within scope: every term, lowercased,
// and the scope token with weight A, all required. A term is letters and
// digits only (agentik.ParseSearchQuery), so each is a quoted lexeme and
// nothing of what the user typed is read as the query's syntax.
func searchQuery(scope string, q agentik.SearchQuery) string {
	var b strings.Builder
	for _, t := range q.Terms {
		b.WriteString("'" + strings.ToLower(t) + "' & ")
	}
	b.WriteString("'" + scope + "':A")
	return b.String()
}
