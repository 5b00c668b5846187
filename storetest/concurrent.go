package storetest

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/agentik/agentik"
)

// RunShared runs the checks that need two handles on one database, as two
// agentik processes sharing a PostgreSQL database (or one SQLite file) have:
// what one writes the other reads, and concurrent commits through both keep
// seqs gap-free and cursors unique and in commit order. open must return two
// stores over the same, otherwise unused or shared, database and arrange for
// both to be closed.
func RunShared(t *testing.T, open func(t *testing.T) (a, b agentik.Store)) {
	t.Run("SeeEachOther", func(t *testing.T) {
		a, b := open(t)
		testSeeEachOther(t, a, b)
	})
	t.Run("ConcurrentCommits", func(t *testing.T) {
		a, b := open(t)
		concurrentCommits(t, []agentik.Store{a, b}, a)
	})
}

func testSeeEachOther(t *testing.T, a, b agentik.Store) {
	ctx := t.Context()
	c := newConversation(t, a)
	equal(t, "created elsewhere", getConv(t, b, c.ID), c)
	u := userMsg(c.ID, "via b")
	evs, _ := commit(t, b, agentik.Write{ConversationID: c.ID, Events: events(u)})
	equal(t, "journal written elsewhere", allMessages(t, a, c.ID), []agentik.Message{*u})
	equal(t, "events written elsewhere", allEvents(t, a, c.ID), evs)
	v := userMsg(c.ID, "via a")
	commit(t, a, agentik.Write{ConversationID: c.ID, Events: events(v)})
	if v.Seq != 2 {
		t.Fatalf("seq after a commit through the other handle = %d, want 2", v.Seq)
	}
	if _, _, err := a.RenameConversation(ctx, c.ID, "renamed", at(1)); err != nil {
		t.Fatalf("RenameConversation: %v", err)
	}
	if got := getConv(t, b, c.ID).Title; got != "renamed" {
		t.Fatalf("title seen elsewhere = %q", got)
	}
	if _, err := b.DeleteConversation(ctx, c.ID, at(2)); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	_, _, err := a.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: events(userMsg(c.ID, "late"))})
	wantCode(t, err, agentik.ENotFound)
}

// testConcurrentCommits races writers over a few conversations.
func testConcurrentCommits(t *testing.T, s agentik.Store) {
	concurrentCommits(t, []agentik.Store{s}, s)
}

