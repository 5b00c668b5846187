package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Commit applies w in one transaction: journal messages (seqs from the
// conversation's counter, under its row lock), their events (cursors from a
// sequence, drawn under the same lock: see migrations/0004), memory changes,
// token totals and the touch. On success the assigned seqs are written into
// the events' Messages and the assigned orders into w.Memory; on error
// nothing is stored and nothing the caller passed is modified. The touched
// agent event is returned without a cursor: the sequencer numbers it once
// committed, and the Bus delivers it then (see Bus.PublishAgent).
//
// No lock outside the conversation's own rows is taken (images aside), so
// commits to different conversations never wait for each other.
//
// A conversation this process wrote last is committed in one round trip
// from the counters that write left (see commitState); otherwise, or when
// they moved, in two: the row is read, under its lock, first.
func (s *Store) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	op := "commit " + w.ConversationID
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	c := &commit{w: &w, images: storeutil.ExtractImages(&w), index: !s.noSearchIndex}
	guess, known := s.states.get(w.ConversationID)
	st := guess
	err := errStateMoved
	if known && guess.sure {
		err = s.once(ctx, op, func(b *pgx.Batch) error {
			if quiet(w) {
				b.Queue(qQuietCommit)
			}
			b.Queue(qCommitGuard, w.ConversationID, w.Fence, st.nextSeq, st.nextOrd, st.lastCursor, st.owner, st.agent)
			return c.queue(b, st)
		})
		switch {
		case errors.Is(err, errStateMoved):
			s.states.moved.Add(1)
			guess = guess.refused()
		case err == nil:
			s.states.oneTrip.Add(1)
			st.misses = 0
		}
	}
	if errors.Is(err, errStateMoved) {
		err = s.pipelined(ctx, op, func(lock *pgx.Batch) func() (*pgx.Batch, error) {
			if quiet(w) {
				lock.Queue(qQuietCommit)
			}
			var epoch int64
			lock.Queue(qCommitConversation, w.ConversationID).QueryRow(func(row pgx.Row) error {
				var r commitState
				err := row.Scan(&r.owner, &r.agent, &r.nextSeq, &r.nextOrd, &epoch, &r.lastCursor, &r.head)
				if errors.Is(err, pgx.ErrNoRows) {
					return notFound(w.ConversationID)
				}
				st = r
				if known {
					st = guess.found(r)
				}
				return err
			})
			return func() (*pgx.Batch, error) {
				// The row lock taken above is what makes the fence atomic: a
				// new lease holder's epoch increment waits for this
				// transaction, and once it committed no write made under the
				// old epoch passes.
				if w.Fence != 0 && epoch != w.Fence {
					return nil, fmt.Errorf("lease epoch %d, write made under %d: %w", epoch, w.Fence, agentik.ErrFenced)
				}
				batch := &pgx.Batch{}
				return batch, c.queue(batch, st)
			}
		})
	}
	if err != nil {
		s.states.drop(w.ConversationID)
		return nil, nil, err
	}

	// Committed: remember the counters it left, hand the assigned numbers
	// back to the caller, and tell this process's Bus what came before each
	// event in the conversation.
	next := c.next
	next.sure, next.misses, next.reads = st.sure, st.misses, st.reads
	if evs := c.n.Events; len(evs) > 0 {
		next.lastCursor = evs[len(evs)-1].Cursor
	}
	s.states.put(w.ConversationID, next)
	s.notifyOutbox(c.hooked)
	out := c.n.Committed()
	s.chain.add(st.lastCursor, out)
	return out, c.touched, nil
}

// commit is one Commit's write, queued from a conversation's counters by
// either way of committing; queue may run twice (a one-round-trip attempt
// whose counters had moved, then the usual way), each time from scratch.
type commit struct {
	w      *agentik.Write
	images *storeutil.WriteImages

	n       *storeutil.Numbered // the write numbered; its events' cursors once committed
	hooked  bool                // webhooks' outbox rows written (outbox.go)
	next    commitState         // the counters after the write (lastCursor aside)
	touched *agentik.AgentEvent
	index   bool // fill the search vectors of its messages
}

