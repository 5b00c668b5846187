package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
)

// DefaultScanInterval is how often a Coordinator looks for open turns that
// no process runs (their process died, or a wake-up was lost): the bound on
// failover time.
const DefaultScanInterval = time.Second

// DefaultLeaseSessions is how many connections a Coordinator holds leases
// on: each conversation's lease lives on one of them (by a hash of its id),
// so taking and giving back the leases of different conversations does not
// wait for one connection's round trips.
const DefaultLeaseSessions = 4

// DefaultKeepLeases is how many leases of conversations with nothing to
// run a Coordinator keeps (agentik.LeaseKeeper), and DefaultKeepIdle how
// long it keeps each: the advisory locks live in PostgreSQL's shared lock
// table (max_locks_per_transaction × max_connections entries for the whole
// server), so both are bounded.
const (
	DefaultKeepLeases = 256
	DefaultKeepIdle   = 10 * time.Second
)

// CoordinatorOptions tune a Coordinator. Zero values take the defaults.
type CoordinatorOptions struct {
	ScanInterval  time.Duration
	LeaseSessions int
	Logger        *slog.Logger
	// Process names this process to the others (Holder): its lease
	// sessions' application_name is "agentik " + Process. "" keeps the
	// store's application_name.
	Process string
	// KeepLeases bounds the leases kept with nothing to run (0: the
	// default; negative: none is kept, every loop gives its lease back),
	// KeepIdle how long one is kept (0: the default).
	KeepLeases int
	KeepIdle   time.Duration
}

// Coordinator is the agentik.Coordinator of processes sharing one database.
//
// A conversation's lease is a session-level advisory lock held on a
// connection of the Coordinator's own (one of LeaseSessions, chosen by the
// conversation's id, so that the lock is always taken and freed on the same
// one): exactly one session can hold it, and PostgreSQL frees it the moment
// that session ends — a process that dies (SIGKILL included) loses its
// leases as soon as the server sees its connection close, and the next scan
// of another process picks the open turns up. If one of this process's lock
// connections fails, it cannot know whether another took those leases, so
// it tells the engine (Lost) to stop its turns without closing them.
//
// Interrupts posted to a process that does not run the turn travel as a
// notification on the Bus's channel.
type Coordinator struct {
	s    *Store
	b    *Bus
	scan time.Duration
	log  *slog.Logger

	cfg      *pgx.ConnConfig
	sessions []*leaseSession

	mu   sync.Mutex       // guards held, idle, last, woken, elsewhere, closed and cb; never held across I/O
	held map[string]int64 // lease epochs of the leases held
	last map[string]int64 // the epoch this process last held, by conversation
	cb   agentik.CoordinatorCallbacks

	// Leases kept with nothing to run (Keep), since when; each is in held
	// too. A loop that takes one again (acquire) removes it.
	idle     map[string]time.Time
	keepMax  int
	keepIdle time.Duration
	// Conversations whose kept or running lease another process's event
	// concerns, for wakeLoops to tell the engine (Wake) off the listener.
	woken map[string]struct{}
	wakeC chan struct{}
	// Conversations whose lease this process does not hold and in which
	// another process was heard committing, when last (heardFrom); the
	// scan leaves them alone for an interval and forgets older ones.
	elsewhere map[string]time.Time
	closed    bool // by Close
	// keepNone: the engine drains (GiveBackKept); Keep keeps nothing.
	keepNone bool

	// lost carries a lock session's failure to the goroutine that tells
	// the engine (Lost): started by Start, joined by Close, and a burst of
	// failures is one call.
	lost chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ agentik.QueueCoordinator = (*Coordinator)(nil)
	_ agentik.LeaseKeeper      = (*Coordinator)(nil)
)

// leaseSession is one lock connection; mu serialises its use.
type leaseSession struct {
	mu   sync.Mutex
	conn *pgx.Conn // nil until needed, and after it failed
}

