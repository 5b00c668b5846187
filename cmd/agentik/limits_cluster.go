package main

import (
	"context"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/postgres"
)

// clusterLimiter enforces an agent's per-principal limits across every
// process sharing one PostgreSQL database: conversations and messages per
// minute are token buckets in the database (taken under their row lock, so
// N processes give a principal the limit, not N times it), and the
// concurrent-turn limit counts the principal's conversations that some
// process is answering now (an open turn and a held lease). Temporal memory
// is per process by nature (temporal conversations live in one process)
// and stays with the embedded local limiter, as do the local turn counts.
//
// Bounded overshoot: admissions read, then act. Messages sent at the same
// instant to several idle conversations of one principal can each pass the
// concurrent-turn check before any of their turns holds its lease (as in one
// process); the rates are exact.
type clusterLimiter struct {
	*engine.LocalLimiter
	store  *postgres.Store
	limits engine.Limits
}

var _ engine.Limiter = (*clusterLimiter)(nil)

// limitTimeout bounds the database round trip of one admission.
const limitTimeout = 5 * time.Second

func newClusterLimiter(store *postgres.Store, l engine.Limits) *clusterLimiter {
	local := engine.NewLocalLimiter(engine.Limits{TemporalBytes: l.TemporalBytes, TemporalBytesTotal: l.TemporalBytesTotal})
	return &clusterLimiter{LocalLimiter: local, store: store, limits: l}
}

func (l *clusterLimiter) take(bucket, principal string, perMinute int, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), limitTimeout)
	defer cancel()
	wait, err := l.store.TakeToken(ctx, bucket+" "+principal, perMinute)
	if err != nil {
		return err
	}
	if wait > 0 {
		return &agentik.Error{Code: agentik.ERateLimited, RetryAfter: max(wait.Round(time.Second), time.Second), Message: msg}
	}
	return nil
}

// AdmitConversation implements engine.Limiter.
func (l *clusterLimiter) AdmitConversation(principal string) error {
	if l.limits.ConversationsPerMinute <= 0 {
		return nil
	}
	return l.take("conversations", principal, l.limits.ConversationsPerMinute, "too many conversations created; slow down")
}

// AdmitMessage implements engine.Limiter.
func (l *clusterLimiter) AdmitMessage(principal string, looping bool) error {
	if l.limits.MaxConcurrentTurns > 0 && !looping {
		ctx, cancel := context.WithTimeout(context.Background(), limitTimeout)
		n, err := l.store.RunningConversations(ctx, principal)
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
