-- 0009: lookup keys (Write.Keys): a key a caller recorded with a message
-- finds its conversation again, from any process and after a restart —
-- the OpenAI door's digest of a resent Chat Completions history. One row
-- per (agent, owner, key), the newest winning; deleted with the
-- conversation.
CREATE TABLE lookup_keys (
	agent_id        TEXT NOT NULL,
	owner           TEXT NOT NULL,
	key             TEXT NOT NULL,
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	seq             INTEGER NOT NULL,
	PRIMARY KEY (agent_id, owner, key)
) STRICT;

-- The cascade's lookup when a conversation is deleted.
CREATE INDEX lookup_keys_conversation ON lookup_keys (conversation_id);
