package storeutil

import (
	"context"
	"database/sql"
	"math"

	"github.com/agentik/agentik"
)

// Reads are the reads of a conversation's journal, events, working memory
// and state, and of the open turns: the same Go in both stores around each
// one's own SQL (ReadQueries) and driver (ReadDB). A store embeds its Reads,
// so that these methods are its own (agentik.Store). Each read is one
// statement, so it needs no transaction: the statement sees one consistent
// snapshot. A conversation's existence is only checked when its query finds
// nothing, so the common case is one indexed lookup. Every method is safe
// for concurrent use and returns errors in the agentik vocabulary, prefixed
// with the operation.
type Reads struct {
	db    ReadDB
	q     *ReadQueries
	agent string
}

// NewReads returns the reads of agent's view (OpenTurns lists that agent's
// open turns) over db with the queries q.
func NewReads(db ReadDB, q *ReadQueries, agent string) Reads {
	return Reads{db: db, q: q, agent: agent}
}

// ForAgent returns the same reads for the view of agent id.
func (r Reads) ForAgent(id string) Reads {
	r.agent = id
	return r
}

// ReadDB is a store's driver as Reads use it.
type ReadDB interface {
	// Read runs fn with a connection for reads and returns its error
	// classified in the agentik vocabulary (an error that carries a code
	// keeps it) and prefixed with op. A closed store answers EUnavailable
	// without calling fn.
	Read(ctx context.Context, op string, fn func(c ReadConn) error) error
}

// ReadConn runs single statements for Reads; its errors are the driver's.
type ReadConn interface {
	// Each runs query and calls fn for each row.
	Each(ctx context.Context, fn func(row Scanner) error, query string, args ...any) error
	// One runs query, which returns at most one row, and scans that row
	// into dest; found is false when there is none.
	One(ctx context.Context, dest []any, query string, args ...any) (found bool, err error)
	// Images returns the stored data of the images with the given hashes,
	// base64-encoded, by hash. An image that is gone is left out.
	Images(ctx context.Context, hashes []string) (map[string]string, error)
}

// ReadQueries are a store's SQL for Reads. Each takes the arguments and
// returns the columns its comment lists, in that order.
type ReadQueries struct {
	Exists         string // conversation id → a row when it exists
	MessagesAfter  string // conversation id, after, limit, offset → payload, images (seq ascending)
	MessagesBefore string // conversation id, after, before, limit, offset → payload, images (seq descending)
	Message        string // message id, conversation id → payload, images
	Events         string // conversation id, after, limit → cursor, payload, images
	EventsJSON     string // conversation id, after, limit → cursor, type, payload, images
	ApprovalEvents string // conversation id, after → cursor, payload
	Memory         string // conversation id → order, payload, images
	OpenTurns      string // agent id → payload, images
	OpenTurnsOf    string // conversation id → payload, images
	State          string // conversation id, key → value
	Key            string // agent id, owner, key → conversation id, seq
	// The message tree (SPEC §18). PathAfter and PathBefore page the path
	// from the root to a seq by walking parent links up from it:
	// conversation id, to (< 0: the head), after, before, limit, offset →
	// payload, images (seq ascending; PathBefore descending). Children:
	// conversation id, parent → seq (ascending).
	PathAfter  string
	PathBefore string
	Children   string
	// All is the limit argument that stands for no limit.
	All any
}

// Scanner is one row of a query in either driver (*sql.Row, *sql.Rows,
// pgx.Row, pgx.Rows).
type Scanner interface {
	Scan(dest ...any) error
}

