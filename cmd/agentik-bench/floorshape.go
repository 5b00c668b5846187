package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentik/agentik/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The pgfloor phase's shapes (--pgfloor-shape). "minimal" is the floor
// itself: two one-row commits on a schema of two tables. The others run
// on agentik's own schema (its migrations). "journal" and "agentik" send
// every write of a commit in one statement, the fewest a storage design
// of that schema could send; "split" sends them as agentik does:
//
//   - "journal": a turn's journal and nothing else. The user message's
//     commit inserts its journal row (the schema's trigger opens the
//     turn) and moves the conversation's counters; the queue read takes
//     the open turn's message; the answer's commit inserts its row,
//     closes the turn and moves the counters. No event log, agent
//     stream, working memory or search vectors.
//   - "agentik": what a plain turn of this store writes, each commit one
//     statement: the journal rows with their search vectors, the event
//     log (the user message, the answer: `end` is not stored), one agent event per
//     commit, the working memory, the open turn and the counters with
//     updated_at, and the queue read. Not counted: the sequencer's later
//     numbering of the agent events (agentik's runs number many at once).
//   - "split": the agentik shape's writes sent the way agentik's store
//     sends a commit on its one-round-trip path: one statement a row
//     behind a guard that takes the row lock, each commit one batch (the
//     guard checks only the seq; the vector goes as text). Against "agentik" it measures what merging the
//     statements of a commit would save.
var floorShapes = []string{"minimal", "journal", "agentik", "split"}

// The values a turn's statements draw their parameters from (floorStmt).
const (
	argConv = iota
	argID
	argPayload
	argTime
	argSeq // the message's seq, from the client's count (split)
	argVector
)

// floorStmt is one statement of a shape's turn; its parameters are the
// turn's values at args, in order.
type floorStmt struct {
	sql  string
	args []int
}

// floorStep is one transaction of a turn: one statement, or several sent
// as one batch (one round trip, one implicit transaction), as agentik
// sends a commit.
type floorStep []floorStmt

// floorTurnOf returns a shape's turn, its transactions in order.
func floorTurnOf(shape string) []floorStep {
	switch shape {
	case "minimal":
		c := floorStep{{qFloorCommit, []int{argConv, argID, argPayload}}}
		return []floorStep{c, c}
	case "split":
		return []floorStep{
			floorSplitCommit("user_message", false),
			{{qFloorQueue, []int{argConv}}},
			floorSplitCommit("assistant_message", true),
		}
	}
	full := shape == "agentik"
	args := []int{argConv, argID, argPayload, argTime}
	if full {
		args = append(args, argVector)
	}
	return []floorStep{
		{{floorCommit(full, "user_message", false), args}},
		{{qFloorQueue, []int{argConv}}},
		{{floorCommit(full, "assistant_message", true), args}},
	}
}

// floorSplitCommit is one commit of the split shape: the agentik shape's
// writes as agentik's store sends them, one statement a row, in one
// batch. The guard takes the conversation's row lock and checks the
// client's count; the last statement inserts the agent event and moves
// the counters.
func floorSplitCommit(msgType string, closes bool) floorStep {
	step := floorStep{
		{`SELECT 1 / coalesce((SELECT CASE WHEN next_seq = $2 THEN 1 ELSE 0 END FROM conversations WHERE id = $1 FOR UPDATE), 0)`,
			[]int{argConv, argSeq}},
		{`INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, parent, search, search_scope)
			VALUES ($1, $2::bigint, $3, '` + msgType + `', $4, '', $5, $2::bigint - 1, $6::tsvector, 'scope')`,
			[]int{argConv, argSeq, argID, argTime, argPayload, argVector}},
	}
	if closes {
		step = append(step, floorStmt{`DELETE FROM open_turns WHERE conversation_id = $1`, []int{argConv}})
	}
	return append(step,
		floorStmt{`INSERT INTO events (cursor, conversation_id, type, date, payload)
			VALUES (nextval('event_cursors'), $1, '` + msgType + `', $2, $3)`, []int{argConv, argTime, argPayload}},
		floorStmt{`INSERT INTO memory (conversation_id, ord, payload) VALUES ($1, $2, $3)`, []int{argConv, argSeq, argPayload}},
		floorStmt{`WITH a AS (INSERT INTO agent_events (conversation_id, owner, type, date, payload, agent_id)
			VALUES ($1, 'floor', 'conversation_updated', $3, left($4, 150), 'default'))
			UPDATE conversations SET next_seq = $2::bigint + 1, next_ord = next_ord + 1, head = $2::bigint, updated_at = $3,
				last_cursor = currval('event_cursors') WHERE id = $1`, []int{argConv, argSeq, argTime, argPayload}})
}

