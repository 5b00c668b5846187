-- 0002: the epoch of each conversation's turn lease (fencing token). A
-- process that takes the lease (the advisory lock) sets a new epoch in the
-- same statement; every write of a turn carries the epoch it was made under
-- and Commit refuses it once the epoch moved on. Commit already locks the
-- conversation row, so checking the epoch there costs nothing, and setting
-- a new epoch waits for any commit in flight: after it, no write of the
-- previous holder can land.
--
-- Epochs come from a sequence, so a value is never handed out twice, even
-- if the database crashes before a new epoch is flushed (the lease session
-- commits asynchronously). lease_prev is the epoch before the last change:
-- a process that finds its own previous epoch there knows nobody else held
-- the lease in between and keeps its cached working memory.
CREATE SEQUENCE lease_epochs;
ALTER TABLE conversations
	ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0,
	ADD COLUMN lease_prev bigint NOT NULL DEFAULT 0;
