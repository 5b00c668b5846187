package postgres

import (
	"context"
	"time"

	"github.com/agentik/agentik"
)

// Limiter is the agentik.Limiter of an agent served by several processes
// sharing one database: it enforces the agent's per-principal limits across
// them, and across the agents: what a principal does with every agent
// counts against each agent's limits (buckets and running conversations
// are the principal's, not the agent's). Conversations and messages per minute are token buckets in the
// database (TakeToken, taken under their row lock, so N processes give a
// principal the limit, not N times it), and the concurrent-turn limit
// counts the principal's conversations that some process is answering now
// (RunningConversations: an open turn and a held lease). Temporal memory is
// per process by nature (temporal conversations live in one process) and
// stays with the local limiter, as do the local turn counts.
//
// Bounded overshoot: admissions read, then act. Messages sent at the same
// instant to several idle conversations of one principal can each pass the
// concurrent-turn check before any of their turns holds its lease (as in one
// process); the rates are exact.
//
// A Limiter is safe for concurrent use. A database error is returned as is
// (EUnavailable when the database cannot be reached) and admits nothing.
type Limiter struct {
	local  agentik.Limiter
	store  *Store
	limits agentik.Limits
}

var _ agentik.Limiter = (*Limiter)(nil)

// limitTimeout bounds the database round trip of one admission.
const limitTimeout = 5 * time.Second

// NewLimiter returns the limiter of l for the agent of store (a view from
// ForAgent). local is asked what stays in this process — AdmitTemporal,
// AddTemporal, TurnsStarted and TurnsStopped — and never for the rates or
// the concurrent turns: a limiter of an engine.Ledger the process's agents
// share does.
func NewLimiter(store *Store, l agentik.Limits, local agentik.Limiter) *Limiter {
	return &Limiter{local: local, store: store, limits: l}
}

func (l *Limiter) take(bucket, principal string, perMinute int, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), limitTimeout)
	defer cancel()
	wait, err := l.store.TakePrincipalToken(ctx, bucket+" "+principal, perMinute)
	if err != nil {
		return err
	}
	if wait > 0 {
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: max(wait.Round(time.Second), time.Second), Message: msg}
	}
	return nil
}

// AdmitConversation implements agentik.Limiter.
func (l *Limiter) AdmitConversation(principal string) error {
	if l.limits.ConversationsPerMinute <= 0 {
		return nil
	}
	return l.take("conversations", principal, l.limits.ConversationsPerMinute, "too many conversations created; slow down")
}

// AdmitMessage implements agentik.Limiter.
func (l *Limiter) AdmitMessage(principal string, looping bool) error {
	if l.limits.MaxConcurrentTurns > 0 && !looping {
		ctx, cancel := context.WithTimeout(context.Background(), limitTimeout)
		n, err := l.store.PrincipalRunning(ctx, principal)
		cancel()
		if err != nil {
			return err
		}
		if n >= l.limits.MaxConcurrentTurns {
			return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: time.Second,
				Message: "too many conversations with a running turn; wait for one to finish"}
		}
	}
	if l.limits.MessagesPerMinute <= 0 {
		return nil
	}
	return l.take("messages", principal, l.limits.MessagesPerMinute, "too many messages; slow down")
}

// TurnsStarted implements agentik.Limiter: the local limiter counts.
func (l *Limiter) TurnsStarted(principal string) { l.local.TurnsStarted(principal) }

// TurnsStopped implements agentik.Limiter: the local limiter counts.
func (l *Limiter) TurnsStopped(principal string) { l.local.TurnsStopped(principal) }

// AdmitTemporal implements agentik.Limiter: the local limiter decides.
func (l *Limiter) AdmitTemporal(principal string, n int64) error {
	return l.local.AdmitTemporal(principal, n)
}

// AddTemporal implements agentik.Limiter: the local limiter counts.
func (l *Limiter) AddTemporal(principal string, n int64) { l.local.AddTemporal(principal, n) }
