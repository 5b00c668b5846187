package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
	"github.com/agentik/agentik/storeutil"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) storetest.Agents {
		s := openDSN(t, freshSchema(t))
		return storetest.Agents{Base: s, For: func(id string) agentik.Store { return s.ForAgent(id) }}
	})
}

// TestSearchVectorAndQuery: the vectors and queries made in Go, read by
// the database. A message matches the queries of its own words in any
// case under its own scope, and never under a scope it only quotes (its
// words have weight D, the scope token A); a word too long for a lexeme
// is left out rather than failing the commit.
func TestSearchVectorAndQuery(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	alice, mallory := storeutil.SearchScope("alice"), storeutil.SearchScope("mallory")
	long := strings.Repeat("z", 3000)
	for _, c := range []struct {
		scope, text, query, queryScope string
		want                           bool
	}{
		{alice, "Hello, World", "hello world", alice, true},
		{alice, "Hello, World", "WORLD", alice, true},
		{alice, "Hello, World", "world", mallory, false},
		{alice, "Hello " + mallory, "hello", mallory, false},
		{alice, "Hello " + mallory, mallory, mallory, false},
		{alice, "Hello " + alice, alice, alice, true},
		{alice, "naïve café " + long, "CAFÉ naïve", alice, true},
		{alice, "it's a_b", "it s a b", alice, true},
		{alice, "…", "x", alice, false},
		// A word that grows when lowercased past a lexeme's bound is
		// left out, not a failed commit.
		{alice, "short " + strings.Repeat("Ⱥ", 700), "short", alice, true},
		// Repeats count once: the words after 600,000 bytes of one
		// repeated word are still filed.
		{alice, strings.Repeat("again ", 120000) + "last", "last", alice, true},
		// Too many distinct words: those past the bound are left out,
		// and the vector is still one the database takes.
		{alice, manyWords(200000) + " zzzlast", "w1", alice, true},
		{alice, manyWords(200000) + " zzzlast", "zzzlast", alice, false},
	} {
		q, err := agentik.ParseSearchQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		err = s.pool.QueryRow(t.Context(), `SELECT $1::tsvector @@ CAST($2::text AS tsquery)`,
			searchVector(c.scope, c.text), searchQuery(c.queryScope, q)).Scan(&got)
		if err != nil || got != c.want {
			t.Errorf("%q searched for %q: %v, %v; want %v", c.text, c.query, got, err, c.want)
		}
	}
}

// manyWords is n distinct words of a few letters.
func manyWords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "w%d ", i)
	}
	return b.String()
}

// TestMigrationToSearch: the migration that adds the search vectors fills
// them for the messages written before it, under their owners, and they
// go with their conversation afterwards. The old database holds a
// conversation of before agents too, found once adopted.
func TestMigrationToSearch(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	exec := schemaBefore(t, dsn, "_message_search.sql")
	old := []struct{ conv, owner, agent string }{
		{agentik.NewID(), "alice", "support"},
		{agentik.NewID(), "bob", "support"},
		{agentik.NewID(), "alice", ""}, // before agents
	}
	for _, c := range old {
		exec(`INSERT INTO conversations (id, owner, title, temporal, created_at, updated_at, next_seq, last_cursor, agent_id)
			VALUES ($1, $2, 'old', false, now(), now(), 5, 0, $3)`, c.conv, c.owner, c.agent)
		msgs := []agentik.Message{
			{Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("the walrus " + c.owner), agentik.Image("image/png", []byte("png")), agentik.Text("second part oyster")}},
			{Type: agentik.MsgAssistant, Content: []agentik.Content{agentik.Text("walrus answer")}},
			{Type: agentik.MsgToolCall, CallID: "c1", Name: "walrus", Arguments: agentik.RawJSON(`{"walrus":1}`)},
			{Type: agentik.MsgToolResult, CallID: "c1", Name: "walrus", Content: []agentik.Content{agentik.Text("walrus tool result")}},
		}
		for i := range msgs {
			m := &msgs[i]
			m.ID, m.ConversationID, m.Seq, m.Parent, m.Date = agentik.NewID(), c.conv, int64(i+1), int64(i), agentik.Now()
			mp, _ := json.Marshal(m)
			exec(`INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, parent) VALUES ($1, $2, $3, $4, $5, '', $6, $7)`,
				c.conv, m.Seq, m.ID, m.Type, m.Date.Time, string(mp), m.Parent)
		}
	}

	s := openDSN(t, dsn)
	if _, err := s.AdoptConversations(ctx, "support"); err != nil {
		t.Fatal(err)
	}
	v := s.ForAgent("support")
	find := func(owner, query string) []agentik.SearchHit {
		t.Helper()
		q, err := agentik.ParseSearchQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := v.SearchMessages(ctx, owner, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	hits := find("alice", "walrus")
	if len(hits) != 4 {
		t.Fatalf("alice's backfilled walrus hits: %+v", hits)
	}
	for _, h := range hits {
		if h.ConversationID != old[0].conv && h.ConversationID != old[2].conv || h.Seq > 2 {
			t.Fatalf("hit %+v is not one of alice's user or assistant messages", h)
		}
	}
	if hits := find("alice", "oyster walrus alice"); len(hits) != 2 || hits[0].Role != agentik.RoleUser || !strings.Contains(hits[0].Snippet, "oyster") {
		t.Fatalf("a second text part: %+v", hits)
	}
	if hits := find("alice", "bob"); len(hits) != 0 {
		t.Fatalf("alice finds bob's words: %+v", hits)
	}
	if hits := find("bob", "walrus"); len(hits) != 2 || hits[0].ConversationID != old[1].conv {
		t.Fatalf("bob: %+v", hits)
	}
	rows := func() int {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE search IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 6 {
		t.Fatalf("%d messages with a search vector, want 6 (2 per conversation)", n)
	}
	for _, c := range old {
		if _, err := v.DeleteConversation(ctx, c.conv, agentik.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d search vectors left after the deletes", n)
	}
}

func TestEmbeddings(t *testing.T) {
	storetest.RunEmbeddings(t, func(t *testing.T) (storetest.Agents, func() int) {
		s := openDSN(t, freshSchema(t))
		count := func() int {
			var n int
			err := s.read(t.Context(), "count vectors", func(q querier) error {
				return q.QueryRow(t.Context(), `SELECT count(*) FROM message_vectors`).Scan(&n)
			})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		return storetest.Agents{Base: s, For: func(id string) agentik.Store { return s.ForAgent(id) }}, count
	})
}
