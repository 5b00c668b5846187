package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentik/agentik/internal/testenv"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storetest"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// testDSN returns the database the tests run against. Without
// AGENTIK_TEST_DATABASE_URL the tests are skipped on a developer's machine
// and fail in CI, where the PostgreSQL contract must be checked.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("AGENTIK_TEST_DATABASE_URL")
	if dsn == "" {
		testenv.Missing(t, "AGENTIK_TEST_DATABASE_URL is not set: the PostgreSQL store is not tested")
	}
	return dsn
}

// freshSchema creates a schema of its own for one test and returns a DSN
// whose search_path selects it; the schema is dropped when the test ends.
// Tests of several packages may share one database at the same time.
func freshSchema(t testing.TB) string {
	t.Helper()
	dsn := testDSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	schema := "agentik_test_" + strings.ReplaceAll(agentik.NewID(), "-", "")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, dsn, schema)
}

func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("AGENTIK_TEST_DATABASE_URL: %v", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return fmt.Sprintf("%s search_path=%s", dsn, schema)
}

// schemaBefore makes dsn's schema what an older version left: every
// migration before the one whose name ends in suffix, recorded. It
// returns an exec on a connection to it, closed with the test, for the
// old version's rows.
func schemaBefore(t *testing.T, dsn, suffix string) (exec func(q string, args ...any)) {
	t.Helper()
	ms, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.IndexFunc(ms, func(m storeutil.Migration) bool { return strings.HasSuffix(m.Name, suffix) })
	if before < 0 {
		t.Fatalf("no *%s migration", suffix)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	exec = func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("old schema: %s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, m := range ms[:before] {
		exec(m.SQL)
		exec("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
	}
	return exec
}

func openDSN(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{MaxConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	dsn := freshSchema(t)
	storetest.Run(t, func(t *testing.T) agentik.Store { return openDSN(t, dsn) })
}

func TestContractShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (agentik.Store, agentik.Store) {
		dsn := freshSchema(t)
		return openDSN(t, dsn), openDSN(t, dsn)
	})
}

// TestConcurrentOpen: processes starting together on an empty schema migrate
// it once; a schema newer than the program is refused and left alone.
func TestConcurrentOpenAndSchemaTooNew(t *testing.T) {
	dsn := freshSchema(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn, Options{MaxConns: 2}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	s := stores[0]
	var n int
	if err := s.pool.QueryRow(t.Context(), "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != SchemaVersion() {
		t.Fatalf("%d migrations recorded (%v), want %d", n, err, SchemaVersion())
	}
	if _, err := s.pool.Exec(t.Context(), "INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), dsn, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

// TestBadDSN: the connection string is not echoed (it may hold a password).
func TestBadDSN(t *testing.T) {
	_, err := Open(t.Context(), "postgres://user:s3cret@[bad", Options{})
	if agentik.ErrorCode(err) != agentik.EInvalid || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad DSN: %v", err)
	}
}

func TestAgents(t *testing.T) {
	contract := freshSchema(t) // the contract's checks share one schema, as TestContract's do
	storetest.RunAgents(t, func(t *testing.T) storetest.Agents {
		dsn := contract
		if !strings.Contains(t.Name(), "/Contract/") {
			dsn = freshSchema(t)
		}
		s := openDSN(t, dsn)
		return storetest.Agents{
			Base: s,
			For:  func(id string) agentik.Store { return s.ForAgent(id) },
			Adopt: func(t *testing.T, id string) int64 {
				n, err := s.AdoptConversations(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				return n
			},
		}
	})
}

// TestDeleteTakesTheJournal: the journal, the events and working memory
// have no foreign key (migrations/0009): deleting a conversation deletes
// them (a trigger), and leaves another conversation's alone.
func TestDeleteTakesTheJournal(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	ctx := t.Context()
	count := func(id string) (n int) {
		err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM messages WHERE conversation_id = $1)
			+ (SELECT count(*) FROM events WHERE conversation_id = $1) + (SELECT count(*) FROM memory WHERE conversation_id = $1)
			+ (SELECT count(*) FROM open_turns WHERE conversation_id = $1)`, id).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var ids []string
	for range 2 {
		now := agentik.Now()
		id := agentik.NewID()
		if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "o", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		m := &agentik.Message{ID: agentik.NewID(), Date: now, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("hi")}}
		w := agentik.Write{ConversationID: id, Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: now,
			Memory: []agentik.MemoryEntry{{SourceID: m.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: m.Content}}}}
		if _, _, err := s.Commit(ctx, w); err != nil {
			t.Fatal(err)
		}
		if n := count(id); n != 4 { // the message opened its turn
			t.Fatalf("%d rows stored, want 4", n)
		}
		ids = append(ids, id)
	}
	if _, err := s.DeleteConversation(ctx, ids[0], agentik.Now()); err != nil {
		t.Fatal(err)
	}
	if n := count(ids[0]); n != 0 {
		t.Fatalf("%d rows of the deleted conversation left", n)
	}
	if n := count(ids[1]); n != 4 {
		t.Fatalf("the other conversation has %d rows, want 4", n)
	}
	// A write to the deleted conversation stores nothing.
	now := agentik.Now()
	m := &agentik.Message{ID: agentik.NewID(), Date: now, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("late")}}
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: ids[0], Events: []agentik.Event{agentik.MessageEvent(m)}}); !agentik.IsNotFound(err) {
		t.Fatalf("commit to a deleted conversation: %v, want not found", err)
	}
	if n := count(ids[0]); n != 0 {
		t.Fatalf("%d rows stored for the deleted conversation", n)
	}
}

func TestMemory(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	a, b := s.ForAgent("a"), s.ForAgent("b")
	storetest.Memory(t, a, b, func() []agentik.AgentEvent {
		evs, err := a.AgentEvents(t.Context(), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	})
}

// TestUserMessageOfAnOlderProcessOpensItsTurn: a process of the version
// before migrations/0019, still running during an upgrade, inserts a user
// message with the insert it knows (no open_turns); its turn is open all
// the same, for a new process to answer.
func TestUserMessageOfAnOlderProcessOpensItsTurn(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	ctx := t.Context()
	id := agentik.NewID()
	if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}); err != nil {
		t.Fatal(err)
	}
	m := agentik.Message{ID: agentik.NewID(), ConversationID: id, Seq: 1, Type: agentik.MsgUser, Date: agentik.Now(), Content: []agentik.Content{agentik.Text("from an older process")}}
	payload, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, images, parent, search, search_scope)
		VALUES ($1, 1, $2, 'user_message', now(), '', $3, NULL, 0, NULL, NULL)`, id, m.ID, string(payload)); err != nil {
		t.Fatal(err)
	}
	open, err := s.OpenTurnsOf(ctx, id)
	if err != nil || len(open) != 1 || open[0].ID != m.ID {
		t.Fatalf("open turns %v, %v; want the older process's message", open, err)
	}
}
