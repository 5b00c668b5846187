package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// gatedBy answers a message whose text is a key of gates with "partial ",
// a pause at that gate, then "late"; any other message with its echo.
func gatedBy(gates map[string]*llmtest.Gate) func(llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		if g := gates[r.LastUserText()]; g != nil {
			return llmtest.Stream().Role().Content("partial ").Pause(g).Content("late").Finish("stop").Done()
		}
		return echo(r)
	}
}

// closing returns the event that closed the turn answering replyTo: its
// assistant_message, error or interrupted event.
func closing(t *testing.T, s *Store, conv, replyTo string) agentik.Event {
	t.Helper()
	evs, err := s.Events(context.Background(), conv, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == agentik.EvInterrupted && ev.ReplyTo == replyTo ||
			ev.Message != nil && ev.Message.ReplyTo == replyTo && ev.Message.ClosesTurn() {
			return ev
		}
	}
	t.Fatalf("the turn of %s is not closed", replyTo)
	return agentik.Event{}
}

// asked reports whether the model was asked to answer text.
func asked(llm *llmtest.Server, text string) bool {
	return slices.ContainsFunc(llm.Requests(), func(r llmtest.Request) bool { return r.LastUserText() == text })
}

// TestInterruptTurnAcrossProcesses: InterruptTurn through B reaches exactly
// the turn it names while A holds the conversation's lease. A turn queued
// behind A's running turn is withdrawn at once — closed with
// interrupted{user}, never answered — and the running turn goes on; a
// notice naming a turn that has ended does not cut the turn running by then
// (before, an interrupt carried no target and cut whatever ran when it
// arrived); a running turn named through B is cancelled on A, its partial
// answer kept.
func TestInterruptTurnAcrossProcesses(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	first, third, fourth := llmtest.NewGate(), llmtest.NewGate(), llmtest.NewGate()
	defer first.Release()
	defer third.Release()
	defer fourth.Release()
	llm.Handle(gatedBy(map[string]*llmtest.Gate{"first": first, "third": third, "fourth": fourth}))
	dsn := freshSchema(t)
	a := newNode(t, dsn, llm, nodeOptions{})
	b := newNode(t, dsn, llm, nodeOptions{scan: time.Hour}) // B runs only what it is kicked for here
	ctx := context.Background()
	info, err := a.eng.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	convA, _ := a.eng.Conversation(ctx, info.ID)
	convB, _ := b.eng.Conversation(ctx, info.ID)
	s, err := convB.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	interruptB := func(replyTo string) bool {
		t.Helper()
		ok, err := convB.InterruptTurn(ctx, replyTo)
		if err != nil {
			t.Fatalf("InterruptTurn through B: %v", err)
		}
		return ok
	}

	one := sendText(t, convA, "first")
	<-first.Reached() // A runs the first turn and holds the lease
	two := sendText(t, convB, "second")
	three := sendText(t, convA, "third")
	if !interruptB(two.MessageID) {
		t.Fatal("the queued turn was not withdrawn")
	}
	waitFor(t, s, "the queued turn's interrupted event", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvInterrupted && ev.ReplyTo == two.MessageID
	})
	if ev := closing(t, a.store, info.ID, two.MessageID); ev.Type != agentik.EvInterrupted || ev.Reason != agentik.ReasonUser {
		t.Fatalf("the withdrawn turn closed with %+v", ev)
	}

	first.Release()
	<-third.Reached() // the first turn ended; the third runs on A
	if ev := closing(t, a.store, info.ID, one.MessageID); ev.Type != agentik.EvAssistantMessage || ev.Message.Interrupted {
		t.Fatalf("the first turn closed with %+v", ev)
	}
	// A late notice about the first turn reaches A while the third runs: it
	// names a turn that is over, so nothing is cut. (A handles a notice as
	// it arrives, before the online events B sends after it: once A's
	// subscriber has the marker, A has handled the notice.)
	sA, err := convA.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer sA.Close()
	if _, err := b.coord.Interrupt(ctx, agentik.InterruptRequest{ConversationID: info.ID, Reason: agentik.ReasonUser, ReplyTo: one.MessageID}); err != nil {
		t.Fatal(err)
	}
	// The marker is an end: the one online event of another process that
	// A delivers while it runs a turn itself (Bus.trackLocked).
	marker := agentik.NewID()
	b.bus.Publish(agentik.Event{ConversationID: info.ID, Date: agentik.Now(), Type: agentik.EvEnd, ReplyTo: marker, Reason: agentik.EndCompleted})
	waitFor(t, sA, "the marker sent after the notice", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == marker })
	if interruptB(one.MessageID) {
		t.Fatal("InterruptTurn of a turn that is over reported true")
	}
	third.Release()
	waitFor(t, s, "the answer to the third message", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == three.MessageID
	})
	if ev := closing(t, a.store, info.ID, three.MessageID); ev.Type != agentik.EvAssistantMessage || ev.Message.Interrupted ||
		agentik.JoinText(ev.Message.Content) != "partial late" {
		t.Fatalf("the third turn closed with %+v, want its whole answer", ev)
	}

	// A running turn named through B is cancelled where it runs.
	four := sendText(t, convA, "fourth")
	<-fourth.Reached()
	if !interruptB(four.MessageID) {
		t.Fatal("the running turn was not interrupted")
	}
	waitFor(t, s, "the end of the fourth turn", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == four.MessageID
	})
	if ev := closing(t, a.store, info.ID, four.MessageID); ev.Type != agentik.EvInterrupted || ev.Reason != agentik.ReasonUser {
		t.Fatalf("the fourth turn closed with %+v", ev)
	}
	page, err := convB.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Messages, func(m agentik.Message) bool {
		return m.ReplyTo == four.MessageID && m.Type == agentik.MsgAssistant && m.Interrupted && agentik.JoinText(m.Content) == "partial "
	}) {
		t.Fatalf("the fourth turn's partial answer is not kept: %+v", page.Messages)
	}
	if asked(llm, "second") {
		t.Fatal("the model was asked to answer the withdrawn turn")
	}
	// The conversation goes on.
	five := sendText(t, convB, "fifth")
	waitFor(t, s, "the answer to the fifth message", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvAssistantMessage && ev.Message.ReplyTo == five.MessageID
	})
}

