-- 0006: the message tree (SPEC §18). Every message has a parent (the seq
-- it follows; 0 at the root) and the conversation a head (the last
-- message of its active path). Every conversation written before this
-- migration is one path in seq order: parent = seq - 1, head = the last
-- seq. The parent also goes into each message's payload, where reads find
-- it. A fork remembers where it came from.
ALTER TABLE messages ADD COLUMN parent INTEGER NOT NULL DEFAULT 0;
UPDATE messages SET parent = seq - 1;
UPDATE messages SET payload = json_set(payload, '$.parent', seq - 1) WHERE seq > 1;

-- The children of a message: siblings, and a send's cost independent of
-- how many branches a conversation has.
CREATE INDEX messages_children ON messages (conversation_id, parent, seq);

ALTER TABLE conversations ADD COLUMN head INTEGER NOT NULL DEFAULT 0;
UPDATE conversations SET head = next_seq - 1;
ALTER TABLE conversations ADD COLUMN forked_from TEXT NOT NULL DEFAULT '';
ALTER TABLE conversations ADD COLUMN forked_seq INTEGER NOT NULL DEFAULT 0;
