-- 0003: tool approvals (SPEC §10). A pending approval is an
-- approval_requested event without an approval_resolved event for the same
-- call id. This partial index finds a conversation's approval events
-- without reading its other events, and makes a second answer to a call
-- impossible: one approval_resolved event per conversation and call id.
CREATE INDEX events_approvals ON events (conversation_id, cursor)
	WHERE type IN ('approval_requested', 'approval_resolved');
CREATE UNIQUE INDEX events_approval_answered ON events (conversation_id, json_extract(payload, '$.call_id'))
	WHERE type = 'approval_resolved';
