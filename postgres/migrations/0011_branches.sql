-- 0010: the message tree (SPEC §18). Every message has a parent (the seq
-- it follows; 0 at the root) and the conversation a head (the last
-- message of its active path). Every conversation written before this
-- migration is one path in seq order: parent = seq - 1, head = the last
-- seq. The parent also goes into each message's payload, where reads find
-- it. A fork remembers where it came from.
ALTER TABLE messages ADD COLUMN parent bigint NOT NULL DEFAULT 0;
UPDATE messages SET parent = seq - 1,
	payload = CASE WHEN seq > 1 THEN jsonb_set(payload::jsonb, '{parent}', to_jsonb(seq - 1))::text ELSE payload END;

-- The children of a message: siblings, and a send's cost independent of
-- how many branches a conversation has.
CREATE INDEX messages_children ON messages (conversation_id, parent, seq);

ALTER TABLE conversations ADD COLUMN head bigint NOT NULL DEFAULT 0,
	ADD COLUMN forked_from text NOT NULL DEFAULT '',
	ADD COLUMN forked_seq bigint NOT NULL DEFAULT 0;
UPDATE conversations SET head = next_seq - 1;
