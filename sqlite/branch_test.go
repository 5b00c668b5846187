package sqlite

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
)

// TestMigrationToBranches: a database of the schema before the message
// tree (every migration before the *_branches one), holding a conversation
// written with that version's columns, migrates on Open into one path:
// parents seq-1, the head on the last message, the head path its whole
// journal; its open turn stays open, and new messages follow the head.
func TestMigrationToBranches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	ctx := t.Context()
	migs, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(migs, func(m storeutil.Migration) bool { return strings.HasSuffix(m.Name, "_branches.sql") })
	if before < 0 {
		t.Fatal("no *_branches.sql migration")
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
	conv := agentik.NewID()
	date := agentik.TimeOf(agentik.Now().Time)
	u1 := agentik.Message{ID: agentik.NewID(), ConversationID: conv, Seq: 1, Date: date, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("one")}}
	a2 := agentik.Message{ID: agentik.NewID(), ConversationID: conv, Seq: 2, Date: date, Type: agentik.MsgAssistant, Content: []agentik.Content{agentik.Text("two")}, ReplyTo: u1.ID}
	u3 := agentik.Message{ID: agentik.NewID(), ConversationID: conv, Seq: 3, Date: date, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("three")}}
	exec(`INSERT INTO conversations (id, owner, created_at, updated_at, next_seq, next_ord) VALUES (?, 'alice', 0, 0, 4, 1)`, conv)
	for _, m := range []agentik.Message{u1, a2, u3} {
		mp, _ := json.Marshal(m)
		ep, _ := json.Marshal(agentik.MessageEvent(&m))
		closed := m.ID == u1.ID
		exec(`INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, closed, payload) VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
			conv, m.Seq, m.ID, m.Type, m.ReplyTo, closed, string(mp))
		exec(`INSERT INTO events (conversation_id, type, date, payload) VALUES (?, ?, 0, ?)`, conv, m.Type, string(ep))
	}
	db.Close()

	s := openPath(t, path)
	rec, err := s.GetConversation(ctx, conv)
	if err != nil || rec.Head != 3 {
		t.Fatalf("head %d, %v; want 3", rec.Head, err)
	}
	msgs, _, err := s.Messages(ctx, conv, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 3 {
		t.Fatalf("head path: %d messages, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.Parent != int64(i) || m.Siblings != nil {
			t.Fatalf("message %d: seq %d parent %d siblings %v", i, m.Seq, m.Parent, m.Siblings)
		}
	}
	open, err := s.OpenTurns(ctx)
	if err != nil || len(open) != 1 || open[0].ID != u3.ID {
		t.Fatalf("open turns %v, %v; want the old open one", open, err)
	}
	a4 := agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgAssistant, ReplyTo: u3.ID, Content: []agentik.Content{agentik.Text("four")}}
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: conv, Events: []agentik.Event{agentik.MessageEvent(&a4)}}); err != nil {
		t.Fatal(err)
	}
	if a4.Seq != 4 || a4.Parent != 3 {
		t.Fatalf("new message seq %d parent %d, want 4 after 3", a4.Seq, a4.Parent)
	}
	evs, err := s.Events(ctx, conv, 0, 0)
	if err != nil || len(evs) != 4 {
		t.Fatalf("%d events, %v; want the 3 old ones and the new one", len(evs), err)
	}
}
