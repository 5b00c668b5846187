package postgres

// Every statement the store runs. pgx prepares each once per connection and
// caches it. Reads are answered from an index without a sort step
// (TestQueryPlans checks it), so their cost does not grow with the journal.

const conversationColumns = "id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out"

// Reads.
const (
	qExists          = `SELECT 1 FROM conversations WHERE id = $1`
	qGetConversation = "SELECT " + conversationColumns + " FROM conversations WHERE id = $1"
	qList            = "SELECT " + conversationColumns + ` FROM conversations WHERE owner = $1
		ORDER BY updated_at DESC, id DESC LIMIT $2`
	// The row comparison walks the (owner, updated_at DESC, id DESC) index
	// from the page token on.
	qListBefore = "SELECT " + conversationColumns + ` FROM conversations
		WHERE owner = $1 AND (updated_at, id) < ($2, $3)
		ORDER BY updated_at DESC, id DESC LIMIT $4`
	qMessagesAfter = `SELECT payload, images FROM messages WHERE conversation_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3 OFFSET $4`
	qMessagesBefore = `SELECT payload, images FROM messages WHERE conversation_id = $1 AND seq > $2 AND seq < $3
		ORDER BY seq DESC LIMIT $4 OFFSET $5`
	qMessage    = `SELECT payload, images FROM messages WHERE id = $1 AND conversation_id = $2`
	qEvents     = `SELECT cursor, payload, images FROM events WHERE conversation_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`
	qLastCursor = `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1),
		COALESCE((SELECT MAX(cursor) FROM events WHERE conversation_id = $1), 0)`
	qAgentEvents     = `SELECT cursor, owner, payload FROM agent_events WHERE cursor > $1 ORDER BY cursor LIMIT $2`
	qLastAgentCursor = `SELECT COALESCE(MAX(cursor), 0) FROM agent_events`
	qMemory          = `SELECT ord, payload, images FROM memory WHERE conversation_id = $1 ORDER BY ord`
	qOpenTurns       = `SELECT payload, images FROM messages
		WHERE type = 'user_message' AND NOT closed ORDER BY conversation_id, seq`
	// Used by the Coordinator: one conversation's open turns, in seq order.
	qOpenTurnsOf = `SELECT payload, images FROM messages
		WHERE conversation_id = $1 AND type = 'user_message' AND NOT closed ORDER BY seq`
	// Used by the Bus: the newest committed cursors, and the events of the
	// conversations it has subscribers for in a cursor range.
	qCounters    = `SELECT name, last FROM cursors`
	qEventsRange = `SELECT cursor, payload, images FROM events
		WHERE cursor > $1 AND cursor <= $2 AND conversation_id = ANY($3)
		ORDER BY cursor LIMIT $4`
	qAgentEventsRange = `SELECT cursor, owner, payload FROM agent_events
		WHERE cursor > $1 AND cursor <= $2 ORDER BY cursor LIMIT $3`
)

// Writes.
const (
	qInsertConversation = `INSERT INTO conversations
		(id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	qRename             = "UPDATE conversations SET title = $1 WHERE id = $2 RETURNING " + conversationColumns
	qDelete             = `DELETE FROM conversations WHERE id = $1 RETURNING owner`
	qAllocate           = `UPDATE cursors SET last = last + $1 WHERE name = $2 RETURNING last`
	qInsertAgentEvent   = `INSERT INTO agent_events (cursor, conversation_id, owner, type, date, payload) VALUES ($1, $2, $3, $4, $5, $6)`
	qCommitConversation = `SELECT owner, next_seq, next_ord, lease_epoch FROM conversations WHERE id = $1 FOR UPDATE`
	qInsertMessage      = `INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, images)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	// An event or agent event whose cursor was allocated just before in the
	// same transaction: the counter (as this transaction set it) minus $1.
	qInsertEventAllocated = `INSERT INTO events (cursor, conversation_id, type, date, payload, images)
		VALUES ((SELECT last FROM cursors WHERE name = 'events') - $1, $2, $3, $4, $5, $6)`
	qInsertAgentEventAllocated = `INSERT INTO agent_events (cursor, conversation_id, owner, type, date, payload)
		VALUES ((SELECT last FROM cursors WHERE name = 'agent_events'), $1, $2, $3, $4, $5)`
	// closed is only ever set on a user message of the same conversation.
	qCloseTurn = `UPDATE messages SET closed = true
		WHERE id = $1 AND conversation_id = $2 AND type = 'user_message' AND NOT closed`
	qDropMemory        = `DELETE FROM memory WHERE conversation_id = $1 AND ord <= $2`
	qInsertMemory      = `INSERT INTO memory (conversation_id, ord, payload, images) VALUES ($1, $2, $3, $4)`
	qUpdateAfterCommit = `UPDATE conversations SET
		next_seq = $1, next_ord = $2,
		tokens_in = tokens_in + $3, tokens_out = tokens_out + $4,
		updated_at = CASE WHEN $5::boolean THEN $6::timestamptz ELSE updated_at END
		WHERE id = $7`
)
