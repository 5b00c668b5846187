package sqlite

// Every statement the store runs. Reads are answered from an index without a
// sort step (TestQueryPlans checks it), so their cost does not grow with the
// journal. All of them are prepared once at Open.

const conversationColumns = "id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out, head, forked_from, forked_seq"

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
	// The path from the root to a seq (the head when ?2 < 0), walked up
	// the parent links by primary key and cut below ?3 (SPEC §18).
	qPathAfter  = pathCTE + ` WHERE m.seq > ?3 AND m.seq < ?4 ORDER BY m.seq LIMIT ?5 OFFSET ?6`
	qPathBefore = pathCTE + ` WHERE m.seq > ?3 AND m.seq < ?4 ORDER BY m.seq DESC LIMIT ?5 OFFSET ?6`
	qChildren   = `SELECT seq FROM messages WHERE conversation_id = ? AND parent = ? ORDER BY seq`
	// One stored image, only read for rows that reference images.
	qImage = `SELECT data FROM images WHERE sha256 = ?`
	qState = `SELECT value FROM conversation_state WHERE conversation_id = ? AND key = ?`
	// A search (search.go): the FTS5 index walked by rowid from the top,
	// each hit's message and conversation looked up by key.
	qSearch = `SELECT m.conversation_id, m.seq, m.type, m.date, m.payload
		FROM message_search AS f
		CROSS JOIN messages AS m ON m.rowid = f.rowid
		CROSS JOIN conversations AS c ON c.id = m.conversation_id
		WHERE f.message_search MATCH ? AND c.owner = ? AND c.agent_id = ?
		ORDER BY f.rowid DESC LIMIT ?`
	qKey = `SELECT conversation_id, seq FROM lookup_keys WHERE agent_id = ? AND owner = ? AND key = ?`
	// Whether rows wait in the indexer's queue (index.go).
	qAnyPending = `SELECT EXISTS (SELECT 1 FROM message_search_pending)`
)

// CROSS JOIN keeps path the outer loop (SQLite does not reorder it) and
// +m.parent keeps the step a primary-key lookup, not a scan of the
// children index: one lookup per message of the path.
const pathCTE = `WITH RECURSIVE path(seq) AS (
		SELECT CASE WHEN ?2 < 0 THEN head ELSE ?2 END FROM conversations WHERE id = ?1
		UNION ALL
		SELECT m.parent FROM path CROSS JOIN messages AS m ON m.conversation_id = ?1 AND m.seq = path.seq
		WHERE +m.parent > ?3)
	SELECT m.payload, m.images FROM path CROSS JOIN messages AS m ON m.conversation_id = ?1 AND m.seq = path.seq`

// Writes.
const (
	qInsertConversation = `INSERT INTO conversations
		(id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out, agent_id, forked_from, forked_seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
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
		RETURNING owner, agent_id, next_seq, next_ord, head`
	// The conversations and agent events of before agents (agent_id '')
	// go to the default agent.
	qAdoptConversations = `UPDATE conversations SET agent_id = ? WHERE agent_id = ''`
	qAdoptAgentEvents   = `UPDATE agent_events SET agent_id = ? WHERE agent_id = ''`
	qInsertMessage      = `INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, images, parent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// The head after a write that moved it (SPEC §18).
	qSetHead = `UPDATE conversations SET head = ? WHERE id = ?`
	// A regenerate opens the turn of a user message again.
	qReopenTurn  = `UPDATE messages SET closed = 0 WHERE id = ? AND conversation_id = ? AND type = 'user_message'`
	qClearMemory = `DELETE FROM memory WHERE conversation_id = ?`
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
	// The full-text row of the message just inserted, queued in its
	// transaction for the indexer (index.go).
	qQueueMessage = `INSERT INTO message_search_pending (message, scope, body) VALUES (last_insert_rowid(), ?, ?)`
	// The indexer's batch: the queued rows up to the ?-th, moved into
	// message_search in rowid order (-1: all of them).
	qPendingUpTo  = `SELECT max(message) FROM (SELECT message FROM message_search_pending ORDER BY message LIMIT ?)`
	qIndexPending = `INSERT INTO message_search (rowid, scope, body)
		SELECT message, scope, body FROM message_search_pending WHERE message <= ? ORDER BY message`
	qDropPending = `DELETE FROM message_search_pending WHERE message <= ?`
	qSetKey      = `INSERT INTO lookup_keys (agent_id, owner, key, conversation_id, seq) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (agent_id, owner, key) DO UPDATE SET conversation_id = excluded.conversation_id, seq = excluded.seq`
)

var readQueries = []string{
	qExists, qGetConversation, qList, qListBefore, qMessagesAfter, qMessagesBefore, qMessage,
	qEvents, qEventsJSON, qLastCursor, qAgentEvents, qLastAgentCursor, qMemory, qOpenTurns, qOpenTurnsOf, qImage,
	qApprovalEvents, qState, qPathAfter, qPathBefore, qChildren, qSearch, qKey, qAnyPending,
}

var writeQueries = []string{
	qExists, qGetConversation, qInsertConversation, qRename, qDelete, qInsertAgentEvent,
	qCommitConversation, qInsertMessage, qInsertEvent, qCloseTurn, qDropMemory, qInsertMemory,
	qReferenceImage, qInsertImage, qSetState, qDeleteState, qSetKey, qSetHead, qReopenTurn, qClearMemory, qQueueMessage,
	qPendingUpTo, qIndexPending, qDropPending,
	qSavepoint, qRollbackTo, qRelease, qBegin, qCommit, qRollback,
}
