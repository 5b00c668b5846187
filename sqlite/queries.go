package sqlite

// Every statement the store runs. Reads are answered from an index without a
// sort step (TestQueryPlans checks it), so their cost does not grow with the
// journal. All of them are prepared once at Open.

const conversationColumns = "id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out"

// Reads.
const (
	qExists = `SELECT 1 FROM conversations WHERE id = ?`
	// Conversations are scoped to one agent (the Store's view, see ForAgent).
	qGetConversation = "SELECT " + conversationColumns + " FROM conversations WHERE id = ? AND agent_id = ?"
	// List queries walk the (agent_id, owner, updated_at, id) index; with a
	// page token the leading updated_at <= ? keeps it a range scan.
	qList = "SELECT " + conversationColumns + ` FROM conversations WHERE agent_id = ? AND owner = ?
		ORDER BY updated_at DESC, id DESC LIMIT ?`
	qListBefore = "SELECT " + conversationColumns + ` FROM conversations
		WHERE agent_id = ? AND owner = ? AND updated_at <= ? AND (updated_at < ? OR id < ?)
		ORDER BY updated_at DESC, id DESC LIMIT ?`
	qMessagesAfter = `SELECT payload, images FROM messages WHERE conversation_id = ? AND seq > ?
		ORDER BY seq LIMIT ? OFFSET ?`
	qMessagesBefore = `SELECT payload, images FROM messages WHERE conversation_id = ? AND seq > ? AND seq < ?
		ORDER BY seq DESC LIMIT ? OFFSET ?`
	qMessage        = `SELECT payload, images FROM messages WHERE id = ? AND conversation_id = ?`
	qEvents         = `SELECT cursor, payload, images FROM events WHERE conversation_id = ? AND cursor > ? ORDER BY cursor LIMIT ?`
	qEventsJSON     = `SELECT cursor, type, payload, images FROM events WHERE conversation_id = ? AND cursor > ? ORDER BY cursor LIMIT ?`
	qApprovalEvents = `SELECT cursor, payload FROM events WHERE conversation_id = ? AND cursor > ?
		AND type IN ('approval_requested', 'approval_resolved') ORDER BY cursor`
	qLastCursor = `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?),
		COALESCE((SELECT MAX(cursor) FROM events WHERE conversation_id = ?), 0)`
	qAgentEvents     = `SELECT cursor, owner, payload FROM agent_events WHERE agent_id = ? AND cursor > ? ORDER BY cursor LIMIT ?`
	qLastAgentCursor = `SELECT COALESCE(MAX(cursor), 0) FROM agent_events`
	qMemory          = `SELECT ord, payload, images FROM memory WHERE conversation_id = ? ORDER BY ord`
	// INDEXED BY: the partial index is the whole point; fail loudly rather
	// than scan the journals if it ever went missing.
	// CROSS JOIN keeps the partial index the outer loop (SQLite does not
	// reorder it), so the rows come in index order, without a sort.
	qOpenTurns = `SELECT m.payload, m.images FROM messages AS m INDEXED BY messages_open_turns
		CROSS JOIN conversations AS c ON c.id = m.conversation_id
		WHERE m.type = 'user_message' AND m.closed = 0 AND c.agent_id = ?
		ORDER BY m.conversation_id, m.seq`
	qOpenTurnsOf = `SELECT payload, images FROM messages INDEXED BY messages_open_turns
		WHERE conversation_id = ? AND type = 'user_message' AND closed = 0 ORDER BY seq`
	// One stored image, only read for rows that reference images.
	qImage = `SELECT data FROM images WHERE sha256 = ?`
	qState = `SELECT value FROM conversation_state WHERE conversation_id = ? AND key = ?`
)

// Writes.
const (
	qInsertConversation = `INSERT INTO conversations
		(id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out, agent_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qRename           = `UPDATE conversations SET title = ? WHERE id = ? AND agent_id = ?`
	qDelete           = `DELETE FROM conversations WHERE id = ? AND agent_id = ? RETURNING owner`
	qInsertAgentEvent = `INSERT INTO agent_events (conversation_id, owner, type, date, payload, agent_id) VALUES (?, ?, ?, ?, ?, ?)`
	// A commit claims its journal seqs and memory orders, adds its tokens
	// and touches the conversation in one statement, first: the returned
	// counters are those after the claim.
	qCommitConversation = `UPDATE conversations SET
		next_seq = next_seq + ?, next_ord = next_ord + ?,
		tokens_in = tokens_in + ?, tokens_out = tokens_out + ?,
		updated_at = CASE WHEN ? THEN ? ELSE updated_at END
		WHERE id = ?
		RETURNING owner, agent_id, next_seq, next_ord`
	// The conversations and agent events of before agents (agent_id '')
	// go to the default agent.
	qAdoptConversations = `UPDATE conversations SET agent_id = ? WHERE agent_id = ''`
	qAdoptAgentEvents   = `UPDATE agent_events SET agent_id = ? WHERE agent_id = ''`
	qInsertMessage      = `INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, images)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qInsertEvent = `INSERT INTO events (conversation_id, type, date, payload, images) VALUES (?, ?, ?, ?, ?)`
	// closed is only ever set on a user message of the same conversation.
	qCloseTurn = `UPDATE messages SET closed = 1
		WHERE id = ? AND conversation_id = ? AND type = 'user_message' AND closed = 0`
	qDropMemory   = `DELETE FROM memory WHERE conversation_id = ? AND ord <= ?`
	qInsertMemory = `INSERT INTO memory (conversation_id, ord, payload, images) VALUES (?, ?, ?, ?)`
	// An image a conversation mentions for the first time takes a reference
	// (see migrations/0002); one it already mentions changes nothing.
	qReferenceImage = `INSERT INTO conversation_images (conversation_id, sha256) VALUES (?, ?)
		ON CONFLICT DO NOTHING`
	qInsertImage = `INSERT INTO images (sha256, data, refs) VALUES (?, ?, 1)
		ON CONFLICT (sha256) DO UPDATE SET refs = refs + 1`
	qSetState = `INSERT INTO conversation_state (conversation_id, key, value) VALUES (?, ?, ?)
		ON CONFLICT (conversation_id, key) DO UPDATE SET value = excluded.value`
	qDeleteState = `DELETE FROM conversation_state WHERE conversation_id = ? AND key = ?`
)

var readQueries = []string{
	qExists, qGetConversation, qList, qListBefore, qMessagesAfter, qMessagesBefore, qMessage,
	qEvents, qEventsJSON, qLastCursor, qAgentEvents, qLastAgentCursor, qMemory, qOpenTurns, qOpenTurnsOf, qImage,
	qApprovalEvents, qState,
}

var writeQueries = []string{
	qExists, qGetConversation, qInsertConversation, qRename, qDelete, qInsertAgentEvent,
	qCommitConversation, qInsertMessage, qInsertEvent, qCloseTurn, qDropMemory, qInsertMemory,
	qReferenceImage, qInsertImage, qSetState, qDeleteState,
	qSavepoint, qRollbackTo, qRelease, qBegin, qCommit, qRollback,
}
