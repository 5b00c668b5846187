-- 0013: lookup keys (Write.Keys): a key a caller recorded with a message
-- finds its conversation again, from any process and after a restart —
-- the OpenAI door's digest of a resent Chat Completions history. One row
-- per (agent, owner, key), the newest winning. Written by Commit, under the
-- conversation's row lock, like the journal: no foreign key (see 0009);
-- the journal's delete trigger removes a deleted conversation's keys.
-- search_path is pinned to the schema the migration ran in.
CREATE TABLE lookup_keys (
	agent_id        text COLLATE "C" NOT NULL,
	owner           text COLLATE "C" NOT NULL,
	key             text COLLATE "C" NOT NULL,
	conversation_id text COLLATE "C" NOT NULL,
	seq             bigint NOT NULL,
	PRIMARY KEY (agent_id, owner, key)
);

-- The delete trigger's lookup.
CREATE INDEX lookup_keys_conversation ON lookup_keys (conversation_id);

CREATE OR REPLACE FUNCTION delete_journal() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	DELETE FROM messages WHERE conversation_id = OLD.id;
	DELETE FROM events WHERE conversation_id = OLD.id;
	DELETE FROM memory WHERE conversation_id = OLD.id;
	DELETE FROM lookup_keys WHERE conversation_id = OLD.id;
	RETURN NULL;
END
$$;
