package main

// Several agentik processes on one PostgreSQL database (issue 8), through
// the real binary. The database comes from AGENTIK_TEST_DATABASE_URL; each
// test works in a schema of its own.

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentik/agentik/internal/testenv"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/agui"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/jackc/pgx/v5"
)

// pgSchema creates a schema for one test and returns a DSN selecting it.
// Without AGENTIK_TEST_DATABASE_URL the test is skipped, except in CI.
func pgSchema(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("AGENTIK_TEST_DATABASE_URL")
	if dsn == "" {
		testenv.Missing(t, "AGENTIK_TEST_DATABASE_URL is not set: the PostgreSQL tests do not run")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	schema := "agentik_cmd_" + strings.ReplaceAll(agentik.NewID(), "-", "")
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("AGENTIK_TEST_DATABASE_URL must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func send(t *testing.T, conv agentik.Conversation, text string) agentik.SendResult {
	t.Helper()
	r, err := conv.Send(context.Background(), agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	return r
}

// until reads s until an event satisfies ok, failing when the test's
// time runs out (testenv.Wait: a busy machine may take long, never forever).
func until(t *testing.T, s agentik.Stream[agentik.Event], what string, ok func(agentik.Event) bool) []agentik.Event {
	t.Helper()
	var seen []agentik.Event
	deadline := testenv.Wait(t).Done()
	for {
		select {
		case ev, open := <-s.C():
			if !open {
				t.Fatalf("stream ended before %s: %v", what, s.Err())
			}
			seen = append(seen, ev)
			if ok(ev) {
				return seen
			}
		case <-deadline:
			t.Fatalf("no %s before the test's deadline; saw %d events", what, len(seen))
		}
	}
}

// TestPostgresPostOnAStreamFromB: a conversation created and answered on
// process A streams live on process B — durable events read from the
// database, deltas carried by notifications — and B's agent-event stream
// sees it too.
func TestPostgresPostOnAStreamFromB(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Stream().Role().Content("Hello ", "from ", "A").Finish("stop").Done())
	_, cs := pgProcs(t, llm, 2)
	ctx := context.Background()
	ca, cb := cs[0], cs[1]

	agentEvents, err := cb.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer agentEvents.Close()
	info, err := ca.CreateConversation(ctx, agentik.CreateRequest{Title: "across"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-agentEvents.C():
		if ev.Type != agentik.AgentEvCreated || ev.Conversation == nil || ev.Conversation.ID != info.ID {
			t.Fatalf("agent event on B: %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("B's agent stream did not see the conversation created on A")
	}

	convB, err := cb.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := convB.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	convA, _ := ca.Conversation(ctx, info.ID)
	res := send(t, convA, "hi")
	seen := until(t, s, "end", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd })
	var types []string
	var text strings.Builder
	var prev int64
	for _, ev := range seen {
		// Deltas in a row are one: a process merges those it has not
		// sent yet (postgres.Bus).
		if ev.Type != agentik.EvAppendText || types[len(types)-1] != agentik.EvAppendText {
			types = append(types, ev.Type)
		}
		if ev.Type == agentik.EvAppendText {
			text.WriteString(ev.Text)
		}
		if ev.Cursor != 0 {
			if ev.Cursor <= prev {
				t.Fatalf("cursor %d after %d", ev.Cursor, prev)
			}
			prev = ev.Cursor
		}
	}
	got := strings.Join(types, ",")
	if got != "user_message,working,start_response,append_text,assistant_message,end" {
		t.Fatalf("B saw %s", got)
	}
	if text.String() != "Hello from A" || seen[0].Message.ID != res.MessageID || seen[len(seen)-1].ReplyTo != res.MessageID {
		t.Fatalf("B saw text %q, events %+v", text.String(), seen)
	}
	page, err := convB.Messages(ctx, agentik.MessagesRequest{})
	if err != nil || len(page.Messages) != 2 || page.Cursor != prev {
		t.Fatalf("journal on B: %+v, %v (last cursor seen %d)", page, err, prev)
	}

	// A second exchange on A while nobody on B listens, then a new
	// subscriber on B replays everything from the database: B's own view of
	// the conversation (loaded above) must not bound the replay.
	s.Close()
	llm.Enqueue(llmtest.Stream().Role().Content("again").Finish("stop").Done())
	sa, err := convA.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	second := send(t, convA, "again?")
	until(t, sa, "the second answer on A", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd })
	replay, err := convB.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	evs := until(t, replay, "the second answer replayed on B", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == second.MessageID
	})
	if len(evs) != 4 {
		t.Fatalf("replay on B: %d events, want 4", len(evs))
	}
}

func status(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPostgresDatabaseDown: while the database is unreachable /health/ready
// fails and writes answer 503 unavailable, storing nothing; once it is back
// the same process recovers without a restart.
func TestPostgresDatabaseDown(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Stream().Role().Content("echo " + r.LastUserText()).Finish("stop").Done()
	})
	px, dsn := proxied(t, pgSchema(t), 0)
	p := startProc(t, pgEnv(dsn, llm, "AGENTIK_DB_STATEMENT_TIMEOUT=5s")...)
	ctx := context.Background()
	client := httpapi.NewClient(p.url + "/agentik")
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{Title: "outage"})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	first := send(t, conv, "before")
	until(t, s, "the first answer", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == first.MessageID })
	s.Close()
	if code, body := status(t, "GET", p.url+"/health/ready", ""); code != 200 {
		t.Fatalf("ready while up: %d %s", code, body)
	}

	px.setDown(true)
	if code, body := status(t, "GET", p.url+"/health/ready", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("ready while down: %d %s", code, body)
	}
	msgURL := p.url + "/agentik/conversations/" + info.ID + "/messages"
	for _, req := range []struct{ method, url, body string }{
		{"POST", msgURL, `{"content":[{"type":"text","text":"during"}]}`},
		{"POST", p.url + "/agentik/conversations", `{"title":"x"}`},
		{"PATCH", p.url + "/agentik/conversations/" + info.ID, `{"title":"renamed"}`},
	} {
		code, body := status(t, req.method, req.url, req.body)
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		json.Unmarshal([]byte(body), &e)
		if code != http.StatusServiceUnavailable || e.Error.Code != agentik.EUnavailable {
			t.Fatalf("%s %s while down: %d %s", req.method, req.url, code, body)
		}
	}

	px.setDown(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := status(t, "GET", p.url+"/health/ready", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready 30s after the database came back\n%s", p.log())
		}
		time.Sleep(50 * time.Millisecond) // polling an external state, no event to wait on
	}
	s, err = conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := send(t, conv, "after")
	until(t, s, "the answer after recovery", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == after.MessageID })
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range page.Messages {
		texts = append(texts, m.Type+":"+agentik.JoinText(m.Content))
		if m.Seq != int64(len(texts)) {
			t.Fatalf("seq gap: %+v", page.Messages)
		}
	}
	want := "user_message:before,assistant_message:echo before,user_message:after,assistant_message:echo after"
	if strings.Join(texts, ",") != want {
		t.Fatalf("journal %v, want %s", texts, want)
	}
	if got, err := conv.Info(ctx); err != nil || got.Title != "outage" {
		t.Fatalf("title after outage: %+v, %v", got, err)
	}
}

