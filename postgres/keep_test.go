package postgres

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// answering returns a scripted model that answers "<name>: <text>", so a
// test can tell which node ran a turn; a message "slow" waits for gate.
func answering(t *testing.T, name string, gate <-chan struct{}) *llmtest.Server {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		if r.LastUserText() == "slow" && gate != nil {
			<-gate
		}
		return llmtest.Text(name + ": " + r.LastUserText())
	})
	return llm
}

// leaseHeld says whether any session holds the conversation's lease.
func leaseHeld(t *testing.T, n *node, id string) bool {
	t.Helper()
	var held bool
	if err := n.store.pool.QueryRow(t.Context(), qLeaseHeld, n.coord.key(id)).Scan(&held); err != nil {
		t.Fatal(err)
	}
	return held
}

// kept says whether n keeps the conversation's lease with nothing to run.
func kept(n *node, id string) bool {
	n.coord.mu.Lock()
	defer n.coord.mu.Unlock()
	_, ok := n.coord.idle[id]
	return ok
}

// answers collects the text of the assistant messages on s until want
// turns have ended, and fails on any answer seen twice.
func answers(t *testing.T, s agentik.Stream[agentik.Event], want int) []string {
	t.Helper()
	var got []string
	ends := 0
	for ends < want {
		for _, ev := range waitFor(t, s, "end", func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd }) {
			if ev.Type == agentik.EvAssistantMessage {
				got = append(got, agentik.JoinText(ev.Message.Content))
			}
		}
		ends++
	}
	return got
}

// keeping starts a conversation on nodes, has nodes[0] answer a first
// message and waits until it keeps the lease: how the tests here begin. It
// returns alice's context, the conversation, its handle on each node and
// a live stream of it on nodes[0].
func keeping(t *testing.T, nodes ...*node) (context.Context, string, []agentik.Conversation, agentik.Stream[agentik.Event]) {
	t.Helper()
	ctx := agentik.WithPrincipal(t.Context(), "alice")
	id, cs := sharedConversation(t, ctx, nodes...)
	s := liveEvents(t, ctx, cs[0])
	sendText(t, cs[0], "one")
	if got := answers(t, s, 1); len(got) != 1 || !strings.HasSuffix(got[0], ": one") {
		t.Fatalf("first turn: %q", got)
	}
	eventually(t, "the lease kept", func() bool { return kept(nodes[0], id) })
	return ctx, id, cs, s
}

// eventually waits for cond, polled, until the test's deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := waitBound(t)
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("not %s before the test's deadline", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestKeptLeaseAnswersMessagesPostedElsewhere (issue 53): the process that
// answered a conversation's turn keeps its lease; a message posted to
// another process is answered by it, once, woken by the other process's
// notification (no scan runs: the interval is an hour), including a
// message stored while its turn runs.
func TestKeptLeaseAnswersMessagesPostedElsewhere(t *testing.T) {
	dsn := freshSchema(t)
	gate := make(chan struct{})
	a := newNode(t, dsn, answering(t, "A", gate), nodeOptions{scan: time.Hour})
	b := newNode(t, dsn, answering(t, "B", nil), nodeOptions{scan: time.Hour})
	_, id, cs, s := keeping(t, a, b)
	if !leaseHeld(t, a, id) {
		t.Fatal("a kept lease is not held in the database")
	}

	sendText(t, cs[1], "two")
	if got := answers(t, s, 1); len(got) != 1 || got[0] != "A: two" {
		t.Fatalf("a message posted to B: %q (want A's answer, once)", got)
	}

	// Stored through B while A's turn runs: A's loop goes once more.
	sendText(t, cs[0], "slow")
	waitFor(t, s, "working", func(ev agentik.Event) bool { return ev.Type == agentik.EvWorking })
	sendText(t, cs[1], "three")
	close(gate)
	if got := answers(t, s, 2); strings.Join(got, "|") != "A: slow|A: three" {
		t.Fatalf("a message posted to B while A ran a turn: %q", got)
	}
	b.coord.mu.Lock()
	_, bHeld := b.coord.held[id]
	b.coord.mu.Unlock()
	if bHeld {
		t.Fatal("B holds the lease A keeps")
	}
}

// TestKeptLeaseAnswersEveryTurnOneWakeFound (issue 53): one wake for two
// messages another process stored (the notifications of both heard before
// the loop ran) has both answered, in order, with no scan: the turns open
// when the loop read the queue are read again after the first.
func TestKeptLeaseAnswersEveryTurnOneWakeFound(t *testing.T) {
	dsn := freshSchema(t)
	a := newNode(t, dsn, answering(t, "A", nil), nodeOptions{scan: time.Hour})
	ctx, id, _, s := keeping(t, a)
	a.bus.foreign.Store(nil)
	other := openDSN(t, dsn)
	for _, text := range []string{"two", "three"} {
		if _, _, err := other.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{userEvent(id, text)}}); err != nil {
			t.Fatal(err)
		}
	}
	a.coord.heardFrom(id, false, true)
	if got := answers(t, s, 2); strings.Join(got, "|") != "A: two|A: three" {
		t.Fatalf("two messages, one wake: %q", got)
	}
}

