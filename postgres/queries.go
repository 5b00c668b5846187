package postgres

import "github.com/agentik/agentik/storeutil"

// Every statement the store runs. pgx prepares each once per connection and
// caches it. Reads are answered from an index without a sort step, so their
// cost does not grow with the journal (TestMigrationToFewerEventIndexes
// checks it for the reads of events and agent events).

const conversationColumns = "id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out, head, forked_from, forked_seq"

// Reads.
const (
	// Conversations are scoped to one agent (the Store's view, see ForAgent).
	qGetConversation = "SELECT " + conversationColumns + " FROM conversations WHERE id = $1 AND agent_id = $2"
	qList            = "SELECT " + conversationColumns + ` FROM conversations WHERE agent_id = $1 AND owner = $2
		ORDER BY updated_at DESC, id DESC LIMIT $3`
	// The row comparison walks the (agent_id, owner, updated_at DESC, id
	// DESC) index from the page token on.
	qListBefore = "SELECT " + conversationColumns + ` FROM conversations
		WHERE agent_id = $1 AND owner = $2 AND (updated_at, id) < ($3, $4)
		ORDER BY updated_at DESC, id DESC LIMIT $5`
	qSetState = `INSERT INTO conversation_state (conversation_id, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (conversation_id, key) DO UPDATE SET value = excluded.value`
	qDeleteState = `DELETE FROM conversation_state WHERE conversation_id = $1 AND key = $2`
	qSetKey      = `INSERT INTO lookup_keys (agent_id, owner, key, conversation_id, seq) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (agent_id, owner, key) DO UPDATE SET conversation_id = excluded.conversation_id, seq = excluded.seq`
	qLastCursor  = `SELECT last_cursor FROM conversations WHERE id = $1`
	qAgentEvents = `SELECT cursor, owner, payload FROM agent_events WHERE agent_id = $3 AND cursor > $1 ORDER BY cursor LIMIT $2`
	// The agent-event counter: every numbered agent event has a cursor up
	// to it, and every event committed before the last sequencer run is
	// numbered (see qSequence).
	qAgentCounter = `SELECT last FROM cursors WHERE name = 'agent_events'`
	qBusKey       = `SELECT key FROM bus_key WHERE id = 1`
	// The Coordinator's queue in one round trip: the ids of the open turns
	// after the first (part 0) in seq order, then the first open turn and
	// the journal entries answering it (part 1) in seq order. Only the
	// first open turn's payload is read: the others are listed (TurnQueue).
	// Part 2 is the conversation's head (TurnQueue.Head), when a turn is
	// open. Part 1 takes the first turn's seq as a value (no turn: NULL,
	// no rows) and asks for seq order, so that it is one range of the
	// primary key, starting at the turn, in every plan. Joined with f, a
	// plan made while the journal was empty (a young database; a
	// connection keeps its cached plan until an ANALYZE) read every
	// message of the conversation; without the order it scanned
	// messages_children, every entry of the conversation.
	qQueue = `WITH o AS (SELECT seq, id FROM open_turns WHERE conversation_id = $1),
		f AS (SELECT seq, id FROM o ORDER BY seq LIMIT 1)
		SELECT 0 AS part, o.seq, o.id, NULL::text AS payload, NULL::text AS images FROM o, f WHERE o.seq > f.seq
		UNION ALL
		(SELECT 1, m.seq, m.id, m.payload, m.images FROM messages m
			WHERE m.conversation_id = $1 AND m.seq >= (SELECT seq FROM f) AND (m.seq = (SELECT seq FROM f) OR m.reply_to = (SELECT id FROM f))
			ORDER BY m.seq)
		UNION ALL
		SELECT 2, c.head, '', NULL, NULL FROM conversations c, f WHERE c.id = $1
		ORDER BY part, seq`
	// Used by the Bus: the events of the conversations it has subscribers
	// for, each after the cursor it delivered up to and up to a bound, a
	// page of at most $4 per conversation, in cursor order per
	// conversation. Within a conversation cursors commit in order, so once
	// cursor c is visible every smaller one of the same conversation is too.
	qEventsAfter = `SELECT e.cursor, e.payload, e.images
		FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS s(id, after, upto, n)
		CROSS JOIN LATERAL (SELECT cursor, payload, images FROM events
			WHERE conversation_id = s.id AND cursor > s.after AND cursor <= s.upto
			ORDER BY cursor LIMIT $4) e
		ORDER BY s.n, e.cursor`
	qAgentEventsRange = `SELECT cursor, owner, payload FROM agent_events
		WHERE agent_id = $4 AND cursor > $1 AND cursor <= $2 ORDER BY cursor LIMIT $3`
)

