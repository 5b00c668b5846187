-- 0009: the journal, the events and working memory without foreign keys.
-- Their rows are inserted only by Commit, which holds the conversation's
-- row lock (FOR UPDATE) from its first statement to its end: the keys'
-- checks — a trigger and a lookup of the conversation for every inserted
-- row — only repeated that lock. What the keys' ON DELETE CASCADE did, a
-- trigger on conversations does, whichever process (of whatever version)
-- deletes one. The conversation's images and state keep their keys
-- (written rarely). search_path is pinned to the schema the migration ran
-- in, where the tables are.
ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_conversation_id_fkey;
ALTER TABLE memory DROP CONSTRAINT memory_conversation_id_fkey;

CREATE FUNCTION delete_journal() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	DELETE FROM messages WHERE conversation_id = OLD.id;
	DELETE FROM events WHERE conversation_id = OLD.id;
	DELETE FROM memory WHERE conversation_id = OLD.id;
	RETURN NULL;
END
$$;

CREATE TRIGGER conversations_delete_journal AFTER DELETE ON conversations
	FOR EACH ROW EXECUTE FUNCTION delete_journal();