// TestKeptLeaseWokenByANotificationItsCommitOvertook (issue 53): another
// process stores a message while the keeper runs a turn, and the keeper's
// answer commits before it handles that message's notification (its
// cursor is then behind what the keeper knows): the notification still
// wakes the keeper, which answers the message (no scan runs).
func TestKeptLeaseWokenByANotificationItsCommitOvertook(t *testing.T) {
	dsn := freshSchema(t)
	gate := make(chan struct{})
	var hold atomic.Pointer[chan struct{}]
	a := newNode(t, dsn, answering(t, "A", gate), nodeOptions{scan: time.Hour, handling: func() {
		if h := hold.Load(); h != nil {
			<-*h
		}
	}})
	b := newNode(t, dsn, answering(t, "B", nil), nodeOptions{scan: time.Hour})
	_, id, cs, s := keeping(t, a, b)

	sendText(t, cs[0], "slow")
	waitFor(t, s, "working", func(ev agentik.Event) bool { return ev.Type == agentik.EvWorking })
	h := make(chan struct{})
	hold.Store(&h) // A's listener waits before the next notification
	sendText(t, cs[1], "two")
	close(gate)
	if got := answers(t, s, 1); len(got) != 1 || got[0] != "A: slow" {
		t.Fatalf("the running turn: %q", got)
	}
	eventually(t, "kept by A after its turn", func() bool { return kept(a, id) })
	close(h) // the notification of "two" is heard only now
	if got := answers(t, s, 1); len(got) != 1 || got[0] != "A: two" {
		t.Fatalf("a message whose notification came after the keeper's own commit: %q", got)
	}
}

// TestDrainingGivesBackKeptLeases (issue 53): a process that shuts down
// gives its kept leases back at the start of its drain, so that other
// processes take the conversations' next turns at once.
func TestDrainingGivesBackKeptLeases(t *testing.T) {
	dsn := freshSchema(t)
	a := newNode(t, dsn, answering(t, "A", nil), nodeOptions{scan: time.Hour, keepIdle: time.Hour})
	_, id, _, _ := keeping(t, a)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.eng.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if leaseHeld(t, a, id) || kept(a, id) {
		t.Fatal("a drained process still keeps a lease")
	}
}

// TestKeptLeaseScanFindsALostWake (issue 53): when the notification that
// should wake the keeper is lost, its scan still finds the open turn of the
// conversation whose lease it keeps, and runs it.
func TestKeptLeaseScanFindsALostWake(t *testing.T) {
	dsn := freshSchema(t)
	a := newNode(t, dsn, answering(t, "A", nil), nodeOptions{scan: 50 * time.Millisecond, keepIdle: time.Hour})
	b := newNode(t, dsn, answering(t, "B", nil), nodeOptions{scan: time.Hour})
	_, _, cs, s := keeping(t, a, b)

	a.bus.foreign.Store(nil) // A hears of no other process's commit
	sendText(t, cs[1], "two")
	if got := answers(t, s, 1); len(got) != 1 || got[0] != "A: two" {
		t.Fatalf("a message posted to B, its notification lost: %q", got)
	}
}

