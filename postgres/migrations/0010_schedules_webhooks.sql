-- 0010: schedules and their runs, webhooks and their outbox (SPEC §20).

-- payload is the schedule's JSON (timing, content, …); the columns are what
-- the scheduler and the lists look up.
CREATE TABLE schedules (
	id          text COLLATE "C" PRIMARY KEY,
	agent_id    text NOT NULL,
	owner       text NOT NULL,
	source      text NOT NULL,
	enabled     boolean NOT NULL,
	next_run_at timestamptz, -- NULL: it will not run again
	last_run_at timestamptz,
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	payload     text NOT NULL
);

CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled AND next_run_at IS NOT NULL;
CREATE INDEX schedules_agent_owner ON schedules (agent_id, owner, created_at);

-- One run per due time: the conditional move of next_run_at and this
-- unique index make a claim exclusive across processes.
CREATE TABLE schedule_runs (
	id              text COLLATE "C" PRIMARY KEY,
	schedule_id     text NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
	agent_id        text NOT NULL,
	owner           text NOT NULL,
	due_at          timestamptz NOT NULL,
	manual          boolean NOT NULL DEFAULT false,
	claimed_at      timestamptz NOT NULL,
	lease_until     timestamptz NOT NULL,
	finished_at     timestamptz,
	conversation_id text NOT NULL,
	message_id      text NOT NULL DEFAULT '',
	outcome         text NOT NULL,
	error           text NOT NULL DEFAULT '',
	attempts        integer NOT NULL DEFAULT 1
);

CREATE UNIQUE INDEX schedule_runs_due ON schedule_runs (schedule_id, due_at) WHERE NOT manual;
CREATE INDEX schedule_runs_schedule ON schedule_runs (schedule_id, claimed_at DESC);
CREATE INDEX schedule_runs_stale ON schedule_runs (lease_until) WHERE outcome = 'claimed';

CREATE TABLE webhooks (
	id              text COLLATE "C" PRIMARY KEY,
	agent_id        text NOT NULL,
	owner           text NOT NULL,
	all_owners      boolean NOT NULL DEFAULT false,
	url             text NOT NULL,
	events          text[] NOT NULL,
	description     text NOT NULL DEFAULT '',
	secret          text NOT NULL,
	enabled         boolean NOT NULL DEFAULT true,
	disabled_reason text NOT NULL DEFAULT '',
	source          text NOT NULL,
	created_at      timestamptz NOT NULL
);

CREATE INDEX webhooks_agent_owner ON webhooks (agent_id, owner);

-- The outbox and the delivery log in one: a row per event per webhook,
-- written in the transaction of the event. A pending row is due at
-- next_attempt_at; a process that takes it (FOR UPDATE SKIP LOCKED) moves
-- next_attempt_at to the end of its lease, so that another takes it only
-- if it never reports.
CREATE TABLE webhook_deliveries (
	id              text COLLATE "C" PRIMARY KEY,
	webhook_id      text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	event           text NOT NULL,
	payload         text NOT NULL,
	status          text NOT NULL DEFAULT 'pending',
	attempts        integer NOT NULL DEFAULT 0,
	created_at      timestamptz NOT NULL,
	next_attempt_at timestamptz NOT NULL,
	last_attempt_at timestamptz,
	last_status     integer NOT NULL DEFAULT 0,
	last_error      text NOT NULL DEFAULT ''
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at DESC);
