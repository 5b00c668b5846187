package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
)

func openPath(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func userMessage(conv, text string) *agentik.Message {
	return &agentik.Message{ID: agentik.NewID(), ConversationID: conv, Date: agentik.Now(),
		Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text(text)}}
}

func newConv(t *testing.T, s *Store) agentik.ConversationRecord {
	t.Helper()
	now := agentik.Now()
	c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: "alice", Title: "t", CreatedAt: now, UpdatedAt: now}
	if _, err := s.CreateConversation(t.Context(), c); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c
}

func commitMsgs(t *testing.T, s *Store, conv string, ms ...*agentik.Message) []agentik.Event {
	t.Helper()
	evs := make([]agentik.Event, len(ms))
	for i, m := range ms {
		evs[i] = agentik.MessageEvent(m)
	}
	out, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: conv, Events: evs, Touch: agentik.Now(),
		Memory: []agentik.MemoryEntry{{Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: ms[0].Content}}}})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return out
}

// TestReopen closes and reopens the file: everything is still there, seqs
// continue, and cursors keep increasing even past deleted rows.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	s := openPath(t, path)
	c := newConv(t, s)
	gone := newConv(t, s)
	first := commitMsgs(t, s, c.ID, userMessage(c.ID, "one"), userMessage(c.ID, "two"))
	goneEvs := commitMsgs(t, s, gone.ID, userMessage(gone.ID, "bye"))
	if _, err := s.DeleteConversation(t.Context(), gone.ID, agentik.Now()); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	wantConv, _ := s.GetConversation(t.Context(), c.ID)
	wantAgent, _ := s.AgentEvents(t.Context(), 0, 0)
	wantMem, _ := s.Memory(t.Context(), c.ID)
	wantTurns, _ := s.OpenTurns(t.Context())
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openPath(t, path)
	ctx := t.Context()
	if got, err := s.GetConversation(ctx, c.ID); err != nil || got != wantConv {
		t.Fatalf("conversation after reopen: %+v, %v; want %+v", got, err, wantConv)
	}
	if got, err := s.Events(ctx, c.ID, 0, 0); err != nil || !equalJSON(got, first) {
		t.Fatalf("events after reopen: %v, %v", got, err)
	}
	if got, err := s.AgentEvents(ctx, 0, 0); err != nil || !equalJSON(got, wantAgent) {
		t.Fatalf("agent events after reopen: %v, %v", got, err)
	}
	if got, err := s.Memory(ctx, c.ID); err != nil || !equalJSON(got, wantMem) {
		t.Fatalf("memory after reopen: %v, %v", got, err)
	}
	if got, err := s.OpenTurns(ctx); err != nil || !equalJSON(got, wantTurns) || len(got) != 2 {
		t.Fatalf("open turns after reopen: %v, %v", got, err)
	}

	// The deleted conversation held the greatest cursor; it is not handed out again.
	next := userMessage(c.ID, "three")
	evs := commitMsgs(t, s, c.ID, next)
	if next.Seq != 3 {
		t.Fatalf("seq after reopen = %d, want 3", next.Seq)
	}
	if evs[0].Cursor <= goneEvs[0].Cursor {
		t.Fatalf("cursor %d after reopen, want > %d", evs[0].Cursor, goneEvs[0].Cursor)
	}
	last, _ := s.LastAgentCursor(ctx)
	if last <= wantAgent[len(wantAgent)-1].Cursor {
		t.Fatalf("agent cursor %d after reopen, want > %d", last, wantAgent[len(wantAgent)-1].Cursor)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func TestMigrationsRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	openPath(t, path).Close()
	s := openPath(t, path) // a second open applies nothing twice
	rows, err := s.r.QueryContext(t.Context(), "SELECT version, name FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if !strings.HasPrefix(name, fmt.Sprintf("%04d_", v)) {
			t.Errorf("migration %d recorded as %q", v, name)
		}
		versions = append(versions, v)
	}
	want := make([]int, SchemaVersion())
	for i := range want {
		want[i] = i + 1
	}
	if SchemaVersion() < 1 || !slices.Equal(versions, want) {
		t.Fatalf("recorded versions %v, want %v", versions, want)
	}
}

// TestSchemaTooNew: a database migrated by a newer program is refused, and
// left as it was.
func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	s := openPath(t, path)
	c := newConv(t, s)
	future := SchemaVersion() + 1
	if _, err := s.wc.ExecContext(t.Context(),
		"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'now')", future); err != nil {
		t.Fatalf("insert: %v", err)
	}
	s.Close()

	_, err := Open(t.Context(), path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(future)) {
		t.Errorf("error %q does not name the version", err)
	}

	// Back at a known version the data is intact.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	if _, err := db.Exec("DELETE FROM schema_migrations WHERE version = ?", future); err != nil {
		t.Fatalf("delete: %v", err)
	}
	db.Close()
	s = openPath(t, path)
	if _, err := s.GetConversation(t.Context(), c.ID); err != nil {
		t.Fatalf("conversation after refused open: %v", err)
	}
}

