package postgres

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/internal/branchtest"
	"github.com/agentik/agentik/llmtest"
)

// TestBranching runs the branching scenario (SPEC §18) through the native
// API's client on an engine over PostgreSQL.
func TestBranching(t *testing.T) {
	dsn := freshSchema(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	n := newNode(t, dsn, llm, nodeOptions{})
	srv := httptest.NewServer(httpapi.NewHandler(n.eng, httpapi.Options{}))
	defer srv.Close()
	branchtest.Run(t, httpapi.NewClient(srv.URL+httpapi.DefaultPrefix), llm)
}

// TestBranchingWhileBusy runs SPEC §18's busy rule (regenerate per
// if_busy, no head move while a turn runs) on PostgreSQL.
func TestBranchingWhileBusy(t *testing.T) {
	dsn := freshSchema(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	n := newNode(t, dsn, llm, nodeOptions{})
	srv := httptest.NewServer(httpapi.NewHandler(n.eng, httpapi.Options{}))
	defer srv.Close()
	branchtest.RunBusy(t, httpapi.NewClient(srv.URL+httpapi.DefaultPrefix), llm)
}

// TestEditWhileAnotherProcessRuns: an edit posted to one process while
// another runs a turn is stored at once (its 202), the running turn ends on
// its own branch, then the edit is answered on the new one — the model
// given exactly the new head path — and every process reads that path.
func TestEditWhileAnotherProcessRuns(t *testing.T) {
	dsn := freshSchema(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	var seen [][]string // what the model saw, per request after the gated one
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		<-mu
		defer func() { mu <- struct{}{} }()
		var saw []string
		for _, m := range r.Messages {
			if m.Role == "user" || m.Role == "assistant" {
				saw = append(saw, m.Role+":"+m.Text())
			}
		}
		seen = append(seen, saw)
		if r.LastUserText() == "b" {
			return llmtest.Stream().Role().Content("slow ").Pause(gate).Content("b").Finish("stop").Done()
		}
		return echo(r)
	})
	a := newNode(t, dsn, llm, nodeOptions{})
	b := newNode(t, dsn, llm, nodeOptions{})
	ctx := context.Background()
	_, cs := sharedConversation(t, ctx, a, b)
	evA := liveEvents(t, ctx, cs[0])
	sendText(t, cs[0], "a")
	waitFor(t, evA, "the first answer", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd })
	sendText(t, cs[0], "b") // 3, answered by a gated turn on a
	<-gate.Reached()

	// The edit of 3, posted to b while a runs 3's turn: 5 after 2.
	res, err := cs[1].Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("b2")}, Parent: ptrTo(int64(2))})
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq != 4 {
		t.Fatalf("edit stored as %d, want 4 (the running turn has not answered yet)", res.Seq)
	}
	gate.Release()
	waitFor(t, evA, "the edit's answer", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID
	})
	for i, c := range cs {
		page, err := c.Messages(ctx, agentik.MessagesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range page.Messages {
			got = append(got, agentik.JoinText(m.Content))
		}
		want := []string{"a", "echo a", "b2", "echo b2"}
		if !slices.Equal(got, want) {
			t.Fatalf("process %d reads the head path %q, want %q", i, got, want)
		}
		all, err := c.Messages(ctx, agentik.MessagesRequest{Branch: agentik.BranchAll})
		if err != nil || len(all.Messages) != 6 {
			t.Fatalf("process %d: %d messages in the journal (%v), want 6", i, len(all.Messages), err)
		}
	}
	<-mu
	last := seen[len(seen)-1]
	mu <- struct{}{}
	if want := []string{"user:a", "assistant:echo a", "user:b2"}; !slices.Equal(last, want) {
		t.Fatalf("the model saw %q for the edit, want %q", last, want)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestMigrationToBranches: a schema before the message tree (every
// migration before the *_branches one), holding a conversation written
// with that version's columns, migrates on Open into one path: parents
// seq-1, the head on the last message; its open turn stays open and new
// messages follow the head.
func TestMigrationToBranches(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	exec := schemaBefore(t, dsn, "_branches.sql")
	id := agentik.NewID()
	at := time.Now().UTC().Truncate(time.Millisecond)
	date := agentik.TimeOf(at)
	u1 := agentik.Message{ID: agentik.NewID(), ConversationID: id, Seq: 1, Date: date, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("one")}}
	a2 := agentik.Message{ID: agentik.NewID(), ConversationID: id, Seq: 2, Date: date, Type: agentik.MsgAssistant, Content: []agentik.Content{agentik.Text("two")}, ReplyTo: u1.ID}
	u3 := agentik.Message{ID: agentik.NewID(), ConversationID: id, Seq: 3, Date: date, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("three")}}
	exec(`INSERT INTO conversations (id, owner, title, temporal, created_at, updated_at, next_seq, last_cursor)
		VALUES ($1, 'alice', '', false, $2, $2, 4, 0)`, id, at)
	for _, m := range []agentik.Message{u1, a2, u3} {
		mp, _ := json.Marshal(m)
		ep, _ := json.Marshal(agentik.MessageEvent(&m))
		exec(`INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, closed, payload) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, m.Seq, m.ID, m.Type, at, m.ReplyTo, m.ID == u1.ID, string(mp))
		exec(`WITH c AS (UPDATE conversations SET last_cursor = nextval('event_cursors') WHERE id = $1 RETURNING last_cursor)
			INSERT INTO events (cursor, conversation_id, type, date, payload) SELECT last_cursor, $1, $2, $3, $4 FROM c`,
			id, m.Type, at, string(ep))
	}

	s := openDSN(t, dsn) // migrates
	rec, err := s.GetConversation(ctx, id)
	if err != nil || rec.Head != 3 {
		t.Fatalf("head %d, %v; want 3", rec.Head, err)
	}
	msgs, _, err := s.Messages(ctx, id, agentik.MessagesRequest{})
	if err != nil || len(msgs) != 3 {
		t.Fatalf("head path: %d messages, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) || m.Parent != int64(i) || m.Siblings != nil {
			t.Fatalf("message %d: seq %d parent %d siblings %v", i, m.Seq, m.Parent, m.Siblings)
		}
	}
	open, err := s.OpenTurnsOf(ctx, id)
	if err != nil || len(open) != 1 || open[0].ID != u3.ID {
		t.Fatalf("open turns %v, %v; want the old open one", open, err)
	}
	a4 := agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgAssistant, ReplyTo: u3.ID, Content: []agentik.Content{agentik.Text("four")}}
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{agentik.MessageEvent(&a4)}}); err != nil {
		t.Fatal(err)
	}
	if a4.Seq != 4 || a4.Parent != 3 {
		t.Fatalf("new message seq %d parent %d, want 4 after 3", a4.Seq, a4.Parent)
	}
}
