package postgres

// Engines sharing one database in one test process: each node has its own
// pool, Bus and Coordinator (its own lock session), as separate processes
// would, so a node's lease connection can be killed alone and scan
// intervals chosen per node.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/tools"
	"github.com/jackc/pgx/v5"
)

type node struct {
	store *Store
	bus   *Bus
	coord *Coordinator
	eng   *engine.Engine
}

type nodeOptions struct {
	scan      time.Duration // Coordinator scan interval; 0: 50ms
	onRestart string
	tools     *tools.Registry
	approval  agentik.ApprovalPolicy
	// wrap, when set, stands between the engine and its Coordinator.
	wrap func(agentik.Coordinator) agentik.Coordinator
	// sequence, when set, replaces the Bus's sequencer statement.
	sequence func(context.Context, querier) (int, int64, bool, error)
	// handling, when set, runs before the Bus handles a notification.
	handling func()
	// keep and keepIdle: CoordinatorOptions.KeepLeases and KeepIdle.
	keep     int
	keepIdle time.Duration
}

// newNode starts an engine on the database at dsn, answering through llm.
func newNode(t testing.TB, dsn string, llm *llmtest.Server, o nodeOptions) *node {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	b, err := NewBus(ctx, st, BusOptions{PollInterval: 100 * time.Millisecond, sequence: o.sequence, handling: o.handling})
	if err != nil {
		t.Fatalf("bus: %v", err)
	}
	if o.scan == 0 {
		o.scan = 50 * time.Millisecond
	}
	co := NewCoordinator(st, b, CoordinatorOptions{ScanInterval: o.scan, KeepLeases: o.keep, KeepIdle: o.keepIdle})
	model, err := openai.New(openai.Options{BaseURL: llm.URL(), Model: "test", MaxRetries: -1, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var cluster agentik.Coordinator = co
	if o.wrap != nil {
		cluster = o.wrap(co)
	}
	eng, err := engine.New(engine.Options{Store: st, Temporal: memstore.New(), Bus: b, BusSequencesAgentEvents: true, LLM: model, Cluster: cluster, OnRestart: o.onRestart, Tools: o.tools, Approval: o.approval})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	n := &node{store: st, bus: b, coord: co, eng: eng}
	t.Cleanup(n.stop)
	return n
}

// sharedConversation creates a conversation through nodes[0] and returns
// its handle on every node, in order.
func sharedConversation(t testing.TB, ctx context.Context, nodes ...*node) (string, []agentik.Conversation) {
	t.Helper()
	info, err := nodes[0].eng.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cs := make([]agentik.Conversation, len(nodes))
	for i, n := range nodes {
		if cs[i], err = n.eng.Conversation(ctx, info.ID); err != nil {
			t.Fatal(err)
		}
	}
	return info.ID, cs
}

// liveEvents follows c's live events until the test ends.
func liveEvents(t testing.TB, ctx context.Context, c agentik.Conversation) agentik.Stream[agentik.Event] {
	t.Helper()
	s, err := c.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stop shuts the node down (idempotent).
func (n *node) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.eng.Shutdown(ctx)
	n.coord.Close()
	n.bus.Close()
	n.store.Close()
}

func echo(r llmtest.Request) llmtest.Reply {
	return llmtest.Stream().Role().Content("echo ", r.LastUserText()).Finish("stop").Done()
}

// waitBound is how long a test waits for an event: until its time runs out
// (testenv.Wait; a busy machine may take long, never forever), 30 s in a
// benchmark.
func waitBound(t testing.TB) <-chan struct{} {
	if tt, ok := t.(*testing.T); ok {
		return testenv.Wait(tt).Done()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx.Done()
}

func waitFor(t testing.TB, s agentik.Stream[agentik.Event], what string, ok func(agentik.Event) bool) []agentik.Event {
	t.Helper()
	var seen []agentik.Event
	deadline := waitBound(t)
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
			t.Fatalf("no %s before the test's deadline; saw %+v", what, seen)
		}
	}
}

func sendText(t testing.TB, c agentik.Conversation, text string) agentik.SendResult {
	t.Helper()
	r, err := c.Send(context.Background(), agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	return r
}

// turnsOn posts perConv messages to each of convs conversations on the
// nodes in turn and waits until all are answered.
func turnsOn(t testing.TB, nodes []*node, convs, perConv int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range convs {
		info, err := nodes[i%len(nodes)].eng.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			watch, _ := nodes[i%len(nodes)].eng.Conversation(ctx, info.ID)
			s, err := watch.Events(ctx, agentik.LiveOnly)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for j := range perConv {
				c, _ := nodes[(i+j)%len(nodes)].eng.Conversation(ctx, info.ID)
				if _, err := c.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(fmt.Sprintf("m%d", j))}}); err != nil {
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
						t.Errorf("stream ended: %v", s.Err())
						return
					}
					if ev.Type == agentik.EvAssistantMessage {
						answered++
					}
				case <-deadline:
					t.Errorf("%d of %d answered", answered, perConv)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkClusterTurns measures turns through one engine on PostgreSQL
// (20 conversations, an instant scripted model), for profiling:
//
//	go test -run '^$' -bench ClusterTurns -cpuprofile cpu.out ./postgres
func BenchmarkClusterTurns(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			llm := llmtest.NewServer()
			defer llm.Close()
			llm.Handle(echo)
			dsn := freshSchema(b)
			var nodes []*node
			for range n {
				nodes = append(nodes, newNode(b, dsn, llm, nodeOptions{scan: time.Second}))
			}
			per := max(1, b.N/20)
			b.ResetTimer()
			start := time.Now()
			turnsOn(b, nodes, 20, per)
			b.ReportMetric(float64(20*per)/time.Since(start).Seconds(), "turns/s")
		})
	}
}

