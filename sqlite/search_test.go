package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
	"github.com/agentik/agentik/storeutil"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, func(t *testing.T) storetest.Agents {
		s := open(t).(*Store)
		return storetest.Agents{Base: s, For: func(id string) agentik.Store { return s.ForAgent(id) }}
	})
}

// TestMigrationToSearch: the migration that adds the full-text index files
// the messages written before it, for their owners only, and the rows go
// with their conversation afterwards. The old database holds a
// conversation of before agents too, found once adopted.
func TestMigrationToSearch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	ctx := t.Context()
	migs, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(migs, func(m storeutil.Migration) bool { return strings.HasSuffix(m.Name, "_message_search.sql") })
	if before < 0 {
		t.Fatal("no *_message_search.sql migration")
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("old database: %s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`)
	for _, m := range migs[:before] {
		exec(m.SQL)
		exec(`INSERT INTO schema_migrations VALUES (?, ?, 'then')`, m.Version, m.Name)
	}
	old := []struct{ conv, owner, agent string }{
		{agentik.NewID(), "alice", "support"},
		{agentik.NewID(), "bob", "support"},
		{agentik.NewID(), "alice", ""}, // before agents
	}
	for _, c := range old {
		exec(`INSERT INTO conversations (id, owner, created_at, updated_at, next_seq, next_ord, agent_id) VALUES (?, ?, 0, 0, 5, 1, ?)`, c.conv, c.owner, c.agent)
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
			exec(`INSERT INTO messages (conversation_id, seq, id, type, date, payload, parent) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				c.conv, m.Seq, m.ID, m.Type, m.Date.UnixMilli(), string(mp), m.Parent)
		}
	}
	db.Close()

	s := openPath(t, path)
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
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM message_search`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 6 {
		t.Fatalf("%d rows in the index, want 6 (2 per conversation)", n)
	}
	for _, c := range old {
		if _, err := v.DeleteConversation(ctx, c.conv, agentik.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d rows left in the index after the deletes", n)
	}
}

// FuzzSearchMessages: whatever a query holds, the FTS5 index answers it
// without an error, and only with the searching owner's messages that
// hold its words.
func FuzzSearchMessages(f *testing.F) {
	for _, s := range []string{"alpha", `"alpha" OR *`, `NEAR("a" "b", 2)`, "scope:x", "{body scope}:alpha", "alpha AND NOT beta", `a"b`, "^x", "a*"} {
		f.Add(s)
	}
	s, err := Open(context.Background(), filepath.Join(f.TempDir(), "agentik.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	v := s.ForAgent("a")
	for _, owner := range []string{"alice", "bob"} {
		c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: owner, CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}
		if _, err := v.CreateConversation(context.Background(), c); err != nil {
			f.Fatal(err)
		}
		m := &agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgUser,
			Content: []agentik.Content{agentik.Text(`alpha beta "gamma" NEAR scope body ` + owner)}}
		if _, _, err := v.Commit(context.Background(), agentik.Write{ConversationID: c.ID, Events: []agentik.Event{agentik.MessageEvent(m)}}); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, err := agentik.ParseSearchQuery(query)
		if err != nil {
			return
		}
		hits, err := v.SearchMessages(context.Background(), "alice", q, 10)
		if err != nil {
			t.Fatalf("%q: %v", query, err)
		}
		for _, h := range hits {
			if strings.Contains(h.Snippet, "bob") {
				t.Fatalf("%q: alice finds bob's message: %+v", query, h)
			}
		}
		if len(hits) > 1 {
			t.Fatalf("%q: %d hits of one message", query, len(hits))
		}
	})
}

func TestEmbeddings(t *testing.T) {
	storetest.RunEmbeddings(t, func(t *testing.T) (storetest.Agents, func() int) {
		s := open(t).(*Store)
		count := func() int {
			var n int
			err := s.read(t.Context(), "count vectors", func(r *reader) error {
				return r.QueryRowContext(t.Context(), `SELECT count(*) FROM message_vectors`).Scan(&n)
			})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		return storetest.Agents{Base: s, For: func(id string) agentik.Store { return s.ForAgent(id) }}, count
	})
}