// concurrentCommits races writers (spread over the given handles) over a few
// conversations while a reader tails their events by cursor. Seqs must stay
// 1..n without gaps, cursors unique and, within a conversation, in journal
// order; and the tailer, which only ever asks for cursors above the last one
// it saw, must see every event: a cursor that became visible after a greater
// one (allocated first, committed later) would be skipped, and a client
// resuming from a cursor would lose it.
func concurrentCommits(t *testing.T, writers []agentik.Store, reader agentik.Store) {
	const goroutines, commits, convs = 8, 25, 3
	ids := make([]string, convs)
	for i := range ids {
		ids[i] = newConversation(t, writers[0]).ID
	}
	tl := &tailer{s: reader, ids: ids, agentAfter: lastAgentCursor(t, reader), done: make(chan struct{})}
	startAgent := tl.agentAfter
	var tail sync.WaitGroup
	tail.Go(func() { tl.run(t) })

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*commits)
	for g := range goroutines {
		s := writers[g%len(writers)]
		wg.Go(func() {
			for i := range commits {
				if err := commitTurn(t, s, ids[(g+i)%convs], fmt.Sprintf("w%d-%d", g, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(tl.done)
	tail.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent commit: %v", err)
	}
	if tl.err != nil {
		t.Fatalf("tailing reader: %v", tl.err)
	}

	total := checkCommitted(t, reader, ids, tl.tailed)
	if total != 2*goroutines*commits {
		t.Fatalf("%d messages stored, want %d", total, 2*goroutines*commits)
	}
	agent := agentEventsOf(t, reader, startAgent, ids...)
	var agentCursors []int64
	for _, ev := range agent {
		agentCursors = append(agentCursors, ev.Cursor)
	}
	if len(agent) != goroutines*commits || !slices.Equal(tl.tailedAgent, agentCursors) {
		t.Fatalf("touched events: %d stored, tailing reader saw %d of them in order: %v",
			len(agent), len(tl.tailedAgent), slices.Equal(tl.tailedAgent, agentCursors))
	}
}

// commitTurn commits a user message and its answer, with a touch, a token
// and a memory entry, in one write; the two messages must get consecutive
// seqs.
func commitTurn(t *testing.T, s agentik.Store, conv, text string) error {
	u := userMsg(conv, text)
	ans := reply(conv, agentik.MsgAssistant, u.ID)
	_, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: conv,
		Events: events(u, ans), Touch: agentik.Now(), Tokens: agentik.TurnTokens{Input: 1},
		Memory: []agentik.MemoryEntry{entry(agentik.RoleUser, "m")}})
	if err != nil {
		return err
	}
	if ans.Seq != u.Seq+1 {
		return fmt.Errorf("one write got seqs %d and %d", u.Seq, ans.Seq)
	}
	return nil
}

// tailer follows the events of conversations ids, and the agent events
// about them, by cursor, as a client resuming from its last cursor does,
// until done is closed; then it makes one last pass.
type tailer struct {
	s          agentik.Store
	ids        []string
	agentAfter int64
	done       chan struct{}

	// Set by run; read once it returned.
	tailed      map[string][]int64 // the cursors seen, per conversation
	tailedAgent []int64
	err         error
}

func (tl *tailer) run(t *testing.T) {
	tl.tailed = map[string][]int64{}
	after := map[string]int64{}
	for {
		var finished bool
		select {
		case <-tl.done:
			finished = true // one last pass sees everything
		default:
		}
		if tl.err = tl.pass(t, after); tl.err != nil || finished {
			return
		}
		runtime.Gosched()
	}
}

// pass reads what came after the cursors seen so far.
func (tl *tailer) pass(t *testing.T, after map[string]int64) error {
	for _, id := range tl.ids {
		evs, err := tl.s.Events(t.Context(), id, after[id], 0)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			tl.tailed[id] = append(tl.tailed[id], ev.Cursor)
			after[id] = ev.Cursor
		}
	}
	aevs, err := tl.s.AgentEvents(t.Context(), tl.agentAfter, 0)
	if err != nil {
		return err
	}
	for _, ev := range aevs {
		if slices.Contains(tl.ids, ev.ConversationID) {
			tl.tailedAgent = append(tl.tailedAgent, ev.Cursor)
		}
		tl.agentAfter = ev.Cursor
	}
	return nil
}

// checkCommitted checks what concurrent commitTurn calls left in
// conversations ids — gap-free seqs, one event per message with unique
// cursors in journal order, what the tailer saw, memory and tokens — and
// returns the number of messages stored.
func checkCommitted(t *testing.T, reader agentik.Store, ids []string, tailed map[string][]int64) int {
	seen := map[int64]bool{}
	total := 0
	for _, id := range ids {
		msgs := allMessages(t, reader, id)
		if !slices.Equal(seqs(msgs), seqRange(1, int64(len(msgs)))) {
			t.Fatalf("seqs of %s have gaps: %v", id, seqs(msgs))
		}
		evs := allEvents(t, reader, id)
		if len(evs) != len(msgs) {
			t.Fatalf("%d events for %d messages", len(evs), len(msgs))
		}
		strictlyIncreasing(t, "conversation events", cursors(evs), 0)
		if !slices.Equal(tailed[id], cursors(evs)) {
			t.Fatalf("a reader tailing by cursor saw %v, the store has %v", tailed[id], cursors(evs))
		}
		for i, ev := range evs {
			if seen[ev.Cursor] {
				t.Fatalf("cursor %d used twice", ev.Cursor)
			}
			seen[ev.Cursor] = true
			if ev.Message == nil || ev.Message.ID != msgs[i].ID {
				t.Fatalf("event %d does not announce message seq %d", ev.Cursor, msgs[i].Seq)
			}
		}
		if m := memory(t, reader, id); len(m) != len(msgs)/2 {
			t.Fatalf("memory has %d entries, want %d", len(m), len(msgs)/2)
		}
		if tok := getConv(t, reader, id).Tokens.Input; tok != int64(len(msgs)/2) {
			t.Fatalf("tokens = %d, want %d", tok, len(msgs)/2)
		}
		total += len(msgs)
	}
	return total
}
