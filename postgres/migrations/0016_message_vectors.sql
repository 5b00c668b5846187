-- 0016: the vector index of the journal (SPEC §19, semantic recall). At
-- most one row per message, under the name of the embedding model that
-- made it (a changed model embeds again): written by the background
-- worker after the message, never in its transaction, idempotently
-- (several processes may embed the same message; the last write wins and
-- writes the same vector). An empty vector records a message the endpoint
-- refused, so it is not asked for again. agent_id and scope (the owner's
-- token, the message's search_scope) are copied when the row is written:
-- a search reads the newest vectors of one principal and agent from the
-- index below, and still checks each hit on its conversation. The row
-- goes with its message (the key's cascade; the journal's delete trigger
-- deletes the messages of a deleted conversation). Inserting a message
-- checks nothing here: the key is on this table.
CREATE TABLE message_vectors (
	message_id text COLLATE "C" PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
	agent_id   text COLLATE "C" NOT NULL,
	scope      text COLLATE "C" NOT NULL,
	model      text NOT NULL,
	date       timestamptz NOT NULL,
	vector     bytea NOT NULL
);

CREATE INDEX message_vectors_recent ON message_vectors (scope, agent_id, model, date DESC);

-- The indexer's walk of new messages (newest first, down to a floor):
-- the messages of the full-text index by date.
CREATE INDEX messages_search_date ON messages (date DESC) WHERE search IS NOT NULL;
