-- 0012: the queue of the full-text index (search.go). Commit no longer
-- writes a message's FTS5 row in the message's transaction (FTS5 writes a
-- new segment and its structure record at every transaction that adds a
-- row: +30-50 % CPU per commit); it queues the row here instead, in that
-- same transaction, keyed by the message's rowid: the owner's scope token
-- and the text parts, one a line, as message_search takes them. The
-- store's indexer moves queued rows into message_search in batches, one
-- transaction each, and every search first moves what is queued, so a
-- search never misses a committed message. Rows a crash leaves here are
-- moved at the next Open. The delete trigger removes a message's queued
-- row as well as its indexed one (a conversation's delete cascades).
CREATE TABLE message_search_pending (
	message INTEGER PRIMARY KEY, -- messages.rowid
	scope   TEXT NOT NULL,
	body    TEXT NOT NULL
) STRICT;

DROP TRIGGER messages_search_delete;

CREATE TRIGGER messages_search_delete AFTER DELETE ON messages
	WHEN old.type IN ('user_message', 'assistant_message')
BEGIN
	DELETE FROM message_search_pending WHERE message = old.rowid;
	DELETE FROM message_search WHERE rowid = old.rowid;
END;
