-- 0009: the journal, the events and working memory without foreign keys.
-- Their rows are inserted only by Commit, which holds the conversation's
-- row lock (FOR UPDATE) from its first statement to its end, and deleted
-- with the conversation by DeleteConversation, in the statement that
-- deletes it (qDelete). The keys' checks — a trigger and a lookup of the
-- conversation for every inserted row — only repeated that lock. The
-- conversation's images and state keep theirs (written rarely).
ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_conversation_id_fkey;
ALTER TABLE memory DROP CONSTRAINT memory_conversation_id_fkey;
