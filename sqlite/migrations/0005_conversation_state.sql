-- 0005: state kept with a conversation by key (Write.State): what a tool
-- remembers per conversation, such as a remote A2A agent's contextId.
CREATE TABLE conversation_state (
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	key             TEXT NOT NULL,
	value           TEXT NOT NULL,
	PRIMARY KEY (conversation_id, key)
) STRICT;
