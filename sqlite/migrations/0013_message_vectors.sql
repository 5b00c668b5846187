-- 0013: the vector index of the journal (SPEC §19, semantic recall). At
-- most one row per message, under the name of the embedding model that
-- made it (a changed model embeds again): written by the background
-- worker after the message, never in its transaction. An empty vector
-- records a message that has no text to embed or that the endpoint
-- refused, so it is not asked for again. agent_id and scope (the owner's
-- token, storeutil.SearchScope) are the conversation's, copied when the
-- row is written: a search reads the newest vectors of one principal and
-- agent from the index below, and still checks each hit on its
-- conversation. The row goes with its message (the key's cascade), so
-- with its conversation.
CREATE TABLE message_vectors (
	message_id TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
	agent_id   TEXT NOT NULL,
	scope      TEXT NOT NULL,
	model      TEXT NOT NULL,
	date       INTEGER NOT NULL,
	vector     BLOB NOT NULL
) STRICT;

CREATE INDEX message_vectors_recent ON message_vectors (scope, agent_id, model, date DESC);