// queue queues the write's statements, numbering from st, and COMMIT's
// predecessors: the counters' update and the touched agent event.
func (c *commit) queue(batch *pgx.Batch, st commitState) error {
	w := c.w
	n, err := storeutil.Number(w, c.images, st.nextSeq, st.nextOrd, st.head)
	if err != nil {
		return err
	}
	c.n = n
	if w.Reopen != "" {
		// Before the events: one of them may close the turn again.
		batch.Queue(qReopenTurn, w.Reopen, w.ConversationID)
	}
	scope := "" // the owner's search scope, for the first message with text
	for _, e := range n.Events {
		if m := e.Event.Message; m != nil {
			var vector pgtype.TSVector // NULL: a message without text is not searched
			var filed *string
			if text := agentik.SearchText(m); c.index && text != "" {
				if scope == "" {
					scope = storeutil.SearchScope(st.owner)
				}
				vector, filed = searchVector(scope, text), &scope
			}
			// A user message's insert opens its turn (a trigger: migrations/0019).
			batch.Queue(qInsertMessage, m.ConversationID, m.Seq, m.ID, m.Type, m.Date.Time, m.ReplyTo, e.MessagePayload, column(e.Images), m.Parent,
				vector, filed)
		}
		if e.Closes != "" {
			batch.Queue(qCloseTurn, e.Closes, w.ConversationID)
		}
	}
	if w.ReplaceMemory {
		batch.Queue(qClearMemory, w.ConversationID)
	}
	if w.DropMemoryThrough > 0 {
		batch.Queue(qDropMemory, w.ConversationID, w.DropMemoryThrough)
	}
	for _, e := range n.Memory {
		batch.Queue(qInsertMemory, w.ConversationID, e.Order, e.Payload, column(e.Images))
	}
	// Image rows are locked in hash order.
	queueImages(batch, c.images, w.ConversationID)
	for k, v := range w.State {
		if v == nil {
			batch.Queue(qDeleteState, w.ConversationID, k)
		} else {
			batch.Queue(qSetState, w.ConversationID, k, string(v))
		}
	}
	for _, k := range w.Keys {
		batch.Queue(qSetKey, st.agent, st.owner, k, w.ConversationID, n.FirstSeq())
	}
	for i := range n.Events {
		e := &n.Events[i]
		batch.Queue(qInsertEvent, w.ConversationID, e.Event.Type, e.Event.Date.Time, e.Payload, column(e.Images)).QueryRow(func(row pgx.Row) error {
			return row.Scan(&e.Cursor)
		})
	}
	c.hooked = false
	queueHooks(batch, st.agent, st.owner, n, &c.hooked)
	c.next = st
	c.next.nextSeq, c.next.nextOrd, c.next.head = n.NextSeq, n.NextOrd, n.Head
	touch := !w.Touch.IsZero()
	args := []any{n.NextSeq, n.NextOrd, w.Tokens.Input, w.Tokens.Output, touch, w.Touch.Time, w.ConversationID, len(w.Events) > 0, n.Head}
	if c.touched = storeutil.Touched(w, st.owner); c.touched == nil {
		batch.Queue(qUpdateAfterCommit, args...)
		return nil
	}
	payload, err := storeutil.AgentPayload(c.touched)
	if err != nil {
		return err
	}
	ev := c.touched
	batch.Queue(qUpdateTouched, append(args, ev.Owner, ev.Type, ev.Date.Time, payload, st.agent)...)
	return nil
}

// quiet tells whether a write only changes working memory: it appends no
// event (so nobody is told of it) and changes no token count. Such a write
// commits without waiting for its WAL flush (synchronous_commit off for
// that transaction): it is durable a moment later (wal_writer_delay), and
// the next synchronous commit of any session flushes it first, the WAL
// being sequential. A database crash in between loses only that memory
// change, which the engine's recovery tolerates: a tool round missing from
// working memory is rebuilt from the journal, a turn whose user message is
// missing from it counts as queued, not started. The turn's answer — a
// write with events — waits for its flush as before.
func quiet(w agentik.Write) bool {
	return len(w.Events) == 0 && w.Touch.IsZero() && w.Tokens == (agentik.TurnTokens{})
}

// pipelined runs one transaction in two round trips: BEGIN with the
// statements lock queues, then — once their results are in — the batch
// the returned func builds, with COMMIT at its end. A failure anywhere
// rolls everything back. (pgx's Tx would spend a round trip on BEGIN and
// one on COMMIT, and one per dependent statement in between.)
func (s *Store) pipelined(ctx context.Context, op string, lock func(b *pgx.Batch) func() (*pgx.Batch, error)) error {
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	first := &pgx.Batch{}
	first.Queue("BEGIN")
	next := lock(first)
	err = conn.SendBatch(ctx, first).Close()
	var second *pgx.Batch
	if err == nil {
		second, err = next()
	}
	if err == nil {
		second.Queue("COMMIT")
		err = conn.SendBatch(ctx, second).Close()
	}
	if err != nil {
		rollback(ctx, conn)
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	return nil
}

// once runs one transaction in one round trip: the statements fn queues,
// as one batch, which runs as one implicit transaction (a failure in it
// rolls it all back, and the connection is idle again after). A
// qCommitGuard in it that finds its counters moved fails it with
// errStateMoved.
func (s *Store) once(ctx context.Context, op string, fn func(b *pgx.Batch) error) error {
	b := &pgx.Batch{}
	if err := fn(b); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	conn, err := s.conn(ctx, op)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = conn.SendBatch(ctx, b).Close()
	if err == nil {
		return nil
	}
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == guardFailed {
		return errStateMoved
	}
	return fmt.Errorf("%s: %w", op, classify(err))
}

// conn takes a pool connection for the transaction op. A connection still
// inside a transaction when released (a failed ROLLBACK) is closed by the
// pool, never reused.
func (s *Store) conn(ctx context.Context, op string) (*pgxpool.Conn, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("%s: %w", op, unavailable(errors.New("store closed")))
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, classify(err))
	}
	return conn, nil
}