// NewCoordinator returns the Coordinator of store s, using b for interrupts.
// It does no I/O; the engine calls Start.
func NewCoordinator(s *Store, b *Bus, opts CoordinatorOptions) *Coordinator {
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = DefaultScanInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LeaseSessions <= 0 {
		opts.LeaseSessions = DefaultLeaseSessions
	}
	if opts.KeepLeases == 0 {
		opts.KeepLeases = DefaultKeepLeases
	}
	if opts.KeepIdle <= 0 {
		opts.KeepIdle = DefaultKeepIdle
	}
	c := &Coordinator{s: s, b: b, scan: opts.ScanInterval, log: opts.Logger, held: map[string]int64{}, last: map[string]int64{}, lost: make(chan struct{}, 1),
		idle: map[string]time.Time{}, keepMax: opts.KeepLeases, keepIdle: opts.KeepIdle, woken: map[string]struct{}{}, wakeC: make(chan struct{}, 1),
		elsewhere: map[string]time.Time{}}
	for range opts.LeaseSessions {
		c.sessions = append(c.sessions, &leaseSession{})
	}
	// The lock session's only writes are new lease epochs. They need not
	// wait for their flush: epochs come from a sequence and are never handed
	// out twice, and every fenced write that depends on one is itself a
	// synchronous commit, which flushes the epoch with it (the WAL is
	// sequential).
	c.cfg = s.cfg.Copy()
	c.cfg.RuntimeParams["synchronous_commit"] = "off"
	if opts.Process != "" {
		c.cfg.RuntimeParams["application_name"] = truncate(holderPrefix+opts.Process, 63) // PostgreSQL's NAMEDATALEN-1
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// Start registers the engine's callbacks and starts the scan.
func (c *Coordinator) Start(cb agentik.CoordinatorCallbacks) error {
	c.mu.Lock()
	c.cb = cb
	c.mu.Unlock()
	f := c.onNotification
	c.b.control.Store(&f)
	h := func(id string, notified bool) { c.heardFrom(id, false, notified) }
	c.b.foreign.Store(&h)
	c.wg.Add(3)
	go c.run()
	go c.tellLost()
	go c.wakeLoops()
	return nil
}

// tellLost calls the engine's Lost for each failure of a lock session
// that held leases, one call at a time, until Close.
func (c *Coordinator) tellLost() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.lost:
		}
		c.mu.Lock()
		cb := c.cb.Lost
		c.mu.Unlock()
		if cb != nil {
			cb()
		}
	}
}

// Close stops the scan and ends the lock sessions, freeing every lease
// this process holds. Call it after the engine has shut down. Idempotent.
func (c *Coordinator) Close() {
	c.cancel()
	c.wg.Wait()
	for _, ls := range c.sessions {
		ls.mu.Lock()
		if ls.conn != nil {
			ls.conn.Close(context.Background())
			ls.conn = nil
		}
		ls.mu.Unlock()
	}
	c.mu.Lock()
	clear(c.held)
	clear(c.idle)
	clear(c.elsewhere)
	c.closed = true // a Bus that outlives it notes nothing more (heardFrom)
	c.mu.Unlock()
}

func (c *Coordinator) key(conversationID string) string {
	return "agentik lease " + c.s.schema + " " + conversationID
}

// sessionOf returns the lock session a conversation's lease lives on.
func (c *Coordinator) sessionOf(conversationID string) *leaseSession {
	h := fnv.New32a()
	h.Write([]byte(conversationID))
	return c.sessions[h.Sum32()%uint32(len(c.sessions))]
}

// connect returns the session's connection, dialling it if needed. ls.mu
// is held.
func (c *Coordinator) connect(ctx context.Context, ls *leaseSession) (*pgx.Conn, error) {
	if ls.conn != nil && !ls.conn.IsClosed() {
		return ls.conn, nil
	}
	c.dropLocked(ls)
	conn, err := pgx.ConnectConfig(ctx, c.cfg)
	if err != nil {
		return nil, err
	}
	ls.conn = conn
	return conn, nil
}