// The SQL of the reads every store makes alike (storeutil.Reads).
var reads = storeutil.ReadQueries{
	Exists: `SELECT 1 FROM conversations WHERE id = $1`,
	MessagesAfter: `SELECT payload, images FROM messages WHERE conversation_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3 OFFSET $4`,
	MessagesBefore: `SELECT payload, images FROM messages WHERE conversation_id = $1 AND seq > $2 AND seq < $3
		ORDER BY seq DESC LIMIT $4 OFFSET $5`,
	Message:    `SELECT payload, images FROM messages WHERE id = $1 AND conversation_id = $2`,
	Events:     `SELECT cursor, payload, images FROM events WHERE conversation_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`,
	EventsJSON: `SELECT cursor, type, payload, images FROM events WHERE conversation_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`,
	ApprovalEvents: `SELECT cursor, payload FROM events WHERE conversation_id = $1 AND cursor > $2
		AND type IN ('approval_requested', 'approval_resolved') ORDER BY cursor`,
	Memory: `SELECT ord, payload, images FROM memory WHERE conversation_id = $1 ORDER BY ord`,
	OpenTurns: `SELECT m.payload, m.images FROM open_turns o JOIN conversations c ON c.id = o.conversation_id
		JOIN messages m ON m.conversation_id = o.conversation_id AND m.seq = o.seq
		WHERE c.agent_id = $1 ORDER BY o.conversation_id, o.seq`,
	// Used by the Coordinator: one conversation's open turns, in seq order.
	OpenTurnsOf: `SELECT m.payload, m.images FROM open_turns o
		JOIN messages m ON m.conversation_id = o.conversation_id AND m.seq = o.seq
		WHERE o.conversation_id = $1 ORDER BY o.seq`,
	State: `SELECT value FROM conversation_state WHERE conversation_id = $1 AND key = $2`,
	Key:   `SELECT conversation_id, seq FROM lookup_keys WHERE agent_id = $1 AND owner = $2 AND key = $3`,
	// The path from the root to a seq (the head when $2 < 0), walked up
	// the parent links by primary key and cut below $3 (SPEC §18).
	PathAfter:  pathCTE + ` WHERE m.seq > $3 AND m.seq < $4 ORDER BY m.seq LIMIT $5 OFFSET $6`,
	PathBefore: pathCTE + ` WHERE m.seq > $3 AND m.seq < $4 ORDER BY m.seq DESC LIMIT $5 OFFSET $6`,
	Children:   `SELECT seq FROM messages WHERE conversation_id = $1 AND parent = $2 ORDER BY seq`,
	All:        nil, // LIMIT NULL is no limit
}

const pathCTE = `WITH RECURSIVE path(seq) AS (
		SELECT CASE WHEN $2::bigint < 0 THEN head ELSE $2::bigint END FROM conversations WHERE id = $1
		UNION ALL
		SELECT m.parent FROM path JOIN messages AS m ON m.conversation_id = $1 AND m.seq = path.seq
		WHERE m.parent > $3::bigint)
	SELECT m.payload, m.images FROM path JOIN messages AS m ON m.conversation_id = $1 AND m.seq = path.seq`

