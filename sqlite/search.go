package sqlite

import (
	"context"
	sqldriver "database/sql/driver"
	"fmt"
	"strings"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	driver "modernc.org/sqlite"
)

var _ agentik.MessageSearcher = (*Store)(nil)

// The migration that indexes the journal files the messages written before
// it under the token storeutil.SearchScope computes: the same function, in
// SQL. Registered once for every connection the driver opens.
func init() {
	err := driver.RegisterDeterministicScalarFunction("agentik_search_scope", 1,
		func(_ *driver.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return storeutil.SearchScope(v), nil
			case []byte:
				return storeutil.SearchScope(string(v)), nil
			}
			return nil, fmt.Errorf("agentik_search_scope: not text: %T", args[0])
		})
	if err != nil {
		panic(err)
	}
}

// SearchMessages implements agentik.MessageSearcher on the FTS5 index of
// migrations/0010. The index files each message under its rowid, which
// grows as messages are stored, so walking it by rowid from the top gives
// the newest first and stops at limit, without a sort of every match. The
// owner and agent of each hit are checked on its conversation. The rows
// queued for the index are moved into it first, so a search finds every
// message committed before it began.
func (s *Store) SearchMessages(ctx context.Context, owner string, q agentik.SearchQuery, limit int) ([]agentik.SearchHit, error) {
	hits := []agentik.SearchHit{}
	if len(q.Terms) == 0 || limit <= 0 {
		return hits, nil
	}
	// Rows queued by commits are indexed first (index.go).
	if err := s.indexCurrent(ctx); err != nil {
		return nil, err
	}
	err := s.read(ctx, "search messages", func(r *reader) error {
		return r.Each(ctx, func(row storeutil.Scanner) error {
			var conv, typ, payload string
			var seq, date int64
			if err := row.Scan(&conv, &seq, &typ, &date, &payload); err != nil {
				return err
			}
			h, err := storeutil.SearchHit(conv, seq, typ, fromMS(date), payload, q)
			hits = append(hits, h)
			return err
		}, qSearch, matchExpr(owner, q), owner, s.agent, limit)
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}

// matchExpr is the FTS5 query of q for owner's messages: the owner's scope
// token in the scope column and every term in the body, each term a quoted
// string (a literal phrase: its quotes doubled, so that no *, NEAR, ^,
// column filter or parenthesis in it is read as query syntax).
func matchExpr(owner string, q agentik.SearchQuery) string {
	var b strings.Builder
	b.WriteString(`scope : "`)
	b.WriteString(storeutil.SearchScope(owner))
	b.WriteString(`"`)
	for _, t := range q.Terms {
		b.WriteString(` AND body : "`)
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteString(`"`)
	}
	return b.String()
}
