package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
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

// CoordinatorOptions tune a Coordinator. Zero values take the defaults.
type CoordinatorOptions struct {
	ScanInterval  time.Duration
	LeaseSessions int
	Logger        *slog.Logger
	// Process names this process to the others (Holder): its lease
	// sessions' application_name is "agentik " + Process. "" keeps the
	// store's application_name.
	Process string
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

	mu   sync.Mutex       // guards held, last and cb; never held across I/O
	held map[string]int64 // lease epochs of the leases held
	last map[string]int64 // the epoch this process last held, by conversation
	cb   agentik.CoordinatorCallbacks

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ agentik.Coordinator = (*Coordinator)(nil)

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
	c := &Coordinator{s: s, b: b, scan: opts.ScanInterval, log: opts.Logger, held: map[string]int64{}, last: map[string]int64{}}
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
	c.wg.Add(1)
	go c.run()
	return nil
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
			lost = true
		}
	}
	cb := c.cb.Lost
	c.mu.Unlock()
	if lost && cb != nil {
		go cb()
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
		WHERE id = $2 AND (SELECT ok FROM l) RETURNING lease_epoch, lease_prev, owner, agent_id, next_seq, next_ord, last_cursor)
	SELECT l.ok, u.lease_epoch, u.lease_prev, u.owner, u.agent_id, u.next_seq, u.next_ord, u.last_cursor FROM l LEFT JOIN u ON true`

// Acquire tries to take the conversation's lease without waiting. Only the
// conversation's lock session waits for its round trip.
func (c *Coordinator) Acquire(ctx context.Context, conversationID string) (agentik.Lease, error) {
	c.mu.Lock()
	e, ok := c.held[conversationID]
	c.mu.Unlock()
	if ok {
		return agentik.Lease{Held: true, Epoch: e, Continued: true}, nil
	}
	ls := c.sessionOf(conversationID)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	conn, err := c.connect(ctx, ls)
	if err != nil {
		return agentik.Lease{}, unavailable(err)
	}
	var epoch, prev, nextSeq, nextOrd, lastCursor *int64
	var owner, agent *string
	key := c.key(conversationID)
	if err := conn.QueryRow(ctx, qAcquire, key, conversationID).Scan(&ok, &epoch, &prev, &owner, &agent, &nextSeq, &nextOrd, &lastCursor); err != nil {
		if ctx.Err() == nil {
			c.dropLocked(ls)
		}
		return agentik.Lease{}, classify(err)
	}
	if !ok {
		return agentik.Lease{}, nil
	}
	if epoch == nil { // deleted meanwhile: nothing to run
		c.unlockLocked(ctx, ls, conversationID)
		return agentik.Lease{}, notFound(conversationID)
	}
	c.s.states.read(conversationID, commitState{owner: *owner, agent: *agent, nextSeq: *nextSeq, nextOrd: *nextOrd, lastCursor: *lastCursor})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[conversationID] = *epoch
	continued := c.last[conversationID] == *prev && *prev != 0
	c.last[conversationID] = *epoch
	return agentik.Lease{Held: true, Epoch: *epoch, Continued: continued}, nil
}

// Release gives the lease back.
func (c *Coordinator) Release(ctx context.Context, conversationID string) {
	ls := c.sessionOf(conversationID)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c.mu.Lock()
	_, ok := c.held[conversationID]
	delete(c.held, conversationID)
	c.mu.Unlock()
	if ok {
		c.unlockLocked(ctx, ls, conversationID)
		// Others write to it now: its next commit here reads the row.
		c.s.states.doubt(conversationID)
	}
}

// unlockLocked frees the advisory lock of a conversation on its session;
// ls.mu is held.
func (c *Coordinator) unlockLocked(ctx context.Context, ls *leaseSession, conversationID string) {
	if ls.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ls.conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", c.key(conversationID)); err != nil {
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
// the conversation's lease — the one running or about to run its turns —
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
// running turn, as req says.
func (c *Coordinator) Interrupt(ctx context.Context, req agentik.InterruptRequest) (bool, error) {
	var held bool
	if err := c.s.pool.QueryRow(ctx, qLeaseHeld, c.key(req.ConversationID)).Scan(&held); err != nil {
		return false, classify(err)
	}
	if held {
		c.b.notifyControl(notification{kind: kindInterrupt, conv: req.ConversationID, reason: req.Reason, unless: req.Unless, replyTo: req.ReplyTo})
	}
	return held, nil
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
		c.scanOpenTurns()
	}
}

// budget bounds one check of a lock session and one scan: the scan
// interval, but never under a second, so that a loaded machine (or a scan
// interval shortened in tests) does not fail a healthy session or skip
// every scan.
func (c *Coordinator) budget() time.Duration { return max(c.scan, time.Second) }

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
			ctx, cancel := context.WithTimeout(c.ctx, c.budget())
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
const qOpenConversations = `SELECT DISTINCT m.conversation_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
	WHERE m.type = 'user_message' AND NOT m.closed AND c.agent_id = $1`

// scanOpenTurns kicks every conversation with open turns whose lease this
// process does not hold; the engine's loop takes the lease if it is free.
func (c *Coordinator) scanOpenTurns() {
	started := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx, c.budget())
	defer cancel()
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
	var free []string
	for _, id := range ids {
		if _, held := c.held[id]; !held {
			free = append(free, id)
		}
	}
	c.mu.Unlock()
	for _, id := range free {
		if c.ctx.Err() != nil {
			return
		}
		cb.Kick(id)
	}
}
