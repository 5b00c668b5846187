-- 0002: images stored once. An image's bytes live in images, keyed by the
-- hex SHA-256 of its bytes; journal messages, events and memory entries keep
-- the image part without its data and, in their images column, the hashes of
-- their image parts in order ("" for a part kept inline). Rows written
-- before this migration have images NULL and their data inline: they read
-- as before.

ALTER TABLE messages ADD COLUMN images TEXT;
ALTER TABLE events ADD COLUMN images TEXT;
ALTER TABLE memory ADD COLUMN images TEXT;

-- refs counts the conversations that reference the image (the rows of
-- conversation_images), not its occurrences: an image lives exactly as long
-- as some conversation that mentions it.
CREATE TABLE images (
	sha256 TEXT PRIMARY KEY,
	data   BLOB NOT NULL,
	refs   INTEGER NOT NULL
) STRICT;

CREATE TABLE conversation_images (
	conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
	sha256          TEXT NOT NULL,
	PRIMARY KEY (conversation_id, sha256)
) STRICT, WITHOUT ROWID;

-- Deleting a conversation cascades to its conversation_images rows; this
-- trigger releases their images in the same transaction and deletes those
-- no conversation references any more.
CREATE TRIGGER conversation_images_release AFTER DELETE ON conversation_images
BEGIN
	UPDATE images SET refs = refs - 1 WHERE sha256 = OLD.sha256;
	DELETE FROM images WHERE sha256 = OLD.sha256 AND refs <= 0;
END;
