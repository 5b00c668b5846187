package agentik

// Limiter decides what one principal may start now. An agent asks it
// before it creates a conversation and before it stores a user message; a
// refusal is an *Error — ERateLimited with RetryAfter for rates and
// concurrency, ETooLarge or EUnavailable for memory — and the agent then
// stores nothing. It also counts the turns and the temporal memory the
// agent holds, so that an implementation shared by several processes can
// make every limit cluster-wide.
//
// Implementations are safe for concurrent use. The in-process one is
// engine.LocalLimiter; postgres.Limiter holds the limits across the
// processes sharing one database.
type Limiter interface {
	// AdmitConversation is asked before principal creates a conversation.
	AdmitConversation(principal string) error
	// AdmitMessage is asked before principal's message is stored; looping
	// says its conversation already runs turns (it adds no concurrent one).
	AdmitMessage(principal string, looping bool) error
	// TurnsStarted and TurnsStopped bracket a conversation's turn loop.
	TurnsStarted(principal string)
	TurnsStopped(principal string)
	// AdmitTemporal is asked before n more bytes are stored in principal's
	// temporal (memory-only) conversations by a user message.
	AdmitTemporal(principal string, n int64) error
	// AddTemporal counts n bytes stored in (or, negative, freed from)
	// principal's temporal conversations.
	AddTemporal(principal string, n int64)
}

// Limits are per-principal limits, enforced by a Limiter; zero means
// unlimited.
type Limits struct {
	ConversationsPerMinute int   // conversations created
	MessagesPerMinute      int   // user messages stored
	MaxConcurrentTurns     int   // conversations with a running or queued turn
	TemporalBytes          int64 // held by one principal's temporal conversations
	TemporalBytesTotal     int64 // held by all temporal conversations
}
