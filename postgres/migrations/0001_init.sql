-- 0001: conversations, their journal, durable events, working memory and the
-- agent-level event stream. Ids use the "C" collation so that ordering is the
-- byte order every other store uses, whatever the database's locale.

-- Cursor counters. Every write that appends events takes the counter row's
-- lock by updating it, and holds it until commit: cursors are therefore
-- handed out in commit order, and a reader following by cursor never sees a
-- greater cursor before a smaller one (a plain sequence would let a later
-- transaction commit first). A failed transaction rolls its counter back, so
-- cursors have no gaps except those left by deletes.
CREATE TABLE cursors (
	name text COLLATE "C" PRIMARY KEY,
	last bigint NOT NULL
);
INSERT INTO cursors (name, last) VALUES ('events', 0), ('agent_events', 0);

CREATE TABLE conversations (
	id         text COLLATE "C" PRIMARY KEY,
	owner      text NOT NULL,
	title      text NOT NULL DEFAULT '',
	temporal   boolean NOT NULL DEFAULT false,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	tokens_in  bigint NOT NULL DEFAULT 0,
	tokens_out bigint NOT NULL DEFAULT 0,
	-- Counters for the next journal seq and memory order, updated in the
	-- write transaction under the row lock: gap-free seqs across processes.
	next_seq   bigint NOT NULL DEFAULT 1,
	next_ord   bigint NOT NULL DEFAULT 1
);

CREATE INDEX conversations_owner_updated ON conversations (owner, updated_at DESC, id DESC);

CREATE TABLE messages (
	conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	seq             bigint NOT NULL,
	id              text COLLATE "C" NOT NULL UNIQUE,
	type            text NOT NULL,
	date            timestamptz NOT NULL,
	reply_to        text COLLATE "C" NOT NULL DEFAULT '',
	-- Set by Commit on a user message once its turn is closed, so OpenTurns
	-- reads a small partial index instead of anti-joining the journals.
	closed          boolean NOT NULL DEFAULT false,
	payload         text NOT NULL,
	PRIMARY KEY (conversation_id, seq)
);

CREATE INDEX messages_open_turns ON messages (conversation_id, seq)
	WHERE type = 'user_message' AND NOT closed;

CREATE TABLE events (
	cursor          bigint PRIMARY KEY,
	conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	type            text NOT NULL,
	date            timestamptz NOT NULL,
	payload         text NOT NULL
);

CREATE INDEX events_conversation_cursor ON events (conversation_id, cursor);

CREATE TABLE memory (
	conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	ord             bigint NOT NULL,
	payload         text NOT NULL,
	PRIMARY KEY (conversation_id, ord)
);

-- Agent events outlive their conversation (a deleted event must stay
-- replayable), so no foreign key here.
CREATE TABLE agent_events (
	cursor          bigint PRIMARY KEY,
	conversation_id text COLLATE "C" NOT NULL,
	owner           text NOT NULL,
	type            text NOT NULL,
	date            timestamptz NOT NULL,
	payload         text NOT NULL
);