// TestInterruptTurnNobodyHolds: a turn waiting for client tool results is
// open but runs nowhere, and no process holds the lease; InterruptTurn
// through the other process takes the lease and withdraws it.
func TestInterruptTurnNobodyHolds(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	var mu sync.Mutex
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.LastUserText(), "pick") {
			return llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_ui"))
		}
		return echo(r)
	})
	dsn := freshSchema(t)
	a := newNode(t, dsn, llm, nodeOptions{})
	b := newNode(t, dsn, llm, nodeOptions{scan: time.Hour}) // B runs only what it is kicked for here
	ctx := context.Background()
	id, cs := sharedConversation(t, ctx, a, b)
	convA, convB := cs[0], cs[1]
	s := liveEvents(t, ctx, convA)
	pick := agentik.ToolSpec{Name: "pick_color", Description: "Ask the user", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	res, err := convA.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("pick a color")}, ClientTools: []agentik.ToolSpec{pick}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "the round waiting for the client", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID && ev.Reason == agentik.EndClientTools
	})
	ok, err := convB.InterruptTurn(ctx, res.MessageID)
	if err != nil || !ok {
		t.Fatalf("InterruptTurn of the waiting turn through B: %v, %v", ok, err)
	}
	waitFor(t, s, "the waiting turn's interrupted event", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvInterrupted && ev.ReplyTo == res.MessageID && ev.Reason == agentik.ReasonUser
	})
	open, err := a.store.OpenTurnsOf(ctx, id)
	if err != nil || len(open) != 0 {
		t.Fatalf("open turns left: %+v, %v", open, err)
	}
	// Results for the withdrawn round are refused now, on either process.
	for _, c := range []agentik.Conversation{convA, convB} {
		_, err := c.Send(ctx, agentik.SendRequest{ToolResults: []agentik.ClientToolResult{{CallID: "call_ui", Content: []agentik.Content{agentik.Text("blue")}}}})
		if agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("results for a withdrawn round: %v", err)
		}
	}
}

// holdingAcquire holds the first lease request made once armed until
// release is closed, telling at when it arrives. With failPending at n > 0,
// its n-th read of a conversation's open turns from then fails with
// errPendingRead.
type holdingAcquire struct {
	agentik.Coordinator
	armed       atomic.Bool
	at          chan struct{}
	release     chan struct{}
	failPending atomic.Int32
}

var errPendingRead = errors.New("open turns unreadable")

func (h *holdingAcquire) Pending(ctx context.Context, id string) (agentik.TurnQueue, error) {
	if h.failPending.Load() > 0 && h.failPending.Add(-1) == 0 {
		return agentik.TurnQueue{}, errPendingRead
	}
	return h.Coordinator.Pending(ctx, id)
}

func (h *holdingAcquire) Acquire(ctx context.Context, id string) (agentik.Lease, error) {
	if h.armed.CompareAndSwap(true, false) {
		close(h.at)
		<-h.release
	}
	return h.Coordinator.Acquire(ctx, id)
}