// pgEnv is the environment of a process on database dsn that answers
// through llm, with extra settings after.
func pgEnv(dsn string, llm *llmtest.Server, extra ...string) []string {
	return append([]string{"AGENTIK_DATABASE_URL=" + dsn, "OPENAI_BASE_URL=" + llm.URL(), "OPENAI_MODEL=test"}, extra...)
}

// startProcs starts n agentik processes with env and returns them with a
// client each.
func startProcs(t testing.TB, n int, env ...string) ([]*proc, []*httpapi.Client) {
	var ps []*proc
	var cs []*httpapi.Client
	for range n {
		p := startProc(t, env...)
		ps = append(ps, p)
		cs = append(cs, httpapi.NewClient(p.url+"/agentik"))
	}
	return ps, cs
}

// pgProcs starts n agentik processes on one fresh schema, answering through
// llm, and returns them with a client each.
func pgProcs(t *testing.T, llm *llmtest.Server, n int, extra ...string) ([]*proc, []*httpapi.Client) {
	return startProcs(t, n, pgEnv(pgSchema(t), llm, extra...)...)
}

// pgProcsApp is pgProcs with every connection named app
// (application_name).
func pgProcsApp(t *testing.T, llm *llmtest.Server, n int, app string, extra ...string) ([]*proc, []*httpapi.Client) {
	return startProcs(t, n, pgEnv(withApp(pgSchema(t), app), llm, extra...)...)
}

func withApp(dsn, app string) string {
	u, _ := url.Parse(dsn)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// echo answers every request with "echo <last user text>".
func echo(r llmtest.Request) llmtest.Reply {
	return llmtest.Stream().Role().Content("echo ", r.LastUserText()).Finish("stop").Done()
}

// pausedModel is a scripted model, closed when the test ends, whose first
// answer streams "partial ", waits at gate, then streams rest; it echoes
// every later request.
func pausedModel(t *testing.T, rest string) (*llmtest.Server, *llmtest.Gate) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release) // before llm.Close: cleanups run last first
	var calls sync.Mutex
	first := true
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		calls.Lock()
		defer calls.Unlock()
		if first {
			first = false
			return llmtest.Stream().Role().Content("partial ").Pause(gate).Content(rest).Finish("stop").Done()
		}
		return echo(r)
	})
	return llm, gate
}