// dropLocked forgets a failed lock session; ls.mu is held. The server freed
// its locks when it ended (or will, when it notices): the leases held on it
// are lost.
func (c *Coordinator) dropLocked(ls *leaseSession) {
	if ls.conn != nil {
		ls.conn.Close(context.Background())
		ls.conn = nil
	}
	c.mu.Lock()
	lost := false
	for id := range c.held {
		if c.sessionOf(id) == ls {
			delete(c.held, id)
			delete(c.idle, id)
			lost = true
		}
	}
	c.mu.Unlock()
	if lost {
		select {
		case c.lost <- struct{}{}:
		default: // one is on its way: the engine stops every turn anyway
		}
	}
}

// qAcquire takes the advisory lock of a conversation's lease without
// waiting and, when it got it, gives the lease a new epoch, in one round
// trip. The epoch update waits for a commit of the conversation in flight
// (it holds the row lock), so no write fenced with the old epoch can land
// after this returns. No row (but ok) means the conversation is gone. The
// conversation's counters come back too, as a commit leaves them: the new
// holder's first commit is then made in one round trip (see commitStates).
const qAcquire = `WITH l AS (SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok),
	u AS (UPDATE conversations SET lease_prev = lease_epoch, lease_epoch = nextval('lease_epochs')
		WHERE id = $2 AND (SELECT ok FROM l) RETURNING lease_epoch, lease_prev, owner, agent_id, next_seq, next_ord, last_cursor, head)
	SELECT l.ok, u.lease_epoch, u.lease_prev, u.owner, u.agent_id, u.next_seq, u.next_ord, u.last_cursor, u.head FROM l LEFT JOIN u ON true`

// qAcquireLeased is qAcquire that also records, for the rest of its
// implicit transaction (a batch), whether it took the lock: qQueueLeased
// reads the queue only then.
var qAcquireLeased = strings.Replace(qAcquire, "SELECT l.ok, u.lease_epoch", "SELECT set_config('agentik.leased', coalesce(l.ok, false)::text, true), l.ok, u.lease_epoch", 1)

// qQueueLeased is qQueue, empty unless qAcquireLeased took the lock
// before it in the same batch.
var qQueueLeased = strings.Replace(qQueue, "FROM open_turns WHERE conversation_id = $1)",
	"FROM open_turns WHERE conversation_id = $1 AND current_setting('agentik.leased', true) = 'true')", 1)

// Acquire tries to take the conversation's lease without waiting. Only the
// conversation's lock session waits for its round trip.
func (c *Coordinator) Acquire(ctx context.Context, conversationID string) (agentik.Lease, error) {
	l, _, err := c.acquire(ctx, conversationID, false)
	return l, err
}

// AcquirePending is Acquire and, when the lease is taken, Pending in the
// same round trip: a batch whose second statement reads the queue once
// the first took the lock (a statement of its own, so with a snapshot
// taken after the lock: it sees every commit of the previous holder).
func (c *Coordinator) AcquirePending(ctx context.Context, conversationID string) (agentik.Lease, agentik.TurnQueue, error) {
	l, qr, err := c.acquire(ctx, conversationID, true)
	if err != nil || !l.Held {
		return l, agentik.TurnQueue{}, err
	}
	if qr == nil { // held already (kept): read it, with the counters
		if qr, err = c.pendingHeld(ctx, conversationID); err != nil {
			return l, agentik.TurnQueue{}, err
		}
		return l, qr.turnQueue(), nil
	}
	if err := qr.restore(ctx, c.s.pool); err != nil {
		q, err := c.Pending(ctx, conversationID)
		return l, q, err
	}
	return l, qr.turnQueue(), nil
}

