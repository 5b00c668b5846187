-- 0004: cursors without a database-wide lock (docs/postgres.md, "Cursors
-- without a global lock"). Until 0003 every commit that appended events
-- updated a counter row of cursors and held its lock through its WAL flush,
-- so such commits were serialised across the whole database.
--
-- Conversation events take their cursor from a sequence instead, inside the
-- commit that already holds the conversation's row lock: cursors are unique
-- and never reused (a sequence never hands a value out twice), and within a
-- conversation they increase in commit order (the next writer of the
-- conversation draws its cursors only after the previous one committed).
-- Across conversations they need not be ordered (SPEC §2). The sequence
-- continues after the last counter value, so no cursor is reused.
CREATE SEQUENCE event_cursors;
SELECT setval('event_cursors', last + 1, false) FROM cursors WHERE name = 'events';
DELETE FROM cursors WHERE name = 'events';

-- The conversation's newest cursor, kept by Commit under the row lock: it
-- answers LastCursor without touching the events, and tells a Bus whether
-- another process committed to the conversation between two of its events.
ALTER TABLE conversations ADD COLUMN last_cursor bigint NOT NULL DEFAULT 0;
UPDATE conversations c SET last_cursor = m.cursor
	FROM (SELECT conversation_id, MAX(cursor) AS cursor FROM events GROUP BY conversation_id) m
	WHERE m.conversation_id = c.id;

-- Agent events form one stream across all conversations, so their cursors
-- are numbered after commit by a sequencer: a writer inserts the event with
-- no cursor and an arrival number (a sequence, no lock); the sequencer — one
-- statement that any process may run — gives every committed unnumbered
-- event the next cursors of the agent_events counter, in arrival order, and
-- commits them at once. Sequencer runs serialise on the counter row, writers
-- never do. A reader that sees cursor n therefore sees every smaller one,
-- whatever order the writers committed in. Rows numbered before 0004 keep
-- their cursor; arrival stays NULL on them.
ALTER TABLE agent_events DROP CONSTRAINT agent_events_pkey;
ALTER TABLE agent_events ALTER COLUMN cursor DROP NOT NULL;
CREATE UNIQUE INDEX agent_events_cursor ON agent_events (cursor);
CREATE SEQUENCE agent_event_arrivals;
ALTER TABLE agent_events ADD COLUMN arrival bigint;
ALTER TABLE agent_events ALTER COLUMN arrival SET DEFAULT nextval('agent_event_arrivals');
CREATE INDEX agent_events_unnumbered ON agent_events (arrival) WHERE cursor IS NULL;