// floorVector is the search vector of each journal row of the agentik
// shape. It goes as text, which the server parses; agentik sends the one
// it computes in binary.
const floorVector = "floor:1 plain:2 turn:3 five:4 words:5 answer:6 question:7"

// qFloorQueue reads the conversation's first open turn's message. The
// message is found by its whole key: a join on the conversation alone is
// what a planner without statistics (a young database) picks, and it
// reads every message of the conversation.
const qFloorQueue = `SELECT payload FROM messages
	WHERE conversation_id = $1 AND seq = (SELECT seq FROM open_turns WHERE conversation_id = $1 ORDER BY seq LIMIT 1)`

// floorCommit is one commit of the journal and agentik shapes, one
// statement: the counters' update locks the conversation's row and
// numbers the message, the rest hangs off it. It fails (division by
// zero) when the conversation is missing.
func floorCommit(full bool, msgType string, closes bool) string {
	var b strings.Builder
	b.WriteString(`WITH u AS (UPDATE conversations SET next_seq = next_seq + 1, next_ord = next_ord + 1, head = next_seq`)
	if full {
		b.WriteString(`, updated_at = $4, last_cursor = last_cursor + 1`)
	}
	b.WriteString(` WHERE id = $1 RETURNING next_seq - 1 AS seq)`)
	search := "NULL, NULL"
	if full {
		search = `$5::tsvector, 'scope'`
	}
	fmt.Fprintf(&b, `, m AS (INSERT INTO messages (conversation_id, seq, id, type, date, reply_to, payload, parent, search, search_scope)
		SELECT $1, u.seq, $2, '%s', $4, '', $3, u.seq - 1, %s FROM u)`, msgType, search)
	if closes {
		b.WriteString(`, d AS (DELETE FROM open_turns WHERE conversation_id = $1)`)
	}
	if full {
		fmt.Fprintf(&b, `, e AS (INSERT INTO events (cursor, conversation_id, type, date, payload)
			SELECT nextval('event_cursors'), $1, '%s', $4, $3 FROM u)`, msgType)
		b.WriteString(`, a AS (INSERT INTO agent_events (conversation_id, owner, type, date, payload, agent_id)
			SELECT $1, 'floor', 'conversation_updated', $4, left($3, 150), 'default' FROM u)`)
		b.WriteString(`, w AS (INSERT INTO memory (conversation_id, ord, payload) SELECT $1, u.seq, $3 FROM u)`)
	}
	b.WriteString(` SELECT 1 / count(*) FROM u`)
	return b.String()
}

// floorRows is a table a shape writes and how many rows a turn adds to it.
type floorRows struct {
	table   string
	perTurn int64
}

// floorWrites is what a shape's turn stores, checked after the run.
func floorWrites(shape string) []floorRows {
	switch shape {
	case "minimal":
		return []floorRows{{"floor_messages", 2}}
	case "journal":
		return []floorRows{{"messages", 2}, {"open_turns", 0}}
	}
	// agentik and split
	return []floorRows{{"messages", 2}, {"open_turns", 0}, {"events", 2}, {"agent_events", 2}, {"memory", 2}}
}

// floorPrepare makes the shape's schema in the run's database, with
// conversations c1…cN.
func floorPrepare(ctx context.Context, pool *pgxpool.Pool, dsn, shape string, convs int) error {
	if shape == "minimal" {
		if _, err := pool.Exec(ctx, floorSchema); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
		_, err := pool.Exec(ctx, `INSERT INTO floor_conversations SELECT 'c' || i, 0, 0 FROM generate_series(1, $1::int) i`, convs)
		return err
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{}) // migrates
	if err != nil {
		return fmt.Errorf("agentik's schema: %w", err)
	}
	st.Close()
	_, err = pool.Exec(ctx, `INSERT INTO conversations (id, owner, created_at, updated_at, agent_id)
		SELECT 'c' || i, 'floor', $2, $2, 'default' FROM generate_series(1, $1::int) i`, convs, time.Now())
	return err
}

// floorCheck checks that the turns counted stored what their shape
// writes. A turn cut by the stop is not counted, and may have committed
// some of its rows (the server commits a statement whose caller gave up
// waiting): each client adds at most one turn's rows more. An open turn
// is closed by its own turn's second commit, so at most one a client
// stays open.
func floorCheck(ctx context.Context, pool *pgxpool.Pool, shape string, turns, clients int64) error {
	for _, w := range floorWrites(shape) {
		var rows int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+w.table).Scan(&rows); err != nil {
			return err
		}
		least, most := w.perTurn*turns, w.perTurn*(turns+clients)
		if w.perTurn == 0 {
			most = clients
		}
		if rows < least || rows > most {
			return fmt.Errorf("%d rows in %s for %d turns", rows, w.table, turns)
		}
	}
	return nil
}