// acquire is Acquire; with queue, it reads the queue in the same round
// trip when it takes the lease (nil when the lease was held already).
func (c *Coordinator) acquire(ctx context.Context, conversationID string, queue bool) (agentik.Lease, *queueRows, error) {
	c.mu.Lock()
	e, ok := c.held[conversationID]
	delete(c.idle, conversationID) // kept: in use again
	c.mu.Unlock()
	if ok {
		return agentik.Lease{Held: true, Epoch: e, Continued: true}, nil, nil
	}
	ls := c.sessionOf(conversationID)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	conn, err := c.connect(ctx, ls)
	if err != nil {
		return agentik.Lease{}, nil, unavailable(err)
	}
	var epoch, prev, nextSeq, nextOrd, lastCursor, head *int64
	var owner, agent *string
	key := c.key(conversationID)
	scan := []any{&ok, &epoch, &prev, &owner, &agent, &nextSeq, &nextOrd, &lastCursor, &head}
	var qr *queueRows
	if queue {
		qr = &queueRows{conv: conversationID}
		var set string
		b := &pgx.Batch{}
		b.Queue(qAcquireLeased, key, conversationID).QueryRow(func(row pgx.Row) error { return row.Scan(append([]any{&set}, scan...)...) })
		b.Queue(qQueueLeased, conversationID).Query(func(rows pgx.Rows) error { return storeutil.Each(rows, qr.scan) })
		err = conn.SendBatch(ctx, b).Close()
	} else {
		err = conn.QueryRow(ctx, qAcquire, key, conversationID).Scan(scan...)
	}
	if err != nil {
		if ctx.Err() == nil {
			c.dropLocked(ls)
		}
		return agentik.Lease{}, nil, classify(err)
	}
	if !ok {
		return agentik.Lease{}, nil, nil
	}
	if epoch == nil { // deleted meanwhile: nothing to run
		c.unlockLocked(ctx, ls, conversationID)
		return agentik.Lease{}, nil, notFound(conversationID)
	}
	c.s.states.read(conversationID, commitState{owner: *owner, agent: *agent, nextSeq: *nextSeq, nextOrd: *nextOrd, lastCursor: *lastCursor, head: *head})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[conversationID] = *epoch
	continued := c.last[conversationID] == *prev && *prev != 0
	c.last[conversationID] = *epoch
	return agentik.Lease{Held: true, Epoch: *epoch, Continued: continued}, qr, nil
}

// Release gives the lease back.
func (c *Coordinator) Release(ctx context.Context, conversationID string) {
	c.release(ctx, conversationID, nil)
}

// ReleasePending is Release, then Pending, in one round trip: the queue is
// read by a statement after the unlock, so it sees every message another
// process stored while it could not take the lease.
func (c *Coordinator) ReleasePending(ctx context.Context, conversationID string) (agentik.TurnQueue, error) {
	qr := &queueRows{conv: conversationID}
	if !c.release(ctx, conversationID, qr) {
		return c.Pending(ctx, conversationID)
	}
	if err := qr.restore(ctx, c.s.pool); err != nil {
		return agentik.TurnQueue{}, classify(err)
	}
	return qr.turnQueue(), nil
}