// TestUnwritable: when the database refuses writes (read-only file, full
// disk, …) every write is EUnavailable and changes nothing; reads still work.
// query_only stands in for a read-only file, which root could still write.
func TestUnwritable(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	ctx := t.Context()
	c := newConv(t, s)
	commitMsgs(t, s, c.ID, userMessage(c.ID, "before"))
	before, _ := s.LastAgentCursor(ctx)
	if _, err := s.wc.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		t.Fatalf("pragma: %v", err)
	}

	m := userMessage(c.ID, "refused")
	_, _, err := s.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: agentik.Now()})
	wantUnavailable(t, "commit", err)
	if m.Seq != 0 {
		t.Errorf("refused commit wrote seq %d", m.Seq)
	}
	_, err = s.CreateConversation(ctx, agentik.ConversationRecord{ID: agentik.NewID(), Owner: "alice"})
	wantUnavailable(t, "create", err)
	_, _, err = s.RenameConversation(ctx, c.ID, "x", agentik.Now())
	wantUnavailable(t, "rename", err)
	_, err = s.DeleteConversation(ctx, c.ID, agentik.Now())
	wantUnavailable(t, "delete", err)

	msgs, _, err := s.Messages(ctx, c.ID, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("journal after refused writes: %d messages, %v", len(msgs), err)
	}
	if after, _ := s.LastAgentCursor(ctx); after != before {
		t.Fatalf("agent cursor moved %d -> %d", before, after)
	}
	if got, _ := s.GetConversation(ctx, c.ID); got.Title != c.Title {
		t.Fatalf("title changed to %q", got.Title)
	}
}

func wantUnavailable(t *testing.T, op string, err error) {
	t.Helper()
	if code := agentik.ErrorCode(err); code != agentik.EUnavailable {
		t.Errorf("%s: code %q (%v), want %q", op, code, err, agentik.EUnavailable)
	} else if !strings.Contains(err.Error(), op) {
		t.Errorf("%s: error %q does not name the operation", op, err)
	}
}

func TestOpenBadPath(t *testing.T) {
	_, err := Open(t.Context(), filepath.Join(t.TempDir(), "missing", "dir", "agentik.db"))
	if code := agentik.ErrorCode(err); code != agentik.EUnavailable {
		t.Fatalf("Open in a missing directory: %v, want %s", err, agentik.EUnavailable)
	}
}

// TestPathWithURIChars: the path is not parsed as a URI query or fragment.
func TestPathWithURIChars(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c %d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agentik.db")
	newConv(t, openPath(t, path))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %s: %v", path, err)
	}
}

// TestQueryPlans pins the read paths to their indexes: no full scans and no
// sorts, so latency stays flat as journals grow (SPEC: 100,000 messages).
func TestQueryPlans(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	for _, q := range append(slices.Clone(readQueries), writeQueries...) {
		args := make([]any, strings.Count(q, "?"))
		rows, err := s.wc.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("explain %s: %v", q, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatalf("scan: %v", err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		t.Logf("%.40s… %q", strings.Join(strings.Fields(q), " "), plan)
		// A path read (SPEC §18) walks the parent links from the head, one
		// primary-key lookup per message of the path, then sorts what it
		// walked: its cost is the path's length, whatever the branches.
		walk := strings.HasPrefix(q, "WITH RECURSIVE path")
		for _, step := range plan {
			// A full-text search (search.go) is answered by the FTS5
			// index: a MATCH ("M" in its index string), in rowid order.
			fts := strings.Contains(step, "VIRTUAL TABLE INDEX") && strings.Contains(step, ":M")
			// The indexer's queue (index.go) is read from its first row
			// in rowid order, up to a batch: a scan that stops at its
			// limit, of a table that holds the rows of the last moments.
			queue := step == "SCAN message_search_pending"
			bad := (strings.Contains(step, "TEMP B-TREE") && !walk) ||
				(strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "USING") && step != "SCAN CONSTANT ROW" &&
					!(walk && step == "SCAN path") && !fts && !queue)
			if bad {
				t.Errorf("query %s\nplan %q", strings.Join(strings.Fields(q), " "), plan)
			}
		}
	}
}

func TestMemory(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "m.db"))
	a, b := s.ForAgent("a"), s.ForAgent("b")
	storetest.Memory(t, a, b, func() []agentik.AgentEvent {
		evs, err := a.AgentEvents(t.Context(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	})
}
