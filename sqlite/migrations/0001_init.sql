-- 0001: conversations, their journal, durable events, working memory and the
-- agent-level event stream. Times are Unix milliseconds (UTC).

CREATE TABLE conversations (
	id         TEXT PRIMARY KEY,
	owner      TEXT NOT NULL,
	title      TEXT NOT NULL DEFAULT '',
	temporal   INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	tokens_in  INTEGER NOT NULL DEFAULT 0,
	tokens_out INTEGER NOT NULL DEFAULT 0,
	-- Counters for the next journal seq and memory order: O(1) allocation
	-- inside the write transaction, and gap-free seqs because the counter
	-- rolls back with a failed transaction.
	next_seq   INTEGER NOT NULL DEFAULT 1,
	next_ord   INTEGER NOT NULL DEFAULT 1
) STRICT;

-- ListConversations: one owner, newest updated_at first, ties by id.
CREATE INDEX conversations_owner_updated ON conversations (owner, updated_at DESC, id DESC);

CREATE TABLE messages (
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	seq             INTEGER NOT NULL,
	id              TEXT NOT NULL UNIQUE,
	type            TEXT NOT NULL,
	date            INTEGER NOT NULL,
	reply_to        TEXT NOT NULL DEFAULT '',
	-- closed is maintained by Commit on user messages: set once an
	-- assistant_message (not interrupted), an error or an interrupted event
	-- replies to it. It makes OpenTurns a scan of a small partial index
	-- instead of an anti-join over the whole journal.
	closed          INTEGER NOT NULL DEFAULT 0,
	payload         TEXT NOT NULL,
	PRIMARY KEY (conversation_id, seq)
) STRICT;

CREATE INDEX messages_open_turns ON messages (conversation_id, seq)
	WHERE type = 'user_message' AND closed = 0;

CREATE TABLE events (
	-- AUTOINCREMENT: a cursor is never handed out twice, even after the rows
	-- holding the greatest cursors are deleted.
	cursor          INTEGER PRIMARY KEY AUTOINCREMENT,
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	type            TEXT NOT NULL,
	date            INTEGER NOT NULL,
	payload         TEXT NOT NULL
) STRICT;

CREATE INDEX events_conversation_cursor ON events (conversation_id, cursor);

CREATE TABLE memory (
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	ord             INTEGER NOT NULL,
	payload         TEXT NOT NULL,
	PRIMARY KEY (conversation_id, ord)
) STRICT;

-- Agent events outlive their conversation (a deleted event must stay
-- replayable), so no foreign key here.
CREATE TABLE agent_events (
	cursor          INTEGER PRIMARY KEY AUTOINCREMENT,
	conversation_id TEXT NOT NULL,
	owner           TEXT NOT NULL,
	type            TEXT NOT NULL,
	date            INTEGER NOT NULL,
	payload         TEXT NOT NULL
) STRICT;