// release gives the lease back; with qr, it reads the queue into it in
// the same round trip and reports whether it did.
func (c *Coordinator) release(ctx context.Context, conversationID string, qr *queueRows) (read bool) {
	ls := c.sessionOf(conversationID)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c.mu.Lock()
	_, ok := c.held[conversationID]
	delete(c.held, conversationID)
	delete(c.idle, conversationID)
	c.mu.Unlock()
	if !ok {
		return false
	}
	// Others write to it now: its next commit here reads the row.
	defer c.s.states.doubt(conversationID)
	if qr == nil || ls.conn == nil {
		c.unlockLocked(ctx, ls, conversationID)
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(qUnlock, c.key(conversationID))
	b.Queue(qQueue, conversationID).Query(func(rows pgx.Rows) error { return storeutil.Each(rows, qr.scan) })
	if err := ls.conn.SendBatch(ctx, b).Close(); err != nil {
		c.log.Warn("cluster: release lease", "conversation", conversationID, "err", err)
		c.dropLocked(ls) // ending the session frees the lock
		return false
	}
	return true
}

const qUnlock = "SELECT pg_advisory_unlock(hashtextextended($1, 0))"

// unlockLocked frees the advisory lock of a conversation on its session;
// ls.mu is held.
func (c *Coordinator) unlockLocked(ctx context.Context, ls *leaseSession, conversationID string) {
	if ls.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ls.conn.Exec(ctx, qUnlock, c.key(conversationID)); err != nil {
		c.log.Warn("cluster: release lease", "conversation", conversationID, "err", err)
		c.dropLocked(ls) // ending the session frees the lock
	}
}

// Pending returns the conversation's open turns in seq order and the
// journal of the first one so far.
func (c *Coordinator) Pending(ctx context.Context, conversationID string) (agentik.TurnQueue, error) {
	return c.s.queue(ctx, conversationID)
}

// Join subscribes to the conversation's events and returns, at the same
// point of the event stream, the turn another process runs in it.
func (c *Coordinator) Join(conversationID string) (agentik.Subscriber[agentik.Event], agentik.RemoteTurn) {
	return c.b.join(conversationID)
}

// Running returns the turn another process runs in the conversation, as
// its online events tell.
func (c *Coordinator) Running(conversationID string) (agentik.RemoteTurn, bool) {
	return c.b.running(conversationID)
}

// qLeaseHeld tells whether any session holds the advisory lock of a key:
// a bigint key is stored as classid (high half) and objid (low half), with
// objsubid 1.
const qLeaseHeld = `SELECT EXISTS (SELECT 1 FROM pg_locks
	WHERE locktype = 'advisory' AND granted AND objsubid = 1
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0))`

// holderPrefix begins the application_name of a lease session.
const holderPrefix = "agentik "

// qLeaseHolder is the application_name of the session holding the advisory
// lock of a key (see qLeaseHeld).
const qLeaseHolder = `SELECT a.application_name FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
	WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)`

// Holder returns the Process (CoordinatorOptions) of the process holding
// the conversation's lease — the one running or about to run its turns,
// or keeping the lease after them (keep.go) —
// and whether any session holds it ("" for a process that gave no name).
// For administration: one query on pg_locks.
func (c *Coordinator) Holder(ctx context.Context, conversationID string) (string, bool, error) {
	var name string
	err := c.s.pool.QueryRow(ctx, qLeaseHolder, c.key(conversationID)).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, classify(err)
	}
	name, _ = strings.CutPrefix(name, holderPrefix)
	return name, true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Interrupt asks the process holding the conversation's lease to cancel its
// running turn, as req says. It reports true when a process holds the lease
// and, for a request that names no turn (req.ReplyTo empty), runs a turn
// as its online events tell (working seen, end not yet): a lease held for a
// moment by another process's scan, or kept after the turn's end
// (keep.go), cuts nothing, and the
// caller then looks for an open turn not started yet (the engine's
// interruptUnstarted). A request naming a turn (a withdrawal) is the
// holder's to answer: true once some process holds the lease.
func (c *Coordinator) Interrupt(ctx context.Context, req agentik.InterruptRequest) (bool, error) {
	var held bool
	if err := c.s.pool.QueryRow(ctx, qLeaseHeld, c.key(req.ConversationID)).Scan(&held); err != nil {
		return false, classify(err)
	}
	if !held {
		return false, nil
	}
	c.b.notifyControl(notification{kind: kindInterrupt, conv: req.ConversationID, reason: req.Reason, unless: req.Unless, replyTo: req.ReplyTo})
	if req.ReplyTo != "" {
		return true, nil
	}
	t, running := c.b.running(req.ConversationID)
	return running && (req.Unless == "" || t.ReplyTo != req.Unless), nil
}

func (c *Coordinator) onNotification(n notification) {
	c.mu.Lock()
	cb := c.cb
	c.mu.Unlock()
	if n.kind == kindInterrupt && cb.Interrupt != nil {
		cb.Interrupt(n.conv, agentik.InterruptRequest{ConversationID: n.conv, Reason: n.reason, Unless: n.unless, ReplyTo: n.replyTo})
	}
}

// run checks the lock session and looks for unowned open turns every scan
// interval.
func (c *Coordinator) run() {
	defer c.wg.Done()
	t := time.NewTicker(c.scan)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.checkSession()
		c.expireKept(c.ctx)
		c.scanOpenTurns()
	}
}

// budget bounds one check of a lock session and one scan: the scan
// interval, but never under a second, so that a loaded machine (or a scan
// interval shortened in tests) does not fail a healthy session or skip
// every scan.
func (c *Coordinator) budget() time.Duration { return max(c.scan, time.Second) }

