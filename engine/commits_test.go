package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// countingStore counts the commits of the SQLite store it wraps.
type countingStore struct {
	*sqlite.Store
	mu      sync.Mutex
	commits []agentik.Write
}

func (s *countingStore) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	s.mu.Lock()
	s.commits = append(s.commits, w)
	s.mu.Unlock()
	return s.Store.Commit(ctx, w)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.commits)
}

// TestCommitsPerTurn: a plain turn is two commits (the user message with
// its working-memory entry, the answer with its own); a tool round adds its
// calls, and its results, the last of which carries the round's working
// memory — stored in call order whatever order the results came in.
func TestCommitsPerTurn(t *testing.T) {
	pair := &pairTool{both: make(chan struct{})}
	var counting *countingStore
	h := newHarness(t, func(o *engine.Options) {
		o.Tools = tools.NewRegistry(tools.CurrentTime{}, pair)
		counting = &countingStore{Store: o.Store.(*sqlite.Store)}
		o.Store = counting
	})
	h.llm.Enqueue(llmtest.Text("hello"),
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`).WithID("call_a")), llmtest.Text("It is late."),
		llmtest.ToolCalls(llmtest.Call("pair", `{}`).WithID("call_1"), llmtest.Call("pair", `{}`).WithID("call_2")), llmtest.Text("done"))
	c, s := h.conversation()
	for _, tc := range []struct {
		text    string
		commits int
	}{
		{"hi", 2},
		{"what time is it?", 4}, // + calls, result with the round
		{"two at once", 5},      // + calls, a result, a result with the round
	} {
		before := counting.count()
		res := h.send(c, tc.text)
		until(t, s, endOf(res.MessageID))
		if got := counting.count() - before; got != tc.commits {
			t.Fatalf("%q: %d commits, want %d", tc.text, got, tc.commits)
		}
	}

	mem, err := h.store.Memory(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range mem {
		r := e.Message.Role
		if e.Message.CallID != "" {
			r += ":" + e.Message.CallID
		}
		for _, tc := range e.Message.ToolCalls {
			r += "+" + tc.ID
		}
		got = append(got, r)
	}
	want := []string{"user", "assistant", "user", "assistant+call_a", "tool:call_a", "assistant",
		"user", "assistant+call_1+call_2", "tool:call_1", "tool:call_2", "assistant"}
	if len(got) != len(want) {
		t.Fatalf("working memory %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("working memory %v\nwant %v", got, want)
		}
	}
}

// TestQueuedTurnStoresItsMessageWithItsFirstWrite: a message queued behind
// a running turn enters working memory with its turn's first write (here
// the answer), not in a commit of its own — one commit fewer per queued
// turn — and in order. With OnRestart interrupt the entry is still written
// when the turn starts: it marks the turn as started, which that policy
// closes after a crash. A queued turn that fails before writing anything
// still stores its message, so later turns see it.
func TestQueuedTurnStoresItsMessageWithItsFirstWrite(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		commits int // of the queued message's turn, its send included
	}{
		{engine.RestartResume, 2},
		{engine.RestartInterrupt, 3},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			var counting *countingStore
			h := newHarness(t, func(o *engine.Options) {
				o.OnRestart = tc.policy
				counting = &countingStore{Store: o.Store.(*sqlite.Store)}
				o.Store = counting
			})
			gate := llmtest.NewGate()
			h.llm.Enqueue(llmtest.Stream().Role().Pause(gate).Content("first").Finish("stop"), llmtest.Text("second"))
			c, s := h.conversation()
			first := h.send(c, "one")
			<-gate.Reached()
			before := counting.count()
			second := h.send(c, "two") // queued behind the paused turn
			gate.Release()
			until(t, s, endOf(first.MessageID))
			mid := counting.count()
			until(t, s, endOf(second.MessageID))
			// The first turn's answer commit lies between before and mid.
			if got := counting.count() - before - 1; got != tc.commits {
				t.Fatalf("queued turn: %d commits, want %d (before %d, after the first answer %d)", got, tc.commits, before, mid)
			}

			// A queued turn whose model call fails stores its message with
			// the error.
			gate2 := llmtest.NewGate()
			h.llm.Enqueue(llmtest.Stream().Role().Pause(gate2).Content("third").Finish("stop"),
				llmtest.Error(400, `{"error":{"message":"bad","type":"invalid_request_error"}}`), llmtest.Text("fifth"))
			third := h.send(c, "three")
			<-gate2.Reached()
			failing := h.send(c, "four")
			gate2.Release()
			until(t, s, endOf(third.MessageID))
			until(t, s, endOf(failing.MessageID))
			fifth := h.send(c, "five")
			until(t, s, endOf(fifth.MessageID))

			got := memoryOf(t, h, c)
			want := []string{"user:one", "assistant:first", "user:two", "assistant:second",
				"user:three", "assistant:third", "user:four", "user:five", "assistant:fifth"}
			if !slices.Equal(got, want) {
				t.Fatalf("working memory %v\nwant %v", got, want)
			}
			reqs := h.llm.Requests()
			last := reqs[len(reqs)-1]
			if n := strings.Count(string(last.Raw), `"four"`); n != 1 {
				t.Fatalf("the last request holds the failed turn's message %d times, want once: %s", n, last.Raw)
			}
		})
	}
}

// failingStore fails the next `left` commits whose working memory holds an
// entry of message `source` (what a turn writes its user message's entry
// with), as a database that refuses them would.
type failingStore struct {
	*sqlite.Store
	mu     sync.Mutex
	source string
	left   int
}

func (s *failingStore) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	s.mu.Lock()
	fail := s.left > 0 && slices.ContainsFunc(w.Memory, func(e agentik.MemoryEntry) bool { return e.SourceID == s.source })
	if fail {
		s.left--
	}
	s.mu.Unlock()
	if fail {
		return nil, nil, agentik.Errorf(agentik.EUnavailable, "refused")
	}
	return s.Store.Commit(ctx, w)
}

// TestUnsavedEntryWhenTheFirstWriteFails: a queued turn whose answer
// cannot be stored records its error with its user message's entry. When
// that write fails too, the turn stays open and is retried at the next
// message, before it: the entry leaves the cache with the failed turn, and
// the next message, though sent to an idle conversation, does not write its
// own entry ahead of the retried turn's.
func TestUnsavedEntryWhenTheFirstWriteFails(t *testing.T) {
	for _, tc := range []struct {
		fails int
		want  []string // working memory at the end
	}{
		{1, []string{"user:one", "assistant:first", "user:two", "user:three", "assistant:third"}},
		{2, []string{"user:one", "assistant:first", "user:two", "assistant:third", "user:three", "assistant:fourth"}},
	} {
		t.Run(fmt.Sprintf("fails=%d", tc.fails), func(t *testing.T) {
			var failing *failingStore
			h := newHarness(t, func(o *engine.Options) {
				failing = &failingStore{Store: o.Store.(*sqlite.Store)}
				o.Store = failing
			})
			gate := llmtest.NewGate()
			h.llm.Enqueue(llmtest.Stream().Role().Pause(gate).Content("first").Finish("stop"), llmtest.Text("second"), llmtest.Text("third"), llmtest.Text("fourth"))
			c, s := h.conversation()
			first := h.send(c, "one")
			<-gate.Reached()
			second := h.send(c, "two") // queued: its entry waits for its turn's first write
			failing.mu.Lock()
			failing.source, failing.left = second.MessageID, tc.fails
			failing.mu.Unlock()
			gate.Release()
			until(t, s, endOf(first.MessageID))
			until(t, s, endOf(second.MessageID))
			third := h.send(c, "three")
			until(t, s, endOf(third.MessageID))

			got := memoryOf(t, h, c)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("working memory %v\nwant %v", got, tc.want)
			}
		})
	}
}

// memoryOf lists the conversation's stored working memory as role:text.
func memoryOf(t *testing.T, h *harness, c agentik.Conversation) []string {
	t.Helper()
	mem, err := h.store.Memory(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(mem))
	for i, e := range mem {
		out[i] = string(e.Message.Role) + ":" + agentik.JoinText(e.Message.Content)
	}
	return out
}

// pausingObserver holds the turn loop in TurnEnded of the first turn that
// ended with an error — after its end was published, before the loop looks
// at what is open — until resume is closed.
type pausingObserver struct {
	agentik.NopObserver
	once   sync.Once
	ended  chan struct{}
	resume chan struct{}
}

func (o *pausingObserver) TurnEnded(_, outcome string, _ time.Duration) {
	if outcome != agentik.EndError {
		return
	}
	o.once.Do(func() {
		close(o.ended)
		<-o.resume
	})
}

// TestStrandedTurnRetriedWhenAMessageCameWhileItRan: a turn whose every
// write failed stays open; a message sent while it was still ending is the
// next message, which retries it first — it was left waiting for yet
// another message (the loop saw the stranded turn open again and stopped,
// dropping the new one from its queue).
func TestStrandedTurnRetriedWhenAMessageCameWhileItRan(t *testing.T) {
	var failing *failingStore
	obs := &pausingObserver{ended: make(chan struct{}), resume: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) {
		failing = &failingStore{Store: o.Store.(*sqlite.Store)}
		o.Store = failing
		o.Observer = obs
	})
	gate := llmtest.NewGate()
	h.llm.Enqueue(llmtest.Stream().Role().Pause(gate).Content("first").Finish("stop"), llmtest.Text("second"), llmtest.Text("third"), llmtest.Text("fourth"))
	c, s := h.conversation()
	first := h.send(c, "one")
	<-gate.Reached()
	second := h.send(c, "two")
	failing.mu.Lock()
	failing.source, failing.left = second.MessageID, 2 // its answer and its error
	failing.mu.Unlock()
	gate.Release()
	until(t, s, endOf(first.MessageID))
	until(t, s, endOf(second.MessageID))
	within(t, obs.ended, "the failed turn's end")
	third := h.send(c, "three") // while the loop is still ending the failed turn
	close(obs.resume)
	evs := until(t, s, endOf(third.MessageID))
	n := 0
	for _, ev := range evs {
		if ev.Type == agentik.EvEnd {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d turns ended, want the retried one and the new one: %s", n, types(evs))
	}
	want := []string{"user:one", "assistant:first", "user:two", "assistant:third", "user:three", "assistant:fourth"}
	if got := memoryOf(t, h, c); !slices.Equal(got, want) {
		t.Fatalf("working memory %v\nwant %v", got, want)
	}
}

// within fails the test unless ch is closed within 10 s.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}
