-- 0008: per-principal rate limits shared by every process (Store.TakeToken):
-- one token bucket per key. UNLOGGED: the buckets are worth nothing after a
-- database crash (they start full again), and need no WAL flush per message.
CREATE UNLOGGED TABLE rate_buckets (
	key    text COLLATE "C" PRIMARY KEY,
	tokens double precision NOT NULL,
	at     timestamptz NOT NULL
);