// Rows are the rows of a query in either driver (*sql.Rows, pgx.Rows).
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Each calls fn for each row of rows and returns the first error, fn's or
// the rows'. The caller closes rows.
func Each[R Rows](rows R, fn func(R) error) error {
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// limit is the limit argument of a read of up to limit rows; limit <= 0
// reads all of them.
func (r Reads) limit(limit int) any {
	if limit <= 0 {
		return r.q.All
	}
	return int64(limit)
}

// Messages pages the journal by seq through the (conversation_id, seq)
// primary key, so a page costs the same at seq 10 and at seq 100,000. With
// Before set, the page is the newest entries below it (above After, if
// set); otherwise the oldest entries above After. Offset skips entries in
// the paging direction. The bool reports whether more entries lie beyond
// the page in that direction. Results are ascending.
func (r Reads) Messages(ctx context.Context, conversationID string, req agentik.MessagesRequest) ([]agentik.Message, bool, error) {
	limit, err := MessagesLimit(req)
	if err != nil {
		return nil, false, err
	}
	// One more than the limit tells whether the page has more beyond it.
	var query string
	var args []any
	switch {
	case req.Branch == agentik.BranchAll && req.Before > 0:
		query, args = r.q.MessagesBefore, []any{conversationID, req.After, req.Before, limit + 1, req.Offset}
	case req.Branch == agentik.BranchAll:
		query, args = r.q.MessagesAfter, []any{conversationID, req.After, limit + 1, req.Offset}
	case req.Before > 0:
		query, args = r.q.PathBefore, []any{conversationID, int64(-1), req.After, req.Before, limit + 1, req.Offset}
	default:
		query, args = r.q.PathAfter, []any{conversationID, int64(-1), req.After, int64(math.MaxInt64), limit + 1, req.Offset}
	}
	msgs := decodedMessages()
	err = r.db.Read(ctx, "messages "+conversationID, func(c ReadConn) error {
		if err := c.Each(ctx, msgs.scan, query, args...); err != nil {
			return err
		}
		if msgs.Len() == 0 {
			return r.exists(ctx, c, conversationID)
		}
		if err := r.restore(ctx, c, conversationID, msgs); err != nil {
			return err
		}
		return r.siblings(ctx, c, conversationID, msgs.list)
	})
	if err != nil {
		return nil, false, err
	}
	list, more := MessagesPage(msgs.list, limit, req)
	return list, more, nil
}

// Path returns the messages on the path from the root to seq to (to < 0:
// the head), leaving out those below from (agentik.Store).
func (r Reads) Path(ctx context.Context, conversationID string, to, from int64) ([]agentik.Message, error) {
	msgs := decodedMessages()
	err := r.conversation(ctx, "path "+conversationID, conversationID, msgs, r.q.PathAfter,
		conversationID, to, max(from-1, 0), int64(math.MaxInt64), r.q.All, 0)
	if err != nil {
		return nil, err
	}
	return msgs.list, nil
}

// siblings sets the Siblings of msgs: one indexed read of the children of
// each distinct parent.
func (r Reads) siblings(ctx context.Context, c ReadConn, conversationID string, msgs []agentik.Message) error {
	kids := map[int64][]int64{}
	for i := range msgs {
		p := msgs[i].Parent
		list, ok := kids[p]
		if !ok {
			err := c.Each(ctx, func(row Scanner) error {
				var seq int64
				err := row.Scan(&seq)
				list = append(list, seq)
				return err
			}, r.q.Children, conversationID, p)
			if err != nil {
				return err
			}
			kids[p] = list
		}
		if len(list) > 1 {
			msgs[i].Siblings = list
		}
	}
	return nil
}

// CheckBranch refuses a MessagesRequest.Branch no store knows.
func CheckBranch(b string) error {
	if b != "" && b != agentik.BranchHead && b != agentik.BranchAll {
		return agentik.Errorf(agentik.EInvalid, "branch must be %q or %q", agentik.BranchHead, agentik.BranchAll)
	}
	return nil
}

// Message returns one journal message; ENotFound when the conversation or
// the message (in that conversation) does not exist.
func (r Reads) Message(ctx context.Context, conversationID, id string) (agentik.Message, error) {
	msgs := decodedMessages()
	err := r.db.Read(ctx, "message "+id, func(c ReadConn) error {
		if err := c.Each(ctx, msgs.scan, r.q.Message, id, conversationID); err != nil {
			return err
		}
		if msgs.Len() == 0 {
			return agentik.Errorf(agentik.ENotFound, "message %s not found", id)
		}
		return r.restore(ctx, c, conversationID, msgs)
	})
	if err != nil {
		return agentik.Message{}, err
	}
	return msgs.list[0], nil
}

// Events returns up to limit events of the conversation after the cursor,
// ascending; limit <= 0 returns all of them.
func (r Reads) Events(ctx context.Context, conversationID string, after int64, limit int) ([]agentik.Event, error) {
	evs := decodedEvents()
	if err := r.conversation(ctx, "events "+conversationID, conversationID, evs, r.q.Events, conversationID, after, r.limit(limit)); err != nil {
		return nil, err
	}
	return evs.list, nil
}

// EventsJSON is Events as the wire carries them, each row passed through
// as stored unless it has images to restore (agentik.EventJSONReader).
func (r Reads) EventsJSON(ctx context.Context, conversationID string, after int64, limit int) ([]*agentik.Shared[agentik.Event], error) {
	rows := &EventRows{}
	err := r.conversation(ctx, "events "+conversationID, conversationID, rows, r.q.EventsJSON, conversationID, after, r.limit(limit))
	if err != nil {
		return nil, err
	}
	return rows.Events(), nil
}

// Memory returns the working memory in order.
func (r Reads) Memory(ctx context.Context, conversationID string) ([]agentik.MemoryEntry, error) {
	entries := decodedMemory()
	if err := r.conversation(ctx, "memory "+conversationID, conversationID, entries, r.q.Memory, conversationID); err != nil {
		return nil, err
	}
	return entries.list, nil
}

// ApprovalEvents returns the conversation's approval events after the
// cursor, ascending (the events_approvals index).
func (r Reads) ApprovalEvents(ctx context.Context, conversationID string, after int64) ([]agentik.Event, error) {
	evs := []agentik.Event{}
	err := r.db.Read(ctx, "approval events "+conversationID, func(c ReadConn) error {
		return c.Each(ctx, func(row Scanner) error {
			var cursor int64
			var payload []byte
			if err := row.Scan(&cursor, &payload); err != nil {
				return err
			}
			ev, err := DecodeEvent(cursor, payload, "")
			if err != nil {
				return err
			}
			evs = append(evs, ev)
			return nil
		}, r.q.ApprovalEvents, conversationID, after)
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// State returns the value of a conversation's state key (nil when unset).
func (r Reads) State(ctx context.Context, conversationID, key string) (agentik.RawJSON, error) {
	var v []byte
	err := r.db.Read(ctx, "state "+conversationID, func(c ReadConn) error {
		_, err := c.One(ctx, []any{&v}, r.q.State, conversationID, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// OpenTurns reads the partial index of unclosed user messages that Commit
// maintains, so start-up cost follows the number of open turns, not the
// size of the journals.
func (r Reads) OpenTurns(ctx context.Context) ([]agentik.Message, error) {
	return r.openTurns(ctx, r.q.OpenTurns, r.agent)
}

// OpenTurnsOf returns the open turns of one conversation in seq order: the
// queue of a conversation whose turns several processes share.
func (r Reads) OpenTurnsOf(ctx context.Context, conversationID string) ([]agentik.Message, error) {
	return r.openTurns(ctx, r.q.OpenTurnsOf, conversationID)
}

func (r Reads) openTurns(ctx context.Context, query string, arg any) ([]agentik.Message, error) {
	msgs := decodedMessages()
	err := r.db.Read(ctx, "open turns", func(c ReadConn) error {
		if err := c.Each(ctx, msgs.scan, query, arg); err != nil {
			return err
		}
		// A turn whose images are gone belongs to a conversation deleted
		// since the query: it is no longer open.
		missing, err := RestoreImages(msgs.Pending(), msgs.Content, loader(ctx, c))
		msgs.list = DropIndexes(msgs.list, missing)
		return err
	})
	if err != nil {
		return nil, err
	}
	return msgs.list, nil
}

// conversation reads the rows of one conversation's query into rows: no row
// is ENotFound when the conversation does not exist; the rows found have
// their images restored.
func (r Reads) conversation(ctx context.Context, op, conversationID string, rows collector, query string, args ...any) error {
	return r.db.Read(ctx, op, func(c ReadConn) error {
		if err := c.Each(ctx, rows.scan, query, args...); err != nil {
			return err
		}
		if rows.Len() == 0 {
			return r.exists(ctx, c, conversationID)
		}
		return r.restore(ctx, c, conversationID, rows)
	})
}

// restore restores the images of rows of one conversation. A missing image
// means the conversation was deleted meanwhile: ENotFound, what the read
// would have answered a moment later.
func (r Reads) restore(ctx context.Context, c ReadConn, conversationID string, rows collector) error {
	missing, err := RestoreImages(rows.Pending(), rows.Content, loader(ctx, c))
	if err != nil || len(missing) == 0 {
		return err
	}
	if err := r.exists(ctx, c, conversationID); err != nil {
		return err
	}
	return ErrImageMissing
}

// exists returns ENotFound unless the conversation exists.
func (r Reads) exists(ctx context.Context, c ReadConn, id string) error {
	var one int
	found, err := c.One(ctx, []any{&one}, r.q.Exists, id)
	if err == nil && !found {
		return NotFound(id)
	}
	return err
}

// NotFound is the error for a conversation that does not exist (or is
// another agent's).
func NotFound(id string) error {
	return agentik.Errorf(agentik.ENotFound, "conversation %s not found", id)
}

func loader(ctx context.Context, c ReadConn) func([]string) (map[string]string, error) {
	return func(hashes []string) (map[string]string, error) { return c.Images(ctx, hashes) }
}

// RestoreImages puts the stored images back into the rows of one read
// (Restore), loading those the rows name with load, and only when some
// row has images. It returns the results whose images are gone.
func RestoreImages(rows []Pending, parts func(i int) []agentik.Content, load func(hashes []string) (map[string]string, error)) (missing []int, err error) {
	if len(rows) == 0 {
		return nil, nil
	}
	data, err := load(Wanted(rows))
	if err != nil {
		return nil, err
	}
	return Restore(rows, data, parts)
}

// collector is what a read collects: its rows, and those whose images are
// to be restored.
type collector interface {
	scan(row Scanner) error
	Len() int
	Pending() []Pending
	Content(i int) []agentik.Content
}

// decoded collects the decoded rows of one read of journal messages, events
// or memory entries, noting those whose images column is set.
type decoded[T any] struct {
	list    []T // never nil: a read that finds nothing returns an empty list
	pending []Pending
	decode  func(row Scanner) (T, string, error)
	content func(v *T) []agentik.Content
}

func decodedMessages() *decoded[agentik.Message] {
	return &decoded[agentik.Message]{list: []agentik.Message{}, decode: scanMessage,
		content: func(m *agentik.Message) []agentik.Content { return m.Content }}
}

func decodedEvents() *decoded[agentik.Event] {
	return &decoded[agentik.Event]{list: []agentik.Event{}, decode: ScanEvent,
		content: func(ev *agentik.Event) []agentik.Content { return ev.Message.Content }}
}

func decodedMemory() *decoded[agentik.MemoryEntry] {
	return &decoded[agentik.MemoryEntry]{list: []agentik.MemoryEntry{}, decode: scanMemory,
		content: func(e *agentik.MemoryEntry) []agentik.Content { return e.Message.Content }}
}

func (d *decoded[T]) scan(row Scanner) error {
	v, refs, err := d.decode(row)
	if err != nil {
		return err
	}
	if refs != "" {
		d.pending = append(d.pending, Pending{I: len(d.list), Refs: refs})
	}
	d.list = append(d.list, v)
	return nil
}

func (d *decoded[T]) Len() int                        { return len(d.list) }
func (d *decoded[T]) Pending() []Pending              { return d.pending }
func (d *decoded[T]) Content(i int) []agentik.Content { return d.content(&d.list[i]) }

// scan takes one row of a read of events as the wire carries them: cursor,
// type, payload and images column.
func (r *EventRows) scan(row Scanner) error {
	var cursor int64
	var typ string
	var payload string // a driver that reads text as a string hands it over without a copy
	var refs sql.NullString
	if err := row.Scan(&cursor, &typ, &payload, &refs); err != nil {
		return err
	}
	return r.AddString(cursor, typ, payload, refs.String)
}

// scanMessage reads a message row (payload, images) and returns the
// message as stored and its images column ("" when its content is all
// inline).
func scanMessage(row Scanner) (agentik.Message, string, error) {
	var payload []byte
	var refs sql.NullString
	if err := row.Scan(&payload, &refs); err != nil {
		return agentik.Message{}, "", err
	}
	m, err := DecodeMessage(payload)
	return m, refs.String, err
}

// ScanEvent reads an event row (cursor, payload, images) and returns the
// event as stored and its images column.
func ScanEvent(row Scanner) (agentik.Event, string, error) {
	return scanNumbered(row, DecodeEvent)
}

// scanMemory reads a working-memory row (order, payload, images) and
// returns the entry as stored and its images column.
func scanMemory(row Scanner) (agentik.MemoryEntry, string, error) {
	return scanNumbered(row, func(ord int64, payload []byte, _ string) (agentik.MemoryEntry, error) {
		return DecodeMemory(ord, payload)
	})
}

// scanNumbered reads a row of a number (cursor or order), a payload and an
// images column, and decodes it.
func scanNumbered[T any](row Scanner, decode func(n int64, payload []byte, refs string) (T, error)) (T, string, error) {
	var n int64
	var payload []byte
	var refs sql.NullString
	if err := row.Scan(&n, &payload, &refs); err != nil {
		var zero T
		return zero, "", err
	}
	v, err := decode(n, payload, refs.String)
	return v, refs.String, err
}

// ScanAgentEvent reads an agent-event row (cursor, owner, payload).
func ScanAgentEvent(row Scanner) (agentik.AgentEvent, error) {
	var cursor int64
	var owner string
	var payload []byte
	if err := row.Scan(&cursor, &owner, &payload); err != nil {
		return agentik.AgentEvent{}, err
	}
	return DecodeAgentEvent(cursor, owner, payload)
}

// FindKeys looks keys up (agentik.Store): one indexed read each, in one
// read of the database.
func (r Reads) FindKeys(ctx context.Context, owner string, keys []string) (map[string]agentik.KeyRef, error) {
	out := map[string]agentik.KeyRef{}
	if len(keys) == 0 {
		return out, nil
	}
	err := r.db.Read(ctx, "find keys", func(c ReadConn) error {
		for _, k := range keys {
			var ref agentik.KeyRef
			found, err := c.One(ctx, []any{&ref.ConversationID, &ref.Seq}, r.q.Key, r.agent, owner, k)
			if err != nil {
				return err
			}
			if found {
				out[k] = ref
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FirstSeq is the seq of the first journal message of a numbered write
// (0: it has none), which its lookup keys point at.
func (n *Numbered) FirstSeq() int64 {
	for i := range n.Events {
		if m := n.Events[i].Event.Message; m != nil {
			return m.Seq
		}
	}
	return 0
}