// acrossTwo creates a conversation through cs[0] and returns its id, the
// conversation through cs[0] (process A) and through cs[1] (process B),
// and B's live event stream, closed when the test ends.
func acrossTwo(t *testing.T, cs []*httpapi.Client) (id string, convA, convB agentik.Conversation, onB agentik.Stream[agentik.Event]) {
	t.Helper()
	ctx := context.Background()
	info, err := cs[0].CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	convA, _ = cs[0].Conversation(ctx, info.ID)
	convB, _ = cs[1].Conversation(ctx, info.ID)
	onB, err = convB.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { onB.Close() })
	return info.ID, convA, convB, onB
}

// closers maps each user message id to the ids of the messages that closed
// its turn (complete assistant answers and errors) and the interrupted events.
func closers(t *testing.T, conv agentik.Conversation) (users []agentik.Message, answers map[string][]agentik.Message) {
	t.Helper()
	page, err := conv.Messages(context.Background(), agentik.MessagesRequest{Limit: agentik.MaxMessagesLimit})
	if err != nil {
		t.Fatal(err)
	}
	answers = map[string][]agentik.Message{}
	for i, m := range page.Messages {
		if m.Seq != int64(i+1) {
			t.Fatalf("journal gap at seq %d", m.Seq)
		}
		switch {
		case m.Type == agentik.MsgUser:
			users = append(users, m)
		case m.ClosesTurn():
			answers[m.ReplyTo] = append(answers[m.ReplyTo], m)
		}
	}
	return users, answers
}

// TestPostgresOwnerAnswersAndInterruptAnywhere: a turn runs on A; a message
// posted to B is stored by B and answered after it, by the lease holder; an
// interrupt posted to B stops the turn running on A.
func TestPostgresOwnerAnswersAndInterruptAnywhere(t *testing.T) {
	llm, gate := pausedModel(t, "never")
	_, cs := pgProcs(t, llm, 2)
	ctx := context.Background()
	_, convA, convB, s := acrossTwo(t, cs)

	m1 := send(t, convA, "one")
	<-gate.Reached() // A streams the first answer
	until(t, s, "the partial text on B", func(ev agentik.Event) bool { return ev.Type == agentik.EvAppendText })
	m2 := send(t, convB, "two") // stored by B, queued behind A's turn
	if m2.Seq != m1.Seq+1 {
		t.Fatalf("seqs %d, %d", m1.Seq, m2.Seq)
	}
	// B rejects a message while a turn is open anywhere.
	if _, err := convB.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("no")}, IfBusy: agentik.BusyReject}); agentik.ErrorCode(err) != agentik.EBusy {
		t.Fatalf("reject on B while A runs a turn: %v", err)
	}
	ok, err := convB.Interrupt(ctx)
	if err != nil || !ok {
		t.Fatalf("interrupt through B: %v, %v", ok, err)
	}
	until(t, s, "the interrupted event", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvInterrupted && ev.ReplyTo == m1.MessageID && ev.Reason == agentik.ReasonUser
	})
	until(t, s, "the answer to the message posted on B", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == m2.MessageID
	})
	users, answers := closers(t, convA)
	if len(users) != 2 || len(answers[m1.MessageID]) != 0 || len(answers[m2.MessageID]) != 1 ||
		agentik.JoinText(answers[m2.MessageID][0].Content) != "echo two" {
		t.Fatalf("journal: users %d, answers %+v", len(users), answers)
	}
}

// TestPostgresFailover: the process running a turn is killed; another
// process answers the turn within seconds, and every acknowledged message
// exactly once.
func TestPostgresFailover(t *testing.T) {
	llm, gate := pausedModel(t, "never")
	ps, cs := pgProcs(t, llm, 2)
	_, convA, convB, s := acrossTwo(t, cs)
	acked := []agentik.SendResult{send(t, convA, "one")}
	<-gate.Reached()
	acked = append(acked, send(t, convA, "two"), send(t, convB, "three"))
	killed := time.Now()
	ps[0].cmd.Process.Kill()
	<-ps[0].done
	until(t, s, "the last answer, from B", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == acked[2].MessageID
	})
	t.Logf("failover: all turns answered %v after the kill", time.Since(killed).Round(time.Millisecond))
	users, answers := closers(t, convB)
	if len(users) != len(acked) {
		t.Fatalf("%d user messages, %d acknowledged", len(users), len(acked))
	}
	for i, u := range users {
		if u.ID != acked[i].MessageID || len(answers[u.ID]) != 1 || agentik.JoinText(answers[u.ID][0].Content) != "echo "+agentik.JoinText(u.Content) {
			t.Fatalf("message %d (%s): answers %+v", i, agentik.JoinText(u.Content), answers[u.ID])
		}
	}
}

