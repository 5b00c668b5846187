package postgres

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// TestMigrationFromBeforeAgents: a schema at the version before agents
// (migrations up to the one before 0006_agents), holding a conversation
// with its journal, durable events and agent events written with that
// version's columns, migrates on Open; the conversation, its journal and
// its agent events are the default agent's once it adopts them, and no
// other agent's.
func TestMigrationFromBeforeAgents(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	ms, err := storeutil.Migrations(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	agents := -1
	for i, m := range ms {
		if m.Name == "0006_agents.sql" {
			agents = i
		}
	}
	if agents < 0 {
		t.Fatal("no 0006_agents.sql migration")
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:agents] {
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}

	// What the store of that version wrote for one turn (its columns).
	id, owner := agentik.NewID(), "alice"
	at := time.Now().UTC().Truncate(time.Millisecond)
	user := agentik.Message{ID: agentik.NewID(), ConversationID: id, Seq: 1, Date: agentik.TimeOf(at), Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text("hello from before agents")}}
	mp, _ := json.Marshal(user)
	ep, _ := json.Marshal(agentik.Event{Type: agentik.EvUserMessage, ConversationID: id, Date: user.Date, Message: &user})
	created := agentik.AgentEvent{Date: user.Date, Type: agentik.AgentEvCreated, ConversationID: id, Owner: owner,
		Conversation: &agentik.ConversationInfo{ID: id, Title: "old", CreatedAt: user.Date, UpdatedAt: user.Date}}
	ap, _ := storeutil.AgentPayload(&created)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO conversations (id, owner, title, temporal, created_at, updated_at, next_seq, last_cursor)
			VALUES ($1, $2, 'old', false, $3, $3, 2, nextval('event_cursors'))`, []any{id, owner, at}},
		{`INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload) VALUES ($1, 1, $2, 'user_message', $3, '', $4)`,
			[]any{id, user.ID, at, string(mp)}},
		{`INSERT INTO events (cursor, conversation_id, type, date, payload) SELECT last_cursor, id, 'user_message', $2, $3 FROM conversations WHERE id = $1`,
			[]any{id, at, string(ep)}},
		{`INSERT INTO agent_events (conversation_id, owner, type, date, payload) VALUES ($1, $2, 'created', $3, $4)`,
			[]any{id, owner, at, ap}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if _, _, err := sequence(ctx, conn); err != nil {
		t.Fatal(err)
	}

	s := openDSN(t, dsn) // applies 0006
	if n, err := s.AdoptConversations(ctx, "support"); err != nil || n != 1 {
		t.Fatalf("adopted %d, %v", n, err)
	}
	support, coder := s.ForAgent("support"), s.ForAgent("coder")
	rec, err := support.GetConversation(ctx, id)
	if err != nil || rec.Owner != owner || rec.Title != "old" {
		t.Fatalf("the default agent's conversation: %+v %v", rec, err)
	}
	list, _, err := support.ListConversations(ctx, owner, 10, "")
	if err != nil || len(list) != 1 {
		t.Fatalf("listed %v %v", list, err)
	}
	msgs, _, err := support.Messages(ctx, id, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 1 || agentik.JoinText(msgs[0].Content) != "hello from before agents" {
		t.Fatalf("journal %+v %v", msgs, err)
	}
	evs, err := support.AgentEvents(ctx, 0, 0)
	if err != nil || len(evs) != 1 || evs[0].ConversationID != id {
		t.Fatalf("agent events %+v %v", evs, err)
	}
	if _, err := coder.GetConversation(ctx, id); !agentik.IsNotFound(err) {
		t.Fatalf("another agent sees it: %v", err)
	}
	if evs, _ := coder.AgentEvents(ctx, 0, 0); len(evs) != 0 {
		t.Fatalf("another agent's stream has it: %+v", evs)
	}
}
