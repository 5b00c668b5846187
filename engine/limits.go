package engine

import (
	"math"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// LocalLimiter is the agentik.Limiter of one process: it enforces
// agentik.Limits with token buckets refilled continuously (a principal may
// use a minute's worth at once, then the rate) and counters of turns and
// temporal memory. It is what an engine uses when Options.Limiter is nil.
//
// What it counts lives in a Ledger, which the limiters of several agents
// may share (Ledger.Limiter): a principal's limits then count what the
// principal does with every agent of the process together, each agent
// holding it to its own limits.
type LocalLimiter struct {
	l agentik.Limits
	*Ledger
}

// A Ledger is what local limiters count per principal: buckets of
// conversations and messages, running turns, temporal memory. Share one
// between the agents of a process so that a principal with N agents does
// not get N times every limit.
type Ledger struct {
	mu       sync.Mutex
	running  map[string]int
	convs    map[string]*bucket
	messages map[string]*bucket
	temporal map[string]int64
	tempAll  int64
}

var _ agentik.Limiter = (*LocalLimiter)(nil)

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{running: map[string]int{}, convs: map[string]*bucket{},
		messages: map[string]*bucket{}, temporal: map[string]int64{}}
}

// Limiter returns a limiter of l that counts in the ledger.
func (g *Ledger) Limiter(l agentik.Limits) *LocalLimiter { return &LocalLimiter{l: l, Ledger: g} }

// NewLocalLimiter returns a limiter of l with a ledger of its own.
func NewLocalLimiter(l agentik.Limits) *LocalLimiter { return NewLedger().Limiter(l) }

type bucket struct {
	tokens float64
	at     time.Time
}

// take takes one token of principal's bucket in m (perMinute tokens a
// minute, as many at most), or says how long until one is there.
func take(m map[string]*bucket, principal string, perMinute int, now time.Time) (time.Duration, bool) {
	b := m[principal]
	if b == nil {
		b = &bucket{tokens: float64(perMinute), at: now}
		m[principal] = b
	}
	rate := float64(perMinute) / 60 // tokens per second
	b.tokens = min(float64(perMinute), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens < 1 {
		return time.Duration(math.Ceil((1-b.tokens)/rate)) * time.Second, false
	}
	b.tokens--
	if b.tokens >= float64(perMinute)-1e-9 {
		delete(m, principal) // full again: nothing to remember
	}
	return 0, true
}

// AdmitConversation implements agentik.Limiter.
func (l *LocalLimiter) AdmitConversation(principal string) error {
	if l.l.ConversationsPerMinute <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if wait, ok := take(l.convs, principal, l.l.ConversationsPerMinute, time.Now()); !ok {
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: wait,
			Message: "too many conversations created; slow down"}
	}
	return nil
}

// AdmitMessage implements agentik.Limiter.
func (l *LocalLimiter) AdmitMessage(principal string, looping bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.l.MaxConcurrentTurns > 0 && !looping && l.running[principal] >= l.l.MaxConcurrentTurns {
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: time.Second,
			Message: "too many conversations with a running turn; wait for one to finish"}
	}
	if l.l.MessagesPerMinute <= 0 {
		return nil
	}
	if wait, ok := take(l.messages, principal, l.l.MessagesPerMinute, time.Now()); !ok {
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: wait,
			Message: "too many messages; slow down"}
	}
	return nil
}

// TurnsStarted implements agentik.Limiter.
func (l *LocalLimiter) TurnsStarted(principal string) {
	l.mu.Lock()
	l.running[principal]++
	l.mu.Unlock()
}

// TurnsStopped implements agentik.Limiter.
func (l *LocalLimiter) TurnsStopped(principal string) {
	l.mu.Lock()
	if l.running[principal]--; l.running[principal] <= 0 {
		delete(l.running, principal)
	}
	l.mu.Unlock()
}

// AdmitTemporal implements agentik.Limiter.
func (l *LocalLimiter) AdmitTemporal(principal string, n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.l.TemporalBytes > 0 && l.temporal[principal]+n > l.l.TemporalBytes {
		return agentik.Errorf(agentik.ETooLarge, "temporal conversations hold more than %d bytes for this caller; delete one, or use a persistent conversation", l.l.TemporalBytes)
	}
	if l.l.TemporalBytesTotal > 0 && l.tempAll+n > l.l.TemporalBytesTotal {
		return &agentik.Error{Code: agentik.EUnavailable, RetryAfter: time.Minute,
			Message: "the server's memory for temporal conversations is full; use a persistent conversation"}
	}
	return nil
}

// AddTemporal implements agentik.Limiter.
func (l *LocalLimiter) AddTemporal(principal string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tempAll += n
	if l.temporal[principal] += n; l.temporal[principal] <= 0 {
		delete(l.temporal, principal)
	}
}

// limits adapts a Limiter to the engine's call sites.
type limits struct{ agentik.Limiter }

func (l limits) admit(principal string, looping bool) error {
	return l.AdmitMessage(principal, looping)
}

// countLocked counts the conversation as running a turn for its owner's
// limits, once. Caller holds c.mu.
func (c *conv) countLocked() {
	if !c.counted {
		c.counted = true
		c.e.limits.TurnsStarted(c.owner)
	}
}

// uncountLocked stops counting it. Caller holds c.mu.
func (c *conv) uncountLocked() {
	if c.counted {
		c.counted = false
		c.e.limits.TurnsStopped(c.owner)
	}
}

// messageBytes is what a journal message costs a memory store: its text,
// images, reasoning, arguments, details and context.
func messageBytes(m *agentik.Message) int64 {
	n := int64(len(m.Reasoning)+len(m.Arguments)+len(m.Details)) + m.Context.Bytes()
	for _, c := range m.Content {
		n += int64(len(c.Text) + len(c.Data))
	}
	return n
}
