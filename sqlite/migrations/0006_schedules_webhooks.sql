-- 0006: schedules and their runs, webhooks and their outbox (SPEC §20).
-- Times are Unix milliseconds (UTC).

-- payload is the schedule's JSON (timing, content, …); the columns are what
-- the scheduler and the lists look up.
CREATE TABLE schedules (
	id          TEXT PRIMARY KEY,
	agent_id    TEXT NOT NULL,
	owner       TEXT NOT NULL,
	source      TEXT NOT NULL,
	enabled     INTEGER NOT NULL,
	next_run_at INTEGER, -- NULL: it will not run again
	last_run_at INTEGER,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	payload     TEXT NOT NULL
) STRICT;

CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled = 1 AND next_run_at IS NOT NULL;
CREATE INDEX schedules_agent_owner ON schedules (agent_id, owner, created_at);

-- One run per due time: the unique index is what makes a claim exclusive
-- across processes, beside the conditional move of next_run_at.
CREATE TABLE schedule_runs (
	id              TEXT PRIMARY KEY,
	schedule_id     TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
	agent_id        TEXT NOT NULL,
	owner           TEXT NOT NULL,
	due_at          INTEGER NOT NULL,
	manual          INTEGER NOT NULL DEFAULT 0,
	claimed_at      INTEGER NOT NULL,
	lease_until     INTEGER NOT NULL,
	finished_at     INTEGER,
	conversation_id TEXT NOT NULL,
	message_id      TEXT NOT NULL DEFAULT '',
	outcome         TEXT NOT NULL,
	error           TEXT NOT NULL DEFAULT '',
	attempts        INTEGER NOT NULL DEFAULT 1
) STRICT;

CREATE UNIQUE INDEX schedule_runs_due ON schedule_runs (schedule_id, due_at) WHERE manual = 0;
CREATE INDEX schedule_runs_schedule ON schedule_runs (schedule_id, claimed_at DESC);
CREATE INDEX schedule_runs_stale ON schedule_runs (lease_until) WHERE outcome = 'claimed';

-- events is the subscribed event types between spaces (' turn.completed
-- turn.failed '): the outbox insert matches one with instr.
CREATE TABLE webhooks (
	id              TEXT PRIMARY KEY,
	agent_id        TEXT NOT NULL,
	owner           TEXT NOT NULL,
	all_owners      INTEGER NOT NULL DEFAULT 0,
	url             TEXT NOT NULL,
	events          TEXT NOT NULL,
	description     TEXT NOT NULL DEFAULT '',
	secret          TEXT NOT NULL,
	enabled         INTEGER NOT NULL DEFAULT 1,
	disabled_reason TEXT NOT NULL DEFAULT '',
	source          TEXT NOT NULL,
	created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX webhooks_agent_owner ON webhooks (agent_id, owner);

-- The outbox and the delivery log in one: a row per event per webhook,
-- written in the transaction of the event. A pending row is due at
-- next_attempt_at; a process that takes it moves next_attempt_at to the
-- end of its lease, so that another takes it only if it never reports.
CREATE TABLE webhook_deliveries (
	id              TEXT PRIMARY KEY,
	webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	event           TEXT NOT NULL,
	payload         TEXT NOT NULL,
	status          TEXT NOT NULL DEFAULT 'pending',
	attempts        INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	next_attempt_at INTEGER NOT NULL,
	last_attempt_at INTEGER,
	last_status     INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at DESC);
