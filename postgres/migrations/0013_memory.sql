-- 0013: memory blocks (SPEC §19). Only values that were changed are
-- stored: a block's description, limit and first value come from the
-- configuration. owner is the principal, or '' for an agent whose memory
-- scope is agent.
CREATE TABLE memory_blocks (
	agent_id   text NOT NULL,
	owner      text NOT NULL,
	label      text COLLATE "C" NOT NULL,
	value      text NOT NULL,
	updated_at timestamptz NOT NULL,
	updated_by text NOT NULL,
	PRIMARY KEY (agent_id, owner, label)
);

-- Every change, by a person or the agent, with the value before and after.
CREATE TABLE memory_history (
	id              bigserial PRIMARY KEY,
	agent_id        text NOT NULL,
	owner           text NOT NULL,
	label           text NOT NULL,
	old_value       text NOT NULL,
	new_value       text NOT NULL,
	by_whom         text NOT NULL,
	conversation_id text NOT NULL,
	date            timestamptz NOT NULL
);

CREATE INDEX memory_history_block ON memory_history (agent_id, owner, label, id);