// rollback ends the transaction a failed batch left open on conn, if any.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		conn.Exec(rctx, "ROLLBACK") //nolint:errcheck // the pool drops a connection left in a transaction
		cancel()
	}
}

// guardFailed is the SQLSTATE of qCommitGuard's refusal: division_by_zero.
const guardFailed = "22012"

// errStateMoved: the counters a one-round-trip commit was built from are
// not the conversation's any more (or it is gone, or the lease epoch is
// not the write's); nothing was written, and the commit is made again the
// usual way, which tells which.
var errStateMoved = errors.New("conversation changed since this process last wrote it")

// commitState is what a commit needs of its conversation's row: the owner
// and agent (for the touched agent event) and the counters it numbers
// from.
type commitState struct {
	owner, agent     string
	nextSeq, nextOrd int64
	lastCursor       int64 // the conversation's last event
	head             int64 // the head (it only moves with an event: lastCursor guards it)
	// sure: the next commit is built from these counters. Set by a commit
	// built from them, by one that read the row and found it as the commit
	// before had left it, and for a conversation this process created or
	// just took the lease of. A guess refused (another process wrote in
	// between) has the next commits read the row: 2, 4, 8, then 16 that
	// find it unchanged after as many refusals in a row, so that a
	// conversation written by several processes at once costs few.
	sure   bool
	misses int // guesses refused in a row
	reads  int // commits still to read the row before the next guess
}

func (st commitState) counters() [3]int64 { return [3]int64{st.nextSeq, st.nextOrd, st.lastCursor} }

// refused is st after its guess was refused.
func (st commitState) refused() commitState {
	st.misses++
	st.reads = 1 << min(st.misses, 4)
	st.sure = false
	return st
}

// found is st's successor when a commit read the row r: r's counters, and
// sure if r is as st left it and no more reads are due.
func (st commitState) found(r commitState) commitState {
	r.misses, r.reads = st.misses, st.reads
	if r.counters() == st.counters() && r.reads > 0 {
		r.reads--
	}
	r.sure = r.counters() == st.counters() && r.reads == 0
	return r
}

// commitStates remembers the counters this process's last commit to each
// conversation left, so that its next commit there, most often its own
// (the lease holder's turn, one message after another), need not read them
// first. An entry is only a guess: qCommitGuard checks it under the row
// lock. At most statesMax are kept; past that an arbitrary one goes.
type commitStates struct {
	mu sync.Mutex
	m  map[string]commitState

	oneTrip, moved atomic.Int64 // commits made in one round trip; guesses refused
}

const statesMax = 1 << 14

func (c *commitStates) get(id string) (commitState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[id]
	return st, ok
}

// last returns the conversation's last cursor as this process's commits
// and reads left it (0: not known).
func (c *commitStates) last(id string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id].lastCursor
}

func (c *commitStates) put(id string, st commitState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(id, st)
}

// read records counters just read from the row outside a commit (the
// lease's Acquire): sure unless reads after refused guesses are still due.
func (c *commitStates) read(id string, st commitState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m[id]
	st.misses, st.reads = old.misses, old.reads
	st.sure = st.reads == 0
	c.putLocked(id, st)
}

func (c *commitStates) putLocked(id string, st commitState) {
	if c.m == nil {
		c.m = make(map[string]commitState)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= statesMax {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = st
}

// doubt keeps the conversation's entry, but has its next commit read the
// row (and find out whether anyone wrote meanwhile).
func (c *commitStates) doubt(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[id]; ok {
		st.sure = false
		c.m[id] = st
	}
}

// outdated doubts the conversation's entry if another process committed
// its event at cursor after the commit the entry is of. It reports whether
// cursor is news: after the entry's, or of a conversation without one.
func (c *commitStates) outdated(id string, cursor int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[id]
	if ok && st.sure && cursor > st.lastCursor {
		st.sure = false
		c.m[id] = st
	}
	return !ok || cursor > st.lastCursor
}

func (c *commitStates) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

func (c *commitStates) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}