// Writes.
const (
	qInsertConversation = `INSERT INTO conversations
		(id, owner, title, temporal, created_at, updated_at, tokens_in, tokens_out, agent_id, forked_from, forked_seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	qRename = "UPDATE conversations SET title = $1 WHERE id = $2 AND agent_id = $3 RETURNING " + conversationColumns
	// The journal, events and working memory go with the conversation
	// (a trigger: migrations/0009), its images and state by their keys.
	qDelete = `DELETE FROM conversations WHERE id = $1 AND agent_id = $2 RETURNING owner`
	// An agent event is stored unnumbered; qSequence gives it its cursor.
	qInsertAgentEvent = `INSERT INTO agent_events (conversation_id, owner, type, date, payload, agent_id) VALUES ($1, $2, $3, $4, $5, $6)`
	// qQuietCommit has a quiet write's transaction commit without waiting
	// for its WAL flush (see quiet): SET LOCAL, which also holds in the
	// implicit transaction of a one-round-trip batch.
	qQuietCommit = `SELECT set_config('synchronous_commit', 'off', true)`
	// qCommitGuard starts a commit built from remembered counters (see
	// commitStates): it takes the conversation's row lock, as
	// qCommitConversation does, and fails the transaction — a division by
	// zero, which nothing else in a commit can raise — when the row is
	// gone, the write's lease epoch ($2, 0 for none) is not the row's, the
	// counters moved since, or the owner and agent the commit's agent event
	// names are not the row's. (A message always comes with its event, so
	// last_cursor moves with next_seq; both are checked.)
	qCommitGuard = `SELECT 1 / coalesce((SELECT CASE WHEN ($2::bigint = 0 OR lease_epoch = $2::bigint)
		AND next_seq = $3 AND next_ord = $4 AND last_cursor = $5 AND owner = $6 AND agent_id = $7 THEN 1 ELSE 0 END
		FROM conversations WHERE id = $1 FOR UPDATE), 0)`
	qCommitConversation = `SELECT owner, agent_id, next_seq, next_ord, lease_epoch, last_cursor, head FROM conversations WHERE id = $1 FOR UPDATE`
	// The conversations and agent events of before agents (agent_id '')
	// go to the default agent.
	qAdoptConversations = `UPDATE conversations SET agent_id = $1 WHERE agent_id = ''`
	// Agent events are adopted in two statements, each reading an index:
	// numbered ones agent_events_agent_cursor, unnumbered ones
	// agent_events_unnumbered.
	qAdoptAgentEvents = `UPDATE agent_events SET agent_id = $1 WHERE agent_id = '' AND cursor IS NOT NULL`
	qAdoptUnnumbered  = `UPDATE agent_events SET agent_id = $1 WHERE agent_id = '' AND cursor IS NULL`
	// A message with text has its search vector ($10, searchVector),
	// filed under its owner's scope token ($11; search.go,
	// migrations/0014); both are NULL for one without.
	qInsertMessage = `INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, images, parent, search, search_scope)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	// A regenerate opens the turn of a user message again.
	qReopenTurn = `INSERT INTO open_turns (conversation_id, id, seq)
		SELECT conversation_id, id, seq FROM messages WHERE id = $1 AND conversation_id = $2 AND type = 'user_message'
		ON CONFLICT DO NOTHING`
	qClearMemory = `DELETE FROM memory WHERE conversation_id = $1`
	// An event's cursor comes from a sequence, drawn under the
	// conversation's row lock (migrations/0004).
	qInsertEvent = `INSERT INTO events (cursor, conversation_id, type, date, payload, images)
		VALUES (nextval('event_cursors'), $1, $2, $3, $4, $5) RETURNING cursor`
	// Only a turn of the same conversation is closed.
	qCloseTurn    = `DELETE FROM open_turns WHERE id = $1 AND conversation_id = $2`
	qDropMemory   = `DELETE FROM memory WHERE conversation_id = $1 AND ord <= $2`
	qInsertMemory = `INSERT INTO memory (conversation_id, ord, payload, images) VALUES ($1, $2, $3, $4)`
	// After the events' inserts: currval is the last cursor this session
	// drew, the write's last event ($8: the write has events). $9 is the
	// head after the write (SPEC §18), set here rather than by a statement
	// of its own: one new version of the conversation's row per commit,
	// not two. A head move always comes with an event, so last_cursor
	// moves with it (qCommitGuard).
	qUpdateAfterCommit = `UPDATE conversations SET
		next_seq = $1, next_ord = $2,
		tokens_in = tokens_in + $3, tokens_out = tokens_out + $4,
		updated_at = CASE WHEN $5::boolean THEN $6::timestamptz ELSE updated_at END,
		last_cursor = CASE WHEN $8::boolean THEN currval('event_cursors') ELSE last_cursor END,
		head = $9
		WHERE id = $7`
	// qUpdateTouched is qUpdateAfterCommit with the write's touched agent
	// event inserted by the same statement ($10–$14: owner, type, date,
	// payload, agent), one statement fewer per commit.
	qUpdateTouched = `WITH a AS (INSERT INTO agent_events (conversation_id, owner, type, date, payload, agent_id)
		VALUES ($7, $10, $11, $12, $13, $14)) ` + qUpdateAfterCommit

	// qSequence numbers up to $1 committed agent events that have no cursor
	// yet, in arrival order, with the next values of the agent_events
	// counter, and returns how many it numbered and the greatest cursor it
	// gave. It is one statement, so one transaction: its numbers become
	// visible together. Two runs serialise on the counter row (the second
	// waits in c for the first to commit, then continues from its counter);
	// a row the first one numbered meanwhile no longer has cursor NULL when
	// the second comes to update it and is skipped (its reserved number
	// stays unused: cursors need not be dense). A run that finds nothing
	// writes nothing.
	qSequence = `WITH p AS (
			SELECT arrival, row_number() OVER (ORDER BY arrival) AS r
			FROM agent_events WHERE cursor IS NULL ORDER BY arrival LIMIT $1),` + sequenceNumbering + `,
			false`

	// qSequenceUnlessBusy is qSequence for the Bus's background sequencer:
	// when another run holds the counter row, it does not wait for it (for
	// its commit's WAL flush) but returns at once with busy true, and the
	// caller runs again a moment later — the other run's snapshot may have
	// been taken before this process's events committed. The counter row is
	// locked only when some event waits for its number, so a run that finds
	// nothing still writes nothing.
	qSequenceUnlessBusy = `WITH w AS (SELECT EXISTS (SELECT 1 FROM agent_events WHERE cursor IS NULL) AS waiting),
		lk AS (SELECT last FROM cursors WHERE name = 'agent_events' AND (SELECT waiting FROM w)
			FOR UPDATE SKIP LOCKED),
		p AS (SELECT arrival, row_number() OVER (ORDER BY arrival) AS r
			FROM agent_events WHERE cursor IS NULL AND EXISTS (SELECT 1 FROM lk) ORDER BY arrival LIMIT $1),` + sequenceNumbering + `,
			(SELECT waiting FROM w) AND NOT EXISTS (SELECT 1 FROM lk)`

	// sequenceNumbering is what both sequencer statements do with the
	// events p picked: count them, move the counter past them and number
	// them; it selects how many and the greatest cursor given, and the
	// statement adds whether it was busy.
	sequenceNumbering = `
		n AS (SELECT count(*) AS k FROM p),
		c AS (UPDATE cursors SET last = last + n.k FROM n
			WHERE name = 'agent_events' AND n.k > 0 RETURNING last - n.k AS base),
		u AS (UPDATE agent_events a SET cursor = c.base + p.r FROM p, c
			WHERE a.arrival = p.arrival AND a.cursor IS NULL RETURNING a.cursor)
		SELECT (SELECT k FROM n), COALESCE((SELECT MAX(cursor) FROM u), 0)`
)
