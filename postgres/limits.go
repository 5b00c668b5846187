package postgres

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// Limits that hold across the processes sharing the database: the
// primitives of the cluster-wide per-principal Limiter (limiter.go).

// qTakeToken takes one token from a bucket refilled continuously at $2 a
// minute (and holding at most $2), under the bucket's row lock: two
// processes never both take the last token. No row: the bucket is empty.
const qTakeToken = `INSERT INTO rate_buckets AS b (key, tokens, at) VALUES ($1, $2::float8 - 1, clock_timestamp())
	ON CONFLICT (key) DO UPDATE SET
		tokens = LEAST($2::float8, b.tokens + EXTRACT(EPOCH FROM clock_timestamp() - b.at)::float8 * $2::float8 / 60) - 1,
		at = clock_timestamp()
	WHERE LEAST($2::float8, b.tokens + EXTRACT(EPOCH FROM clock_timestamp() - b.at)::float8 * $2::float8 / 60) >= 1
	RETURNING tokens`

// qBucket reads what a bucket holds now.
const qBucket = `SELECT LEAST($2::float8, tokens + EXTRACT(EPOCH FROM clock_timestamp() - at)::float8 * $2::float8 / 60)
	FROM rate_buckets WHERE key = $1`

// TakeToken takes one token of this agent's bucket named key, refilled at
// perMinute tokens a minute and holding as many at most, shared by every
// process on the database. It returns 0 when a token was taken, else how
// long until one is there.
func (s *Store) TakeToken(ctx context.Context, key string, perMinute int) (time.Duration, error) {
	return s.takeToken(ctx, s.agent+"\x1f"+key, perMinute) // text cannot hold NUL
}

// TakePrincipalToken is TakeToken for a bucket of every agent together
// (its key names a principal's use of all of them).
func (s *Store) TakePrincipalToken(ctx context.Context, key string, perMinute int) (time.Duration, error) {
	return s.takeToken(ctx, "\x1f"+key, perMinute) // no agent: "" before the separator
}

func (s *Store) takeToken(ctx context.Context, key string, perMinute int) (time.Duration, error) {
	var left float64
	err := s.pool.QueryRow(ctx, qTakeToken, key, float64(perMinute)).Scan(&left)
	if err == nil {
		return 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, classify(err)
	}
	var now float64
	if err := s.pool.QueryRow(ctx, qBucket, key, float64(perMinute)).Scan(&now); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, classify(err)
	}
	rate := float64(perMinute) / 60
	return time.Duration(math.Ceil(max(1-now, 0)/rate*1000)) * time.Millisecond, nil
}

// qRunning counts an owner's conversations of an agent that have an open
// turn and whose turn lease a session holds: the conversations some
// process is answering now (running or queued turns), as the engine counts
// them alone. A turn waiting for client tools or approvals holds no lease.
const qRunning = `WITH held AS (SELECT (classid::bigint << 32) | objid::bigint AS k FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
	SELECT count(DISTINCT c.id) FROM open_turns o JOIN conversations c ON c.id = o.conversation_id
	WHERE c.agent_id = $1 AND c.owner = $2
	AND hashtextextended('agentik lease ' || $3 || ' ' || c.id, 0) IN (SELECT k FROM held)`

// RunningConversations counts owner's conversations of this agent whose
// turns a process is answering now, on any process.
func (s *Store) RunningConversations(ctx context.Context, owner string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, qRunning, s.agent, owner, s.schema).Scan(&n); err != nil {
		return 0, classify(err)
	}
	return n, nil
}

// qRunningAll is qRunning over every agent.
const qRunningAll = `WITH held AS (SELECT (classid::bigint << 32) | objid::bigint AS k FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
	SELECT count(DISTINCT c.id) FROM open_turns o JOIN conversations c ON c.id = o.conversation_id
	WHERE c.owner = $1
	AND hashtextextended('agentik lease ' || $2 || ' ' || c.id, 0) IN (SELECT k FROM held)`

// PrincipalRunning counts owner's conversations of every agent whose turns
// a process is answering now, on any process.
func (s *Store) PrincipalRunning(ctx context.Context, owner string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, qRunningAll, owner, s.schema).Scan(&n); err != nil {
		return 0, classify(err)
	}
	return n, nil
}
