-- 0004: several agents in one database (SPEC §9). A conversation and its
-- agent events belong to one agent; rows written before this migration
-- have agent_id '' and are claimed by the default agent at start
-- (Store.AdoptConversations).

ALTER TABLE conversations ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE agent_events ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';

-- ListConversations: one agent, one owner, newest updated_at first.
DROP INDEX conversations_owner_updated;
CREATE INDEX conversations_agent_owner_updated ON conversations (agent_id, owner, updated_at DESC, id DESC);

-- An agent's event stream, replayed by cursor.
CREATE INDEX agent_events_agent_cursor ON agent_events (agent_id, cursor);
