-- 0003: images stored once. An image's bytes live in images, keyed by the
-- hex SHA-256 of its bytes; journal messages, events and memory entries keep
-- the image part without its data and, in their images column, the hashes of
-- their image parts in order ("" for a part kept inline). Rows written
-- before this migration have images NULL and their data inline: they read
-- as before. Adding a nullable column without a default rewrites nothing.

ALTER TABLE messages ADD COLUMN images text;
ALTER TABLE events ADD COLUMN images text;
ALTER TABLE memory ADD COLUMN images text;

-- refs counts the conversations that reference the image (the rows of
-- conversation_images), not its occurrences: an image lives exactly as long
-- as some conversation that mentions it. Commit takes a reference with an
-- upsert and a delete releases it in a trigger; both change the row under
-- its lock, so a concurrent commit and delete of two conversations sharing
-- an image never lose it (the upsert waits for an uncommitted delete of the
-- row and then inserts it anew).
CREATE TABLE images (
	sha256 text COLLATE "C" PRIMARY KEY,
	data   bytea NOT NULL,
	refs   bigint NOT NULL
);
-- Images are compressed already: store them out of line without trying.
ALTER TABLE images ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE conversation_images (
	conversation_id text COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	sha256          text COLLATE "C" NOT NULL,
	PRIMARY KEY (conversation_id, sha256)
);

-- Deleting a conversation cascades to its conversation_images rows; this
-- trigger releases their images in the same transaction and deletes those
-- no conversation references any more. search_path is pinned to the schema
-- the migration ran in, where the tables are.
CREATE FUNCTION release_image() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	UPDATE images SET refs = refs - 1 WHERE sha256 = OLD.sha256;
	DELETE FROM images WHERE sha256 = OLD.sha256 AND refs <= 0;
	RETURN NULL;
END
$$;

CREATE TRIGGER conversation_images_release AFTER DELETE ON conversation_images
	FOR EACH ROW EXECUTE FUNCTION release_image();