// converse posts perConv messages to each of convs conversations, spreading
// them over the processes, and waits until every one is answered. It
// returns the conversations and the number of turns.
func converse(t *testing.T, cs []*httpapi.Client, convs, perConv int) ([]string, int) {
	return converseRouted(t, cs, convs, perConv, false)
}

// converseRouted is converse; sticky sends each conversation's messages to
// the process that created it and watches it there, as a load balancer with
// session affinity would, instead of spreading them over the processes.
func converseRouted(t *testing.T, cs []*httpapi.Client, convs, perConv int, sticky bool) ([]string, int) {
	route := func(i, j int) *httpapi.Client {
		if sticky {
			return cs[i%len(cs)]
		}
		return cs[(i+j)%len(cs)]
	}
	ctx := context.Background()
	ids := make([]string, convs)
	for i := range ids {
		info, err := cs[i%len(cs)].CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = info.ID
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			watch, _ := route(i, 1).Conversation(ctx, id)
			s, err := watch.Events(ctx, agentik.LiveOnly)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for j := range perConv {
				conv, _ := route(i, j).Conversation(ctx, id)
				if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(fmt.Sprintf("m%d", j))}}); err != nil {
					t.Error(err)
					return
				}
			}
			answered := 0
			deadline := time.After(60 * time.Second)
			for answered < perConv {
				select {
				case ev, ok := <-s.C():
					if !ok {
						t.Errorf("stream of %s ended: %v", id, s.Err())
						return
					}
					if ev.Type == agentik.EvAssistantMessage {
						answered++
					}
				case <-deadline:
					t.Errorf("%s: %d of %d answered", id, answered, perConv)
					return
				}
			}
		})
	}
	wg.Wait()
	return ids, convs * perConv
}

// TestPostgresConcurrentConversations: 20 conversations spread over three
// processes, each message posted to another process: every message is
// answered exactly once, in order.
func TestPostgresConcurrentConversations(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(echo)
	_, cs := pgProcs(t, llm, 3, unlimited...)
	ids, _ := converse(t, cs, 20, 4)
	if t.Failed() {
		return
	}
	for _, id := range ids {
		conv, _ := cs[0].Conversation(context.Background(), id)
		users, answers := closers(t, conv)
		if len(users) != 4 {
			t.Fatalf("%s: %d user messages", id, len(users))
		}
		var last int64
		for _, u := range users {
			a := answers[u.ID]
			if len(a) != 1 || agentik.JoinText(a[0].Content) != "echo "+agentik.JoinText(u.Content) {
				t.Fatalf("%s: %s answered %+v", id, agentik.JoinText(u.Content), a)
			}
			if a[0].Seq < last {
				t.Fatalf("%s: answers out of order", id)
			}
			last = a[0].Seq
		}
	}
}