// gated answers the first request with "partial " and then waits for gate
// before finishing; every later request is echoed.
func gated(gate *llmtest.Gate) func(llmtest.Request) llmtest.Reply {
	var mu sync.Mutex
	first := true
	return func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return llmtest.Stream().Role().Content("partial ").Pause(gate).Content("late").Finish("stop").Done()
		}
		return echo(r)
	}
}

// killLeaseSession ends the node's lease connection of a conversation on
// the server, as a network failure or a database-side timeout would,
// leaving the process and its pool alone.
func killLeaseSession(t *testing.T, n *node, dsn, conversationID string) {
	t.Helper()
	ls := n.coord.sessionOf(conversationID)
	ls.mu.Lock()
	pid := ls.conn.PgConn().PID()
	ls.mu.Unlock()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the lease session: %v, %v", ok, err)
	}
}

// TestFencedTurnAnsweredOnce provokes the window issue 8 left open: a
// process loses only its lease connection while a turn streams and does
// not notice (its own check never runs here); another process takes the
// lease and answers the turn; then the first one's model call finishes.
// Its answer must be refused by the fence: the turn is answered once.
func TestFencedTurnAnsweredOnce(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Handle(gated(gate))
	dsn := freshSchema(t)
	a := newNode(t, dsn, llm, nodeOptions{scan: time.Hour})
	ctx := context.Background()
	info, err := a.eng.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	convA, _ := a.eng.Conversation(ctx, info.ID)
	m := sendText(t, convA, "one")
	<-gate.Reached() // A streams its answer
	// B starts only now: started earlier, its scan could take the turn
	// before A's own loop did, and then wait on the gate meant for A.
	b := newNode(t, dsn, llm, nodeOptions{})
	convB, _ := b.eng.Conversation(ctx, info.ID)
	s, err := convB.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	killLeaseSession(t, a, dsn, info.ID)
	waitFor(t, s, "B's answer", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == m.MessageID
	})
	gate.Release() // A's model call completes now, after B answered
	a.stop()       // waits for A's turn to end

	page, err := convB.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, msg := range page.Messages {
		got = append(got, msg.Type+":"+agentik.JoinText(msg.Content))
	}
	if want := []string{"user_message:one", "assistant_message:echo one"}; !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
	evs, err := b.store.Events(ctx, info.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d durable events, want 2: %+v", len(evs), evs)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2 (A's, refused, and B's)", n)
	}
}

