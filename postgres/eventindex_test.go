package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// TestMigrationToFewerEventIndexes: a store of the version before 0021,
// with events of two conversations and agent events of no agent (before
// agents), two numbered and one waiting for its number, migrates on Open.
// Its events read as before; adopted, the agent events come in cursor
// order, the waiting one numbered after the others. Every read of the two
// tables is answered from an index that starts with the conversation or
// the agent, the paged ones without a sort.
func TestMigrationToFewerEventIndexes(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	exec := schemaBefore(t, dsn, "_fewer_event_indexes.sql")
	at := time.Now().UTC().Truncate(time.Millisecond)
	convs := []string{agentik.NewID(), agentik.NewID()}
	for i := range 6 { // three events each, their cursors interleaved
		m := agentik.Message{ID: agentik.NewID(), ConversationID: convs[i%2], Seq: int64(i/2 + 1), Date: agentik.TimeOf(at),
			Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("m")}}
		ep, _ := json.Marshal(agentik.MessageEvent(&m))
		exec(`INSERT INTO events (cursor, conversation_id, type, date, payload) VALUES (nextval('event_cursors'), $1, 'user_message', $2, $3)`,
			m.ConversationID, at, string(ep))
	}
	touched := func(id string) {
		ap, _ := storeutil.AgentPayload(&agentik.AgentEvent{Date: agentik.TimeOf(at), Type: agentik.AgentEvTouched, ConversationID: id, Owner: "o"})
		exec(`INSERT INTO agent_events (conversation_id, owner, type, date, payload) VALUES ($1, 'o', 'touched', $2, $3)`, id, at, ap)
	}
	touched(convs[1])
	touched(convs[0])
	exec(qSequence, 100)
	touched(convs[1]) // waits for its number

	s := openDSN(t, dsn) // applies 0021
	for _, id := range convs {
		evs, err := s.Events(ctx, id, 0, 10)
		if err != nil || len(evs) != 3 {
			t.Fatalf("events of %s: %d, %v", id, len(evs), err)
		}
		for i, ev := range evs {
			if ev.ConversationID != id || (i > 0 && ev.Cursor <= evs[i-1].Cursor) {
				t.Fatalf("events of %s: %+v", id, evs)
			}
		}
	}
	if _, err := s.AdoptConversations(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	aevs, err := s.ForAgent("a").AgentEvents(ctx, 0, 10)
	if err != nil || len(aevs) != 3 {
		t.Fatalf("agent events: %d, %v", len(aevs), err)
	}
	for i, want := range []string{convs[1], convs[0], convs[1]} {
		if aevs[i].ConversationID != want || (i > 0 && aevs[i].Cursor <= aevs[i-1].Cursor) {
			t.Fatalf("agent events %+v", aevs)
		}
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q      string
		args   []any
		key    string // the column its index condition starts with
		sorted bool   // sorts what its index scans found (bounded by its pages)
	}{
		{reads.Events, []any{convs[0], 0, 10}, "conversation_id", false},
		{reads.EventsJSON, []any{convs[0], 0, 10}, "conversation_id", false},
		{qEventsAfter, []any{convs, []int64{0, 0}, []int64{100, 100}, 10}, "conversation_id", true},
		{qAgentEvents, []any{0, 10, "a"}, "agent_id", false},
		{qAgentEventsRange, []any{0, 100, 10, "a"}, "agent_id", false},
		{qAdoptAgentEvents, []any{"a"}, "agent_id", false},
		// The waiting events are few: their partial index, filtered.
		{qAdoptUnnumbered, []any{"a"}, "", false},
	} {
		var plan []string
		rows, err := conn.Query(ctx, "EXPLAIN "+c.q, c.args...)
		if err != nil {
			t.Fatalf("explain %s: %v", c.q, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		if strings.Contains(p, "Seq Scan on events") || strings.Contains(p, "Seq Scan on agent_events") ||
			(!c.sorted && strings.Contains(p, "Sort")) || (c.key != "" && !strings.Contains(p, "Index Cond: (("+c.key)) {
			t.Errorf("%s\n%s", strings.Join(strings.Fields(c.q), " "), p)
		}
	}
}
