-- 0007: state kept with a conversation by key (Write.State): what a tool
-- remembers per conversation, such as a remote A2A agent's contextId.
CREATE TABLE conversation_state (
	conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	key             text COLLATE "C" NOT NULL,
	value           text NOT NULL,
	PRIMARY KEY (conversation_id, key)
);
