-- 0019: which turns are open moves out of the journal into a table of its
-- own. A turn's close was an UPDATE of its user message's row, and
-- `closed` was in the condition of messages_open_turns, so that update
-- could never be HOT: every turn wrote a second version of its user
-- message with new entries in every index of messages (the search
-- vector's GIN entries among them) and left the old one to vacuum. A row
-- here is inserted with its user message (the trigger below) and deleted
-- when the turn closes; a regenerate inserts it again.
CREATE TABLE open_turns (
	conversation_id text COLLATE "C" NOT NULL,
	id              text COLLATE "C" NOT NULL,
	seq             bigint NOT NULL,
	PRIMARY KEY (conversation_id, id)
);

INSERT INTO open_turns (conversation_id, id, seq)
	SELECT conversation_id, id, seq FROM messages WHERE type = 'user_message' AND NOT closed;

-- Every user message opens its turn, as `closed`'s default did: by a
-- trigger, so that a process of an older version still running during an
-- upgrade, whose insert does not know this table, opens its turns too
-- (its reads and closes of `closed` fail, so it answers nothing; a new
-- process answers them).
-- The function names its schema (the migration's): a SET search_path
-- on it, as on delete_journal, cost every user message's commit about
-- 60 µs of the database's CPU (the setting's change replans the insert).
DO $do$
BEGIN
	EXECUTE format($f$
		CREATE FUNCTION open_turn() RETURNS trigger LANGUAGE plpgsql AS $b$
		BEGIN
			INSERT INTO %I.open_turns (conversation_id, id, seq) VALUES (NEW.conversation_id, NEW.id, NEW.seq);
			RETURN NULL;
		END
		$b$
	$f$, current_schema());
END
$do$;

CREATE TRIGGER messages_open_turn AFTER INSERT ON messages
	FOR EACH ROW WHEN (NEW.type = 'user_message') EXECUTE FUNCTION open_turn();

DROP INDEX messages_open_turns;
ALTER TABLE messages DROP COLUMN closed;

CREATE OR REPLACE FUNCTION delete_journal() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	DELETE FROM messages WHERE conversation_id = OLD.id;
	DELETE FROM events WHERE conversation_id = OLD.id;
	DELETE FROM memory WHERE conversation_id = OLD.id;
	DELETE FROM lookup_keys WHERE conversation_id = OLD.id;
	DELETE FROM open_turns WHERE conversation_id = OLD.id;
	RETURN NULL;
END
$$;