// unstarted is a shared conversation on one node whose message "hi" is
// stored and whose turn no process has started: the loop's lease request
// is held until free is called (at the test's end at the latest).
type unstarted struct {
	llm   *llmtest.Server
	hold  *holdingAcquire
	free  func()
	n     *node
	convs []agentik.Conversation
	s     agentik.Stream[agentik.Event] // convs[0]'s events from before "hi"
	hi    agentik.SendResult
}

func newUnstarted(t *testing.T) *unstarted {
	t.Helper()
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	llm.Handle(echo)
	hold := &holdingAcquire{at: make(chan struct{}), release: make(chan struct{})}
	free := sync.OnceFunc(func() { close(hold.release) })
	n := newNode(t, freshSchema(t), llm, nodeOptions{scan: time.Hour, wrap: func(c agentik.Coordinator) agentik.Coordinator {
		hold.Coordinator = c
		return hold
	}})
	t.Cleanup(free) // before the node stops, on failure too
	ctx := context.Background()
	_, convs := sharedConversation(t, ctx, n)
	s := liveEvents(t, ctx, convs[0])

	hold.armed.Store(true)
	hi := sendText(t, convs[0], "hi")
	select {
	case <-hold.at:
	case <-time.After(10 * time.Second):
		t.Fatal("no lease request within 10 s")
	}
	return &unstarted{llm: llm, hold: hold, free: free, n: n, convs: convs, s: s, hi: hi}
}

// TestInterruptBeforeAnyProcessStarts: a plain Interrupt of a conversation
// whose message is stored and whose turn no process has started yet (the
// loop waits for the lease) withdraws that turn: closed with
// interrupted{user}, the model never asked. The next message is answered;
// a conversation with nothing open has nothing to interrupt.
func TestInterruptBeforeAnyProcessStarts(t *testing.T) {
	u := newUnstarted(t)
	llm, free, n, convs, s, hi := u.llm, u.free, u.n, u.convs, u.s, u.hi
	ctx := context.Background()
	ok, err := convs[0].Interrupt(ctx)
	if err != nil || !ok {
		t.Fatalf("interrupt: %v, %v", ok, err)
	}
	free()
	evs := waitFor(t, s, "the end of the withdrawn turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == hi.MessageID })
	if end := evs[len(evs)-1]; end.Reason != agentik.EndInterrupted {
		t.Fatalf("ended %q", end.Reason)
	}
	if ev := closing(t, n.store, convs[0].ID(), hi.MessageID); ev.Type != agentik.EvInterrupted || ev.Reason != agentik.ReasonUser {
		t.Fatalf("closed with %+v", ev)
	}
	again := sendText(t, convs[0], "again")
	waitFor(t, s, "the answer to the next message", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == again.MessageID })
	if asked(llm, "hi") || !asked(llm, "again") {
		t.Fatalf("the model was asked %d times, for the withdrawn turn: %v", len(llm.Requests()), asked(llm, "hi"))
	}
	// Nothing open, nothing running: nothing to interrupt.
	_, idle := sharedConversation(t, ctx, n)
	if ok, err := idle[0].Interrupt(ctx); err != nil || ok {
		t.Fatalf("interrupt when idle: %v, %v", ok, err)
	}
}

// TestInterruptUnstartedReadFails: when the store's open turns cannot be
// read, a plain Interrupt of a turn no process has started yet reports the
// error and changes nothing: the turn is answered once a process takes it.
// Interrupt reads them twice on a shared store: for a turn that waits for
// approvals (first), then for a turn not started (second); each read fails
// in its own subtest.
func TestInterruptUnstartedReadFails(t *testing.T) {
	for _, read := range []struct {
		name string
		n    int32
	}{{"approvals", 1}, {"unstarted", 2}} {
		t.Run(read.name, func(t *testing.T) {
			u := newUnstarted(t)
			llm, hold, free, convs, s, hi := u.llm, u.hold, u.free, u.convs, u.s, u.hi
			ctx := context.Background()
			hold.failPending.Store(read.n)
			ok, err := convs[0].Interrupt(ctx)
			if ok || !errors.Is(err, errPendingRead) {
				t.Fatalf("interrupt: %v, %v; want the read's error", ok, err)
			}
			if left := hold.failPending.Load(); left != 0 {
				t.Fatalf("the interrupt read the open turns %d times, want %d", read.n-left, read.n)
			}
			free()
			evs := waitFor(t, s, "the end of the turn", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == hi.MessageID })
			if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
				t.Fatalf("ended %q", end.Reason)
			}
			if !asked(llm, "hi") {
				t.Fatal("the model was not asked for the turn")
			}
		})
	}
}
