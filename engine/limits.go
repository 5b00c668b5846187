package engine

import (
	"math"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// limiter enforces per-principal limits: conversations with a turn running
// or queued, and messages per minute (a token bucket refilled continuously).
type limiter struct {
	maxTurns  int
	perMinute int

	mu      sync.Mutex
	running map[string]int
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(maxTurns, perMinute int) limiter {
	return limiter{maxTurns: maxTurns, perMinute: perMinute, running: map[string]int{}, buckets: map[string]*bucket{}}
}

// admit decides whether principal may send a message now; looping says the
// conversation already has a turn loop (it adds no concurrent turn).
func (l *limiter) admit(principal string, looping bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTurns > 0 && !looping && l.running[principal] >= l.maxTurns {
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: time.Second,
			Message: "too many conversations with a running turn; wait for one to finish"}
	}
	if l.perMinute <= 0 {
		return nil
	}
	now := time.Now()
	b := l.buckets[principal]
	if b == nil {
		b = &bucket{tokens: float64(l.perMinute), at: now}
		l.buckets[principal] = b
	}
	rate := float64(l.perMinute) / 60 // tokens per second
	b.tokens = min(float64(l.perMinute), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens < 1 {
		wait := time.Duration(math.Ceil((1-b.tokens)/rate)) * time.Second
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: wait,
			Message: "too many messages; slow down"}
	}
	b.tokens--
	return nil
}

func (l *limiter) started(principal string) {
	l.mu.Lock()
	l.running[principal]++
	l.mu.Unlock()
}

func (l *limiter) stopped(principal string) {
	l.mu.Lock()
	if l.running[principal]--; l.running[principal] <= 0 {
		delete(l.running, principal)
	}
	l.mu.Unlock()
}