// TestCommitFence: a fenced write commits only under the current epoch and
// changes nothing otherwise; an unfenced write always commits.
func TestCommitFence(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	ctx := context.Background()
	id := createConv(t, s)
	if _, err := s.pool.Exec(ctx, "UPDATE conversations SET lease_epoch = 7 WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	write := func(fence int64) error {
		_, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Fence: fence, Touch: agentik.Now(),
			Events: []agentik.Event{userEvent(id, "x")}, Memory: []agentik.MemoryEntry{{Message: agentik.ModelMessage{Role: agentik.RoleUser}}}})
		return err
	}
	cursor, _ := s.LastCursor(ctx, id)
	agentCursor, _ := s.LastAgentCursor(ctx)
	if err := write(6); !errors.Is(err, agentik.ErrFenced) || agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("stale fence: %v", err)
	}
	after, _ := s.LastCursor(ctx, id)
	agentAfter, _ := s.LastAgentCursor(ctx)
	mem, _ := s.Memory(ctx, id)
	msgs, _, _ := s.Messages(ctx, id, agentik.MessagesRequest{})
	if after != cursor || agentAfter != agentCursor || len(mem) != 0 || len(msgs) != 0 {
		t.Fatalf("a refused write changed something: cursors %d→%d, %d→%d, memory %d, journal %d", cursor, after, agentCursor, agentAfter, len(mem), len(msgs))
	}
	for _, fence := range []int64{7, 0} {
		if err := write(fence); err != nil {
			t.Fatalf("fence %d: %v", fence, err)
		}
	}
	if msgs, _, _ := s.Messages(ctx, id, agentik.MessagesRequest{}); len(msgs) != 2 || msgs[0].Seq != 1 || msgs[1].Seq != 2 {
		t.Fatalf("journal after the fenced writes: %+v", msgs)
	}
}

// TestQueueReadsTheFirstTurnWhole: the Coordinator's queue is the store's
// open turns in seq order — the first whole, as ReadTurnQueue reads it, with
// the journal answering it; the others by their identity — and nothing
// once they are closed.
func TestQueueReadsTheFirstTurnWhole(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, freshSchema(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := agentik.NewID()
	now := agentik.Now()
	if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "bob", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if q, err := s.queue(ctx, id); err != nil || len(q.Open) != 0 || q.Turn != nil {
		t.Fatalf("empty queue: %+v, %v", q, err)
	}
	msg := func(m agentik.Message) agentik.Event {
		m.ConversationID, m.Date = id, now
		if m.ID == "" {
			m.ID = agentik.NewID()
		}
		return agentik.MessageEvent(&m)
	}
	first := msg(agentik.Message{Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("one")}})
	evs := []agentik.Event{
		first,
		msg(agentik.Message{Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("two")}}),
		msg(agentik.Message{Type: agentik.MsgToolCall, ReplyTo: first.Message.ID, CallID: "c1", Name: "pick", Arguments: agentik.RawJSON(`{}`)}),
		msg(agentik.Message{Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("three")}}),
	}
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Events: evs}); err != nil {
		t.Fatal(err)
	}
	want, err := agentik.ReadTurnQueue(ctx, s, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.queue(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Open) != 3 || len(want.Open) != 3 || !reflect.DeepEqual(got.Open[0], want.Open[0]) || !reflect.DeepEqual(got.Turn, want.Turn) || len(got.Turn) != 1 {
		t.Fatalf("queue %+v\nwant %+v", got, want)
	}
	for i, m := range got.Open[1:] {
		w := want.Open[i+1]
		if m.ID != w.ID || m.Seq != w.Seq || m.ConversationID != id || m.Type != agentik.MsgUser {
			t.Fatalf("open turn %d: %+v, want the identity of %+v", i+1, m, w)
		}
	}
	closing := msg(agentik.Message{Type: agentik.MsgAssistant, ReplyTo: first.Message.ID, Content: []agentik.Content{agentik.Text("done")}})
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{closing}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.queue(ctx, id)
	if err != nil || len(got.Open) != 2 || got.Open[0].ID != evs[1].Message.ID || agentik.JoinText(got.Open[0].Content) != "two" ||
		got.Open[1].ID != evs[3].Message.ID || got.Turn != nil {
		t.Fatalf("after the first turn closed: %+v, %v", got, err)
	}
}
