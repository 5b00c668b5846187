package postgres

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// embedWalkState reads whether messages_embed_walk exists in s's schema
// and whether it is valid.
func embedWalkState(t *testing.T, s *Store) (exists, valid bool) {
	t.Helper()
	err := s.pool.QueryRow(t.Context(), qEmbedWalkValid).Scan(&valid)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, valid
}

// TestEmbedWalkIndexOnDemand: a new schema has no index for the embedding
// worker's walk, so commits pay nothing for semantic recall until it is
// used; the first walk builds it, from two processes at once too, and
// finds the messages committed before; an index a failed build left
// invalid is built again.
func TestEmbedWalkIndexOnDemand(t *testing.T) {
	dsn := freshSchema(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	if exists, _ := embedWalkState(t, a); exists {
		t.Fatal("a new schema has messages_embed_walk; it is built by the first walk")
	}
	ctx := t.Context()
	id := agentik.NewID()
	if _, err := a.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}); err != nil {
		t.Fatal(err)
	}
	m := agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: agentik.Now(), Content: []agentik.Content{agentik.Text("find me by meaning")}}
	if _, _, err := a.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{agentik.MessageEvent(&m)}}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	found := make([][]agentik.MessageText, 2)
	errs := make([]error, 2)
	for i, s := range []*Store{a, b} {
		wg.Go(func() { found[i], errs[i] = s.UnembeddedMessages(ctx, "m", time.Time{}, 10) })
	}
	wg.Wait()
	for i := range found {
		if errs[i] != nil || len(found[i]) != 1 || found[i][0].ID != m.ID {
			t.Fatalf("process %d: %v, %v; want the message", i, found[i], errs[i])
		}
	}
	if exists, valid := embedWalkState(t, a); !exists || !valid {
		t.Fatalf("after the first walks: exists %v valid %v", exists, valid)
	}

	// A build cut short leaves an invalid index under the name: here a
	// unique build that fails on two equal types.
	m2 := agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: agentik.Now(), Content: []agentik.Content{agentik.Text("and me")}}
	if _, _, err := a.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{agentik.MessageEvent(&m2)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, "DROP INDEX messages_embed_walk"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, "CREATE UNIQUE INDEX CONCURRENTLY messages_embed_walk ON messages (type)"); err == nil {
		t.Fatal("the unique build succeeded; the test needs it to fail")
	}
	if exists, valid := embedWalkState(t, a); !exists || valid {
		t.Fatalf("the failed build: exists %v valid %v; want an invalid index", exists, valid)
	}
	c := openDSN(t, dsn) // a process started after: it checks the index
	got, err := c.UnembeddedMessages(ctx, "m", time.Time{}, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("walk after the failed build: %v, %v", got, err)
	}
	if exists, valid := embedWalkState(t, a); !exists || !valid {
		t.Fatalf("after the rebuild: exists %v valid %v", exists, valid)
	}
	var def string
	if err := a.pool.QueryRow(ctx, `SELECT pg_get_indexdef(i.indexrelid) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
		WHERE c.relname = 'messages_embed_walk' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(def, "UNIQUE") || !strings.Contains(def, "date DESC") {
		t.Fatalf("rebuilt index: %s", def)
	}
}

// TestEmbedWalkMigrationKeepsAnIndexInUse: migration 0020 drops the walk's
// index only where nothing was embedded yet.
func TestEmbedWalkMigrationKeepsAnIndexInUse(t *testing.T) {
	for _, embedded := range []bool{false, true} {
		dsn := freshSchema(t)
		exec := schemaBefore(t, dsn, "_embed_walk_on_demand.sql")
		if embedded {
			id := agentik.NewID()
			exec(`INSERT INTO conversations (id, owner, title, temporal, created_at, updated_at) VALUES ($1, 'o', '', false, now(), now())`, id)
			exec(`INSERT INTO messages (conversation_id, seq, id, type, date, payload) VALUES ($1, 1, $2, 'user_message', now(), '{}')`, id, id+"m")
			exec(`INSERT INTO message_vectors (message_id, agent_id, scope, model, date, vector) VALUES ($1, '', 's', 'm', now(), '')`, id+"m")
		}
		s := openDSN(t, dsn) // migrates
		if exists, _ := embedWalkState(t, s); exists != embedded {
			t.Fatalf("vectors stored %v: the index exists %v after the migration", embedded, exists)
		}
	}
}