// TestPostgresTurnsPerSecond measures turns/s with 1, 2 and 3 processes on
// one database: AGENTIK_BENCH_CONVS conversations (default 20), each with
// AGENTIK_BENCH_TURNS messages posted at once, every message posted to
// another process (AGENTIK_BENCH_STICKY=1: all of a conversation's to one),
// an instant scripted model. The three configurations run
// in turn, AGENTIK_BENCH_ROUNDS times (default 3), so that a machine whose
// load changes during the run affects them alike; the median of each is
// reported. AGENTIK_BENCH_RTT (a duration, e.g. 2ms) puts the processes
// behind a proxy that adds that round trip to every database exchange. It
// runs only when AGENTIK_BENCH_TURNS is set, as a benchmark, not a check:
//
//	AGENTIK_BENCH_TURNS=25 go test -run TurnsPerSecond -v ./cmd/agentik
//	AGENTIK_BENCH_TURNS=10 AGENTIK_BENCH_CONVS=100 AGENTIK_BENCH_RTT=2ms go test -run TurnsPerSecond -v ./cmd/agentik
func TestPostgresTurnsPerSecond(t *testing.T) {
	per, _ := strconv.Atoi(os.Getenv("AGENTIK_BENCH_TURNS"))
	if per <= 0 {
		t.Skip("set AGENTIK_BENCH_TURNS to run the benchmark")
	}
	convs := benchInt(t, "AGENTIK_BENCH_CONVS", 20)
	rounds := benchInt(t, "AGENTIK_BENCH_ROUNDS", 3)
	// AGENTIK_BENCH_IDLE more processes share the database but are sent
	// nothing: what a process costs for the cluster's traffic alone.
	idle := 0
	if os.Getenv("AGENTIK_BENCH_IDLE") != "" {
		idle = benchInt(t, "AGENTIK_BENCH_IDLE", 0)
	}
	// AGENTIK_BENCH_WARMUP turns per conversation run first, unmeasured, on
	// other conversations of the same processes: the figures are then those
	// of processes whose database connections are open and warm, not of
	// processes just started.
	warm := 0
	if os.Getenv("AGENTIK_BENCH_WARMUP") != "" {
		warm = benchInt(t, "AGENTIK_BENCH_WARMUP", 0)
	}
	// AGENTIK_BENCH_STICKY=1 sends each conversation's traffic to one
	// process (converseRouted) instead of spreading it over all of them.
	sticky := os.Getenv("AGENTIK_BENCH_STICKY") != ""
	// AGENTIK_BENCH_STATEMENTS=N logs the N statements that took the most
	// time in each measured run, from pg_stat_statements (which the
	// database must load: shared_preload_libraries; reset per run).
	statements := 0
	if os.Getenv("AGENTIK_BENCH_STATEMENTS") != "" {
		statements = benchInt(t, "AGENTIK_BENCH_STATEMENTS", 0)
	}
	// AGENTIK_BENCH_CPUPROFILE names a directory: every process of the runs
	// without a round trip writes its CPU profile there
	// (round<R>-<build>-procs<N>-<pid>.pprof).
	profiles := os.Getenv("AGENTIK_BENCH_CPUPROFILE")
	var rtt time.Duration
	if v := os.Getenv("AGENTIK_BENCH_RTT"); v != "" {
		var err error
		if rtt, err = time.ParseDuration(v); err != nil || rtt < 0 {
			t.Fatalf("AGENTIK_BENCH_RTT=%q: %v", v, err)
		}
	}
	// AGENTIK_BENCH_BASELINE names another agentik binary (an older build)
	// measured in the same rounds, for a before/after under the same load.
	builds := []string{binary}
	if b := os.Getenv("AGENTIK_BENCH_BASELINE"); b != "" {
		builds = append(builds, b)
	}
	defer func(b string) { binary = b }(binary)
	// AGENTIK_BENCH_PROCS lists the process counts to measure ("1,3").
	procs := []int{1, 2, 3}
	if v := os.Getenv("AGENTIK_BENCH_PROCS"); v != "" {
		procs = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				t.Fatalf("AGENTIK_BENCH_PROCS=%q: want positive numbers separated by commas", v)
			}
			procs = append(procs, n)
		}
	}
	type key struct {
		build string
		n     int
	}
	rates := map[key][]float64{}
	cpu := map[key][]float64{}
	dbcpu := map[key][]float64{}
	for r := range rounds {
		for _, build := range builds {
			for _, n := range procs {
				name := "new"
				if build != builds[0] {
					name = "baseline"
				}
				t.Run(fmt.Sprintf("round=%d/%s/procs=%d", r+1, name, n), func(t *testing.T) {
					binary = build // startProc runs it; subtests run one at a time
					llm := llmtest.NewServer()
					defer llm.Close()
					llm.Handle(echo)
					// Every connection of the run carries one application_name,
					// so that the database's CPU for it can be read.
					app := "agentik-bench-" + agentik.NewID()[:8]
					var ps []*proc
					var cs []*httpapi.Client
					if rtt > 0 {
						ps, cs = pgProcsVia(t, llm, n, rtt/2, app)
					} else {
						env := slices.Clone(unlimited)
						if g := os.Getenv("AGENTIK_BENCH_GOMAXPROCS"); g != "" {
							env = append(env, "GOMAXPROCS="+g)
						}
						if profiles != "" {
							env = append(env, "AGENTIK_CPUPROFILE="+filepath.Join(profiles, fmt.Sprintf("round%d-%s-procs%d-%%p.pprof", r+1, name, n)))
						}
						ps, cs = pgProcsApp(t, llm, n+idle, app, env...)
						cs = cs[:n]
					}
					busy, idlers := ps[:len(cs)], ps[len(cs):]
					if warm > 0 {
						converseRouted(t, cs, convs, warm, sticky) // unmeasured: connections opened, statements prepared
					}
					if statements > 0 {
						dbExec(t, "SELECT pg_stat_statements_reset()")
					}
					before, idleBefore, dbBefore, selfBefore := procsCPU(busy), procsCPU(idlers), dbCPU(t, app, ps), selfCPU()
					start := time.Now()
					_, turns := converseRouted(t, cs, convs, per, sticky)
					d := time.Since(start)
					used, idleUsed, dbUsed, selfUsed := procsCPU(busy)-before, procsCPU(idlers)-idleBefore, dbCPU(t, app, ps)-dbBefore, selfCPU()-selfBefore
					rate := float64(turns) / d.Seconds()
					k := key{name, n}
					rates[k] = append(rates[k], rate)
					perTurn := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(turns) }
					cpu[k] = append(cpu[k], perTurn(used))
					dbcpu[k] = append(dbcpu[k], perTurn(dbUsed))
					t.Logf("%s, %d processes: %d turns in %v = %.0f turns/s; CPU per turn: agentik %.0f µs, PostgreSQL backends %.0f µs, this test (clients and model) %.0f µs; %d database connections",
						name, n, turns, d.Round(time.Millisecond), rate, perTurn(used), perTurn(dbUsed), perTurn(selfUsed), len(dbPIDs(t, app, ps)))
					if len(idlers) > 0 {
						t.Logf("%s, %d processes: %d idle processes used %.0f µs per turn", name, n, len(idlers), perTurn(idleUsed))
					}
					if statements > 0 {
						logStatements(t, statements, turns)
					}
					if profiles != "" {
						// A profile is written on graceful shutdown only.
						for _, p := range ps {
							p.cmd.Process.Signal(syscall.SIGTERM)
							<-p.done
						}
					}
				})
			}
		}
	}
	median := func(xs []float64) float64 {
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	for _, name := range []string{"new", "baseline"} {
		for _, n := range procs {
			k := key{name, n}
			if len(rates[k]) == 0 {
				continue
			}
			t.Logf("median %s, %d conversations, round trip +%v: %d processes %.0f turns/s (all: %.0f); CPU per turn: agentik %.0f µs, PostgreSQL %.0f µs",
				name, convs, rtt, n, median(rates[k]), rates[k], median(cpu[k]), median(dbcpu[k]))
		}
	}
}

