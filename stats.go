package agentik

import "context"

// StoreStats are the counts an operator reads in GET /admin/stats: what
// one agent's view of a store holds, and the size of the whole database.
type StoreStats struct {
	// Conversations of the agent (temporal ones are never stored).
	Conversations int64 `json:"conversations"`
	// Messages in their journals.
	Messages int64 `json:"messages"`
	// Events: the durable events of its conversations.
	Events int64 `json:"events"`
	// AgentEvents in the agent's event stream (they outlive deleted
	// conversations).
	AgentEvents int64 `json:"agent_events"`
	// DatabaseBytes is the size of the whole database (every agent's), as
	// the database itself reports it.
	DatabaseBytes int64 `json:"-"`
}

// StatsReader is the part of Store that counts what it holds. Stats reads
// counters and indexes, never a row's payload; its cost grows with the
// number of conversations and events, so it is for an operator's request,
// not a hot path. Safe for concurrent use.
type StatsReader interface {
	Stats(ctx context.Context) (StoreStats, error)
}
