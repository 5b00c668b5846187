package postgres

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// rateLimited checks that err is rate_limited with a wait of a second at
// least.
func rateLimited(t *testing.T, what string, err error) {
	t.Helper()
	var e *agentik.Error
	if !errors.As(err, &e) || e.Code != agentik.ERateLimited || e.RetryAfter < time.Second {
		t.Fatalf("%s: %v, want rate_limited with a RetryAfter of 1 s at least", what, err)
	}
}

// TestLimiterRatesAcrossProcesses: two limiters on one database (two
// processes) give a principal the rates once between them, not once each;
// another principal has its own, another agent does not (a principal's
// limits count what it does with every agent).
func TestLimiterRatesAcrossProcesses(t *testing.T) {
	dsn := freshSchema(t)
	l := agentik.Limits{ConversationsPerMinute: 2, MessagesPerMinute: 3}
	a := NewLimiter(openDSN(t, dsn).ForAgent("agent"), l, &localCalls{})
	b := NewLimiter(openDSN(t, dsn).ForAgent("agent"), l, &localCalls{})

	for i, lim := range []*Limiter{a, b} {
		if err := lim.AdmitConversation("alice"); err != nil {
			t.Fatalf("conversation %d: %v", i+1, err)
		}
	}
	rateLimited(t, "a third conversation in a minute", a.AdmitConversation("alice"))
	rateLimited(t, "a third conversation in a minute, through the other process", b.AdmitConversation("alice"))
	if err := b.AdmitConversation("bob"); err != nil {
		t.Fatalf("another principal's conversation: %v", err)
	}

	for i, lim := range []*Limiter{a, b, a} {
		if err := lim.AdmitMessage("alice", false); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	rateLimited(t, "a fourth message in a minute", b.AdmitMessage("alice", false))

	other := NewLimiter(openDSN(t, dsn).ForAgent("other"), l, &localCalls{})
	rateLimited(t, "a fourth message in a minute, to another agent", other.AdmitMessage("alice", false))
	if err := other.AdmitMessage("bob", false); err != nil {
		t.Fatalf("another principal's message to another agent: %v", err)
	}
	unlimited := NewLimiter(openDSN(t, dsn).ForAgent("agent"), agentik.Limits{}, &localCalls{})
	if err := unlimited.AdmitConversation("alice"); err != nil {
		t.Fatalf("no limits: %v", err)
	}
	if err := unlimited.AdmitMessage("alice", false); err != nil {
		t.Fatalf("no limits: %v", err)
	}
}

// TestLimiterConcurrentTurnsAcrossProcesses: a conversation with an open
// turn whose lease some process holds counts against its owner's
// concurrent turns, wherever the next message goes; a message to a
// conversation that already loops adds none.
func TestLimiterConcurrentTurnsAcrossProcesses(t *testing.T) {
	dsn := freshSchema(t)
	view := openDSN(t, dsn).ForAgent("agent")
	id := createConv(t, view)
	if _, _, err := view.Commit(t.Context(), agentik.Write{ConversationID: id, Events: []agentik.Event{userEvent(id, "hi")}}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	lim := NewLimiter(openDSN(t, dsn).ForAgent("agent"), agentik.Limits{MaxConcurrentTurns: 1}, &localCalls{})
	if err := lim.AdmitMessage("alice", false); err != nil {
		t.Fatalf("an open turn nobody answers: %v", err)
	}

	co := NewCoordinator(view, newBus(t, view, time.Hour), CoordinatorOptions{})
	t.Cleanup(co.Close)
	if lease, err := co.Acquire(t.Context(), id); err != nil || !lease.Held {
		t.Fatalf("Acquire: %+v, %v", lease, err)
	}
	rateLimited(t, "a second running conversation", lim.AdmitMessage("alice", false))
	other := NewLimiter(openDSN(t, dsn).ForAgent("other"), agentik.Limits{MaxConcurrentTurns: 1}, &localCalls{})
	rateLimited(t, "a second running conversation, with another agent", other.AdmitMessage("alice", false))
	if err := lim.AdmitMessage("alice", true); err != nil {
		t.Fatalf("a message to the running conversation: %v", err)
	}
	if err := lim.AdmitMessage("bob", false); err != nil {
		t.Fatalf("another principal: %v", err)
	}
	co.Release(t.Context(), id)
	if err := lim.AdmitMessage("alice", false); err != nil {
		t.Fatalf("after the lease is released: %v", err)
	}
}

// TestLimiterLeavesTheProcessToLocal: temporal memory and turn counts stay
// in the process: the local limiter answers and counts them.
func TestLimiterLeavesTheProcessToLocal(t *testing.T) {
	local := &localCalls{refuse: agentik.Errorf(agentik.ETooLarge, "full")}
	lim := NewLimiter(openDSN(t, freshSchema(t)).ForAgent("agent"), agentik.Limits{TemporalBytes: 1}, local)
	lim.TurnsStarted("alice")
	lim.TurnsStarted("alice")
	lim.TurnsStopped("alice")
	lim.AddTemporal("alice", 7)
	lim.AddTemporal("alice", -2)
	if err := lim.AdmitTemporal("alice", 5); err != local.refuse {
		t.Fatalf("AdmitTemporal: %v, want the local limiter's answer", err)
	}
	local.mu.Lock()
	defer local.mu.Unlock()
	if local.running != 1 || local.temporal != 5 || local.asked != 1 {
		t.Fatalf("local limiter: %d running, %d temporal bytes, asked %d times; want 1, 5, 1", local.running, local.temporal, local.asked)
	}
}

// localCalls is a local limiter that counts what it is told and refuses
// temporal memory with refuse; it must never be asked for rates or
// concurrent turns.
type localCalls struct {
	refuse error

	mu       sync.Mutex
	running  int
	temporal int64
	asked    int
}

func (l *localCalls) AdmitConversation(string) error {
	panic("the local limiter was asked to admit a conversation")
}

func (l *localCalls) AdmitMessage(string, bool) error {
	panic("the local limiter was asked to admit a message")
}

func (l *localCalls) TurnsStarted(string) { l.mu.Lock(); l.running++; l.mu.Unlock() }
func (l *localCalls) TurnsStopped(string) { l.mu.Lock(); l.running--; l.mu.Unlock() }

func (l *localCalls) AdmitTemporal(string, int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked++
	return l.refuse
}

func (l *localCalls) AddTemporal(_ string, n int64) { l.mu.Lock(); l.temporal += n; l.mu.Unlock() }