// TestKeptLeasesAreBounded (issue 53): a kept lease is given back after
// KeepIdle, and past KeepLeases the one kept longest is given back; a
// message stored meanwhile through another process is still answered.
func TestKeptLeasesAreBounded(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		dsn := freshSchema(t)
		a := newNode(t, dsn, answering(t, "A", nil), nodeOptions{scan: 50 * time.Millisecond, keepIdle: 100 * time.Millisecond})
		ctx := agentik.WithPrincipal(t.Context(), "alice")
		id, cs := sharedConversation(t, ctx, a)
		s := liveEvents(t, ctx, cs[0])
		sendText(t, cs[0], "one")
		answers(t, s, 1)
		eventually(t, "given back after KeepIdle", func() bool { return !kept(a, id) && !leaseHeld(t, a, id) })
	})
	t.Run("count", func(t *testing.T) {
		dsn := freshSchema(t)
		a := newNode(t, dsn, answering(t, "A", nil), nodeOptions{scan: time.Hour, keep: 1})
		ctx := agentik.WithPrincipal(t.Context(), "alice")
		first, c1 := sharedConversation(t, ctx, a)
		second, c2 := sharedConversation(t, ctx, a)
		s1, s2 := liveEvents(t, ctx, c1[0]), liveEvents(t, ctx, c2[0])
		sendText(t, c1[0], "one")
		answers(t, s1, 1)
		eventually(t, "the first kept", func() bool { return kept(a, first) })
		sendText(t, c2[0], "two")
		answers(t, s2, 1)
		eventually(t, "the second kept, the first given back", func() bool {
			return kept(a, second) && !kept(a, first) && !leaseHeld(t, a, first)
		})
	})
	t.Run("open turn", func(t *testing.T) {
		dsn := freshSchema(t)
		a := newNode(t, dsn, answering(t, "A", nil), nodeOptions{scan: time.Hour})
		ctx, id, _, s := keeping(t, a)
		// Another process stores a message A does not hear of (a store
		// alone: no loop of its own tries the lease).
		a.bus.foreign.Store(nil)
		other := openDSN(t, dsn)
		if _, _, err := other.Commit(ctx, agentik.Write{ConversationID: id, Events: []agentik.Event{userEvent(id, "two")}}); err != nil {
			t.Fatal(err)
		}
		// A gives the lease back: it finds the open turn and runs it.
		a.coord.giveBack(context.Background(), id)
		if got := answers(t, s, 1); len(got) != 1 || got[0] != "A: two" {
			t.Fatalf("a turn stored while the lease was kept, then given back: %q", got)
		}
	})
}

// TestScanLeavesTurnsHeardRunningElsewhere: the scan does not kick a
// conversation in which another process was heard committing, or whose
// open turn another process was heard running, within the last scan
// interval (its lease is held there); once nothing was heard of it for an
// interval, it kicks it as it kicks any open turn whose lease it does not
// hold.
func TestScanLeavesTurnsHeardRunningElsewhere(t *testing.T) {
	p := newPair(t)
	other := createConv(t, p.sa)
	commitPublish(t, p.sa, p.ba, other, "an open turn")
	c := NewCoordinator(p.sb, p.bb, CoordinatorOptions{ScanInterval: time.Hour})
	defer c.Close()
	var kicked []string // by the scans this test runs (the Coordinator's own are an hour apart)
	c.cb = agentik.CoordinatorCallbacks{Kick: func(id string) { kicked = append(kicked, id) }, Wake: func(string) {}}
	scan := func() []string {
		kicked = nil
		c.scanOpenTurns()
		return kicked
	}
	if got := scan(); !slices.Equal(got, []string{other}) {
		t.Fatalf("kicked %v, want the open turn's conversation", got)
	}
	p.ba.Publish(agentik.Event{ConversationID: other, Type: agentik.EvWorking, ReplyTo: "u1"})
	eventually(t, "A's turn heard on B", func() bool {
		_, ok := p.bb.running(other)
		return ok
	})
	if got := scan(); len(got) != 0 {
		t.Fatalf("kicked %v while another process runs the turn", got)
	}
	p.bb.turnMu.Lock()
	p.bb.turns[other].at = time.Now().Add(-2 * time.Hour) // silent for two scan intervals
	p.bb.turnMu.Unlock()
	if got := scan(); !slices.Equal(got, []string{other}) {
		t.Fatalf("kicked %v once nothing was heard for an interval, want the conversation", got)
	}

	// A commit heard from A (a message A stored, or its turn's write).
	c.Start(c.cb) // B hears A's commits
	commitPublish(t, p.sa, p.ba, other, "another")
	eventually(t, "A's commit heard on B", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.elsewhere[other].IsZero()
	})
	if got := scan(); len(got) != 0 {
		t.Fatalf("kicked %v after another process committed there", got)
	}
	c.mu.Lock()
	c.elsewhere[other] = time.Now().Add(-2 * time.Hour)
	c.mu.Unlock()
	if got := scan(); !slices.Equal(got, []string{other}) {
		t.Fatalf("kicked %v once nothing was heard for an interval, want the conversation", got)
	}
	noted := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.elsewhere[other]
		return ok
	}
	if noted() {
		t.Fatal("an entry older than the interval is kept")
	}
	// A poll's cursor is not noted: the same old cursor comes back at every
	// poll, and would keep a dead process's turn from the scan.
	p.bb.heard([]convCursor{{other, 1}}, false)
	if noted() {
		t.Fatal("a poll's cursor noted")
	}
	p.bb.heard([]convCursor{{other, 1}}, true)
	if !noted() {
		t.Fatal("a notification not noted")
	}
}