// leaseProbeTimeout bounds the check of a lock session. A slow answer is
// not a lost session: on a loaded machine (or database) a healthy
// connection may take seconds to answer, and giving up on it closes it —
// which does free its locks and stop every turn of this process. A broken
// connection fails at once; a silent one (a network that drops packets)
// is given up after this long. Correctness never depends on it: a write
// under a lease another process took since is refused (fencing).
const leaseProbeTimeout = 15 * time.Second

// checkSession proves the lock sessions alive while they hold leases, so
// a broken one is noticed within a scan interval even when idle.
func (c *Coordinator) checkSession() {
	c.mu.Lock()
	holding := map[*leaseSession]bool{}
	for id := range c.held {
		holding[c.sessionOf(id)] = true
	}
	c.mu.Unlock()
	for _, ls := range c.sessions {
		if !holding[ls] {
			continue
		}
		ls.mu.Lock()
		if ls.conn != nil {
			ctx, cancel := context.WithTimeout(c.ctx, leaseProbeTimeout)
			if _, err := ls.conn.Exec(ctx, "SELECT 1"); err != nil && c.ctx.Err() == nil {
				c.log.Warn("cluster: lock session lost; stopping this process's turns", "err", err)
				c.dropLocked(ls)
			}
			cancel()
		}
		ls.mu.Unlock()
	}
}

// qOpenConversations: those of the Coordinator's agent (its Store's view).
const qOpenConversations = `SELECT DISTINCT o.conversation_id FROM open_turns o JOIN conversations c ON c.id = o.conversation_id
	WHERE c.agent_id = $1`

// scanOpenTurns kicks every conversation with open turns whose lease this
// process does not hold, or keeps (keep.go); the engine's loop takes the
// lease if it is free, or runs the turns under the one kept.
//
// A conversation in which another process was heard committing, or whose
// turn another process was heard running, within the last scan interval
// is not kicked. That process holds its lease (the turn's writes, or a kept
// lease's user message), or just stored a message there and took or tried
// the lease itself, as every process does after storing one. Kicked here,
// the loop would only be refused the lease, having loaded the conversation
// for nothing: with three processes that was most of what the scans did.
// Heard nothing of for an interval — that process died, or its turn waits
// for approvals or client tools — the conversation is kicked as before, so
// a turn left by a dead process is taken up one interval later at most.
func (c *Coordinator) scanOpenTurns() {
	started := time.Now()
	since := started.Add(-c.scan) // what was heard after it is recent
	ctx, cancel := context.WithTimeout(c.ctx, c.budget())
	defer cancel()
	// Notes older than an interval are forgotten first, whatever the scan
	// finds: they would be ignored anyway.
	c.mu.Lock()
	maps.DeleteFunc(c.elsewhere, func(_ string, at time.Time) bool { return at.Before(since) })
	c.mu.Unlock()
	var ids []string
	err := queryEach(ctx, c.s.pool, func(rows pgx.Rows) error {
		var id string
		err := rows.Scan(&id)
		ids = append(ids, id)
		return err
	}, qOpenConversations, c.s.agent)
	if err != nil {
		if c.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			c.log.Debug("cluster: scan open turns", "err", err)
		}
		return
	}
	// Turns that other processes were seen running but that are closed by
	// now (their end notification was lost, or their process died after
	// closing them) are forgotten.
	c.b.expireTurns(ids, started)
	c.mu.Lock()
	cb := c.cb
	var free, elsewhere []string
	for _, id := range ids {
		_, held := c.held[id]
		_, kept := c.idle[id]
		switch at, heard := c.elsewhere[id]; {
		case kept:
			free = append(free, id)
		case !held && (!heard || at.Before(since)):
			elsewhere = append(elsewhere, id)
		}
	}
	c.mu.Unlock()
	free = append(free, c.b.notHeardRunning(elsewhere, since)...)
	for _, id := range free {
		if c.ctx.Err() != nil {
			return
		}
		cb.Kick(id)
	}
}
