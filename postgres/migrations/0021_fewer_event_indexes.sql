-- 0021: fewer index entries for each event a commit writes.
--
-- events: every read names the conversation (conversation_id, cursor), so
-- that pair becomes the primary key and the index on the cursor alone goes.
-- Cursors come from one sequence (event_cursors): unique without an index.
--
-- agent_events: an event is inserted without a cursor and numbered once by
-- the sequencer (0004). Until then only agent_events_unnumbered needs it;
-- after, only the index the stream is read by, (agent_id, cursor). Both
-- indexes that took the unnumbered row as well (the cursor alone, unique,
-- and (agent_id, cursor)) become one unique index of numbered rows. The
-- counter row hands each cursor out once, across agents.
--
-- Each plain turn writes two events and two agent events: eight index
-- entries fewer per turn (docs/postgres.md, "Issue 53, fourteenth
-- session").
--
-- Both tables' indexes are built again here, and the tables stay locked
-- (ACCESS EXCLUSIVE) until the migration commits: commits of processes of
-- the previous version wait meanwhile. The build is not cut by the pool's
-- statement timeout, which would roll it back at every start of a big
-- store.
SET LOCAL statement_timeout = 0;
ALTER TABLE events DROP CONSTRAINT events_pkey;
DROP INDEX events_conversation_cursor;
ALTER TABLE events ADD PRIMARY KEY (conversation_id, cursor);

DROP INDEX agent_events_cursor;
DROP INDEX agent_events_agent_cursor;
CREATE UNIQUE INDEX agent_events_agent_cursor ON agent_events (agent_id, cursor) WHERE cursor IS NOT NULL;
