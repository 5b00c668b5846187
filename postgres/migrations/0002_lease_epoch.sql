-- 0002: the epoch of each conversation's turn lease (fencing token). A
-- process that takes the lease (the advisory lock) increments it in the same
-- statement; every write of a turn carries the epoch it was made under and
-- Commit refuses it once the epoch moved on. Commit already locks the
-- conversation row, so checking the epoch there costs nothing, and the
-- increment waits for any commit in flight: after it, no write of the
-- previous holder can land.
ALTER TABLE conversations ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0;