// dbConn is a connection of the test's own to the test database, closed
// when the test ends.
func dbConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), os.Getenv("AGENTIK_TEST_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// dbExec runs one statement on a connection of its own.
func dbExec(t *testing.T, q string) {
	t.Helper()
	if _, err := dbConn(t).Exec(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// logStatements logs the n statements of pg_stat_statements that took the
// most execution time (waits for locks and for WAL flushes included), per
// turn.
func logStatements(t *testing.T, n, turns int) {
	t.Helper()
	rows, err := dbConn(t).Query(context.Background(), `SELECT calls, total_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
		FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT $1`, n)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var calls int64
		var ms float64
		var q string
		if err := rows.Scan(&calls, &ms, &q); err != nil {
			t.Fatal(err)
		}
		t.Logf("statement: %5.2f calls, %5.0f µs per turn: %s", float64(calls)/float64(turns), ms*1000/float64(turns), q)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// procsCPU is the CPU time the processes used so far (Linux; 0 elsewhere).
func procsCPU(ps []*proc) time.Duration {
	var total time.Duration
	for _, p := range ps {
		total += pidCPU(p.cmd.Process.Pid)
	}
	return total
}

// selfCPU is the CPU time this test process used so far (Linux; 0
// elsewhere): the load generator (HTTP clients, SSE readers) and the
// scripted model.
func selfCPU() time.Duration { return pidCPU(os.Getpid()) }

// dbCPU is the CPU time used so far by the database's backends serving
// connections named app and the lease connections of processes ps (Linux, a
// database on this machine; 0 otherwise). A backend started since the last
// call counts whole: its start and warm-up are part of the run.
func dbCPU(t *testing.T, app string, ps []*proc) time.Duration {
	var total time.Duration
	for _, pid := range dbPIDs(t, app, ps) {
		total += pidCPU(int(pid))
	}
	return total
}

// dbPIDs lists the database's backends serving connections named app and
// the lease connections of processes ps (named after the process: "agentik
// <host>:<pid>").
func dbPIDs(t *testing.T, app string, ps []*proc) []int32 {
	host, _ := os.Hostname()
	var leases []string
	for _, p := range ps {
		leases = append(leases, fmt.Sprintf("agentik %s:%d", host, p.cmd.Process.Pid))
	}
	rows, err := dbConn(t).Query(context.Background(), "SELECT pid FROM pg_stat_activity WHERE application_name = $1 OR application_name = ANY($2)", app, leases)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// pidCPU is the CPU time process pid used so far (Linux; 0 elsewhere).
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th, in clock ticks (100 per second).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// unlimited lifts the per-principal limits (on by default) for tests that
// create conversations and post messages faster than a person would.
var unlimited = []string{"AGENTIK_CONVERSATIONS_PER_MINUTE=0", "AGENTIK_MESSAGES_PER_MINUTE=0", "AGENTIK_MAX_CONCURRENT_TURNS=0"}

func benchInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// pgProcsVia is pgProcs with every process reaching the database through
// its own proxy that delays each direction by delay.
func pgProcsVia(t *testing.T, llm *llmtest.Server, n int, delay time.Duration, app string) ([]*proc, []*httpapi.Client) {
	dsn := withApp(pgSchema(t), app)
	var ps []*proc
	var cs []*httpapi.Client
	for range n {
		_, via := proxied(t, dsn, delay)
		p, c := startProcs(t, 1, pgEnv(via, llm, unlimited...)...)
		ps, cs = append(ps, p...), append(cs, c...)
	}
	return ps, cs
}

// TestPostgresJoinOnAnotherProcess: a subscriber joining through B a turn
// that runs on A gets working and the partial text so far first, and B's
// conversation info and list say the conversation is working until the
// turn ends.
func TestPostgresJoinOnAnotherProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Reasoning("think ").Content("partial ", "text ").Pause(gate).Content("done").Finish("stop").Done())
	_, cs := pgProcs(t, llm, 2)
	ctx := context.Background()
	_, convA, convB, watch := acrossTwo(t, cs)
	m := send(t, convA, "hi")
	<-gate.Reached()
	// B has seen the deltas so far once its own live stream has them (in
	// as many pieces as A sent: A merges the deltas it has not sent yet).
	var sofar strings.Builder
	until(t, watch, "the partial text on B", func(ev agentik.Event) bool {
		if ev.Type == agentik.EvAppendText {
			sofar.WriteString(ev.Text)
		}
		return strings.HasSuffix(sofar.String(), "partial text ")
	})

	join, err := convB.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer join.Close()
	first := until(t, join, "the join", func(ev agentik.Event) bool { return ev.Type == agentik.EvAppendText })
	if len(first) != 3 || first[0].Type != agentik.EvWorking || first[0].ReplyTo != m.MessageID ||
		first[1].Type != agentik.EvStartResponse || first[2].Text != "partial text " {
		t.Fatalf("join on B: %+v", first)
	}
	if got, err := convB.Info(ctx); err != nil || !got.Working {
		t.Fatalf("info on B while A answers: %+v, %v", got, err)
	}
	list, err := cs[1].ListConversations(ctx, agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 1 || !list.Conversations[0].Working {
		t.Fatalf("list on B while A answers: %+v, %v", list, err)
	}
	gate.Release()
	rest := until(t, join, "the end", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd })
	var text strings.Builder
	for _, ev := range rest {
		if ev.Type == agentik.EvAppendText {
			text.WriteString(ev.Text)
		}
	}
	if text.String() != "done" || rest[len(rest)-2].Type != agentik.EvAssistantMessage {
		t.Fatalf("after the join: %+v", rest)
	}
	if got, err := convB.Info(ctx); err != nil || got.Working {
		t.Fatalf("info on B after the turn: %+v, %v", got, err)
	}
}

// aguiRun posts one AG-UI run and returns the types of the events it
// streamed, in order.
func aguiRun(t *testing.T, url string, in map[string]any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest("POST", url+"/agui", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("AG-UI run: %d %s", resp.StatusCode, body)
	}
	var evs []map[string]any
	for line := range strings.Lines(string(body)) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &ev); err != nil {
			t.Fatalf("AG-UI event %q: %v", data, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// aguiText is the text an AG-UI run streamed: its TEXT_MESSAGE_CONTENT
// deltas.
func aguiText(evs []map[string]any) string {
	var text strings.Builder
	for _, ev := range evs {
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			text.WriteString(ev["delta"].(string))
		}
	}
	return text.String()
}

// pickColor is an AG-UI thread with one frontend tool, pick_color: its
// first run ends with the model calling the tool (as call_ui), its second
// posts the user's pick, "blue", as the result.
type pickColor struct{ thread string }

// input is the run runID: the user's message, then more.
func (pc pickColor) input(runID string, more ...map[string]any) map[string]any {
	user := map[string]any{"id": "u1", "role": "user", "content": "pick a color"}
	tool := map[string]any{"name": "pick_color", "description": "Ask the user to pick a color",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}
	msgs := append([]map[string]any{user}, more...)
	return map[string]any{"threadId": pc.thread, "runId": runID, "messages": msgs, "tools": []any{tool},
		"context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}}
}

// ask posts the first run to the process at url and fails t (naming the
// run what) unless the run called pick_color and finished.
func (pc pickColor) ask(t *testing.T, url, what string) {
	t.Helper()
	first := aguiRun(t, url, pc.input("r1"))
	var called bool
	for _, ev := range first {
		called = called || (ev["type"] == "TOOL_CALL_START" && ev["toolCallName"] == "pick_color")
	}
	if !called || first[len(first)-1]["type"] != "RUN_FINISHED" {
		t.Fatalf("%s: %v", what, first)
	}
}

// answer posts the second run, with the tool's result, to the process at
// url and returns its events.
func (pc pickColor) answer(t *testing.T, url string) []map[string]any {
	t.Helper()
	assistant := map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{
		"id": "call_ui", "type": "function", "function": map[string]any{"name": "pick_color", "arguments": "{}"}}}}
	result := map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_ui", "content": "blue"}
	return aguiRun(t, url, pc.input("r2", assistant, result))
}

// carriesPick reports whether the model was asked exactly twice, the second
// time with the pick_color result.
func carriesPick(reqs []llmtest.Request) bool {
	return len(reqs) == 2 && strings.Contains(string(reqs[1].Raw), `"tool_call_id":"call_ui"`) && strings.Contains(string(reqs[1].Raw), "blue")
}

// TestPostgresClientToolResultsOnAnotherProcess: an AG-UI run on A ends
// waiting for a frontend tool's result; the result is posted in a run to
// B, which continues the turn (the waiting round is rebuilt from the
// journal). A plain message posted to A meanwhile would have abandoned it.
func TestPostgresClientToolResultsOnAnotherProcess(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_ui")), llmtest.Text("you picked blue"))
	ps, _ := pgProcs(t, llm, 2)
	pc := pickColor{thread: agentik.NewID()}
	pc.ask(t, ps[0].url, "run 1 on A")
	second := pc.answer(t, ps[1].url)
	if aguiText(second) != "you picked blue" || second[len(second)-1]["type"] != "RUN_FINISHED" {
		t.Fatalf("run 2 on B: %v", second)
	}
	if reqs := llm.Requests(); !carriesPick(reqs) {
		t.Fatalf("%d model calls; the second did not carry the tool result", len(reqs))
	}
	// The thread lives at the id AG-UI derives from the caller and its name.
	conv, err := httpapi.NewClient(ps[0].url+"/agentik").Conversation(context.Background(), agui.ConversationID("", pc.thread))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := journalTypes(t, conv); got != "user_message,tool_call,tool_result,assistant_message" {
		t.Fatalf("journal %s", got)
	}
}

// journalTypes reads the first page of conv's journal: its messages' types
// joined by commas, and the messages.
func journalTypes(t *testing.T, conv agentik.Conversation) (string, []agentik.Message) {
	t.Helper()
	page, err := conv.Messages(context.Background(), agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	types := make([]string, len(page.Messages))
	for i, m := range page.Messages {
		types[i] = m.Type
	}
	return strings.Join(types, ","), page.Messages
}

// TestPostgresRestartInterrupt: with AGENTIK_ON_RESTART=interrupt, a turn
// cut short by its process's death is closed with interrupted{restart} by
// the process that takes it over, not answered again; a message that was
// only queued behind it is answered.
func TestPostgresRestartInterrupt(t *testing.T) {
	llm, gate := pausedModel(t, "never")
	ps, cs := pgProcs(t, llm, 2, "AGENTIK_ON_RESTART=interrupt")
	_, convA, convB, s := acrossTwo(t, cs)
	one := send(t, convA, "one")
	<-gate.Reached()
	two := send(t, convB, "two")
	ps[0].cmd.Process.Kill()
	<-ps[0].done
	until(t, s, "the restart interrupt", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvInterrupted && ev.ReplyTo == one.MessageID && ev.Reason == agentik.ReasonRestart
	})
	until(t, s, "the answer to the queued message", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == two.MessageID
	})
	_, answers := closers(t, convB)
	if len(answers[one.MessageID]) != 0 || len(answers[two.MessageID]) != 1 || agentik.JoinText(answers[two.MessageID][0].Content) != "echo two" {
		t.Fatalf("answers %+v", answers)
	}
}

// TestPostgresLeaseConnectionKilled: the lease connection of the process
// running a turn is ended on the server while the turn streams (the
// process and its pool live on). Whether that process notices first or
// another takes the lease first, the turn is answered exactly once: a
// write of the old lease holder is refused by the lease epoch (fencing).
// postgres.TestFencedTurnAnsweredOnce provokes the second order for sure.
func TestPostgresLeaseConnectionKilled(t *testing.T) {
	llm, gate := pausedModel(t, "late")
	ps, cs := pgProcs(t, llm, 2)
	ctx := context.Background()
	id, convA, convB, s := acrossTwo(t, cs)
	m := send(t, convA, "one")
	<-gate.Reached()

	var dsn string
	for _, kv := range ps[0].cmd.Env {
		if v, ok := strings.CutPrefix(kv, "AGENTIK_DATABASE_URL="); ok {
			dsn = v
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed bool
	err = conn.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('agentik lease ' || current_schema() || ' ' || $1, 0)`,
		id).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminate A's lease session: %v, %v", killed, err)
	}
	until(t, s, "the answer, from B", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == m.MessageID
	})
	gate.Release()
	// A drains: its turn ends, refused or interrupted, before it exits.
	ps[0].cmd.Process.Signal(syscall.SIGTERM)
	<-ps[0].done
	users, answers := closers(t, convB)
	if len(users) != 1 || len(answers[m.MessageID]) != 1 || agentik.JoinText(answers[m.MessageID][0].Content) != "echo one" {
		t.Fatalf("answers %+v\nA's log:\n%s", answers, ps[0].log())
	}
	page, _ := convB.Messages(ctx, agentik.MessagesRequest{})
	if len(page.Messages) != 2 {
		t.Fatalf("journal %+v", page.Messages)
	}
}
