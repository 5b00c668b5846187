-- 0009: memory blocks (SPEC §19). Only values that were changed are
-- stored: a block's description, limit and first value come from the
-- configuration. owner is the principal, or '' for an agent whose memory
-- scope is agent. Times are Unix milliseconds (UTC).
CREATE TABLE memory_blocks (
	agent_id   TEXT NOT NULL,
	owner      TEXT NOT NULL,
	label      TEXT NOT NULL,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	updated_by TEXT NOT NULL,
	PRIMARY KEY (agent_id, owner, label)
) STRICT;

-- Every change, by a person or the agent, with the value before and after.
CREATE TABLE memory_history (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	agent_id        TEXT NOT NULL,
	owner           TEXT NOT NULL,
	label           TEXT NOT NULL,
	old_value       TEXT NOT NULL,
	new_value       TEXT NOT NULL,
	by              TEXT NOT NULL,
	conversation_id TEXT NOT NULL,
	date            INTEGER NOT NULL
) STRICT;

CREATE INDEX memory_history_block ON memory_history (agent_id, owner, label, id);
