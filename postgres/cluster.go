package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// DefaultScanInterval is how often a Coordinator looks for open turns that
// no process runs (their process died, or a wake-up was lost): the bound on
// failover time.
const DefaultScanInterval = time.Second

// CoordinatorOptions tune a Coordinator. Zero values take the defaults.
type CoordinatorOptions struct {
	ScanInterval time.Duration
	Logger       *slog.Logger
}

// Coordinator is the agentik.Coordinator of processes sharing one database.
//
// A conversation's lease is a session-level advisory lock held on a
// connection of the Coordinator's own: exactly one session can hold it, and
// PostgreSQL frees it the moment that session ends — a process that dies
// (SIGKILL included) loses its leases as soon as the server sees its
// connection close, and the next scan of another process picks the open
// turns up. If this process's lock connection fails, it cannot know whether
// another took its leases, so it tells the engine (Lost) to stop its turns
// without closing them.
//
// Interrupts posted to a process that does not run the turn travel as a
// notification on the Bus's channel.
type Coordinator struct {
	s    *Store
	b    *Bus
	scan time.Duration
	log  *slog.Logger

	mu   sync.Mutex // serialises the lock session
	cfg  *pgx.ConnConfig
	conn *pgx.Conn        // nil until needed, and after it failed
	held map[string]int64 // lease epochs of the leases held
	last map[string]int64 // the epoch this process last held, by conversation
	cb   agentik.CoordinatorCallbacks

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ agentik.Coordinator = (*Coordinator)(nil)

// NewCoordinator returns the Coordinator of store s, using b for interrupts.
// It does no I/O; the engine calls Start.
func NewCoordinator(s *Store, b *Bus, opts CoordinatorOptions) *Coordinator {
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = DefaultScanInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Coordinator{s: s, b: b, scan: opts.ScanInterval, log: opts.Logger, held: map[string]int64{}, last: map[string]int64{}}
	// The lock session's only writes are new lease epochs. They need not
	// wait for their flush: epochs come from a sequence and are never handed
	// out twice, and every fenced write that depends on one is itself a
	// synchronous commit, which flushes the epoch with it (the WAL is
	// sequential).
	c.cfg = s.cfg.Copy()
	c.cfg.RuntimeParams["synchronous_commit"] = "off"
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

// Close stops the scan and ends the lock session, freeing every lease this
// process holds. Call it after the engine has shut down. Idempotent.
func (c *Coordinator) Close() {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close(context.Background())
		c.conn = nil
	}
	clear(c.held)
}

func (c *Coordinator) key(conversationID string) string {
	return "agentik lease " + c.s.schema + " " + conversationID
}

// session returns the lock connection, dialling it if needed. c.mu is held.
func (c *Coordinator) session(ctx context.Context) (*pgx.Conn, error) {
	if c.conn != nil && !c.conn.IsClosed() {
		return c.conn, nil
	}
	c.dropLocked()
	conn, err := pgx.ConnectConfig(ctx, c.cfg)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

// dropLocked forgets a failed lock session. The server freed its locks
// when it ended (or will, when it notices): leases held here are lost.
func (c *Coordinator) dropLocked() {
	if c.conn != nil {
		c.conn.Close(context.Background())
		c.conn = nil
	}
	if len(c.held) > 0 {
		clear(c.held)
		if lost := c.cb.Lost; lost != nil {
			go lost()
		}
	}
}

// qAcquire takes the advisory lock of a conversation's lease without
// waiting and, when it got it, gives the lease a new epoch, in one round
// trip. The epoch update waits for a commit of the conversation in flight
// (it holds the row lock), so no write fenced with the old epoch can land
// after this returns. No row (but ok) means the conversation is gone.
const qAcquire = `WITH l AS (SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok),
	u AS (UPDATE conversations SET lease_prev = lease_epoch, lease_epoch = nextval('lease_epochs')
		WHERE id = $2 AND (SELECT ok FROM l) RETURNING lease_epoch, lease_prev)
	SELECT l.ok, u.lease_epoch, u.lease_prev FROM l LEFT JOIN u ON true`

// Acquire tries to take the conversation's lease without waiting.
func (c *Coordinator) Acquire(ctx context.Context, conversationID string) (agentik.Lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.held[conversationID]; ok {
		return agentik.Lease{Held: true, Epoch: e, Continued: true}, nil
	}
	conn, err := c.session(ctx)
	if err != nil {
		return agentik.Lease{}, unavailable(err)
	}
	var ok bool
	var epoch, prev *int64
	key := c.key(conversationID)
	if err := conn.QueryRow(ctx, qAcquire, key, conversationID).Scan(&ok, &epoch, &prev); err != nil {
		if ctx.Err() == nil {
			c.dropLocked()
		}
		return agentik.Lease{}, classify(err)
	}
	if !ok {
		return agentik.Lease{}, nil
	}
	if epoch == nil { // deleted meanwhile: nothing to run
		c.unlockLocked(ctx, conversationID)
		return agentik.Lease{}, notFound(conversationID)
	}
	c.held[conversationID] = *epoch
	continued := c.last[conversationID] == *prev && *prev != 0
	c.last[conversationID] = *epoch
	return agentik.Lease{Held: true, Epoch: *epoch, Continued: continued}, nil
}

// Release gives the lease back.
func (c *Coordinator) Release(ctx context.Context, conversationID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.held[conversationID]; !ok {
		return
	}
	delete(c.held, conversationID)
	c.unlockLocked(ctx, conversationID)
}

// unlockLocked frees the advisory lock of a conversation; c.mu is held.
func (c *Coordinator) unlockLocked(ctx context.Context, conversationID string) {
	if c.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", c.key(conversationID)); err != nil {
		c.log.Warn("cluster: release lease", "conversation", conversationID, "err", err)
		c.dropLocked() // ending the session frees the lock
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

// checkSession proves the lock session alive while it holds leases, so a
// broken one is noticed within a scan interval even when idle.
func (c *Coordinator) checkSession() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.held) == 0 || c.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.scan)
	defer cancel()
	if _, err := c.conn.Exec(ctx, "SELECT 1"); err != nil && c.ctx.Err() == nil {
		c.log.Warn("cluster: lock session lost; stopping this process's turns", "err", err)
		c.dropLocked()
	}
}

// qOpenConversations: those of the Coordinator's agent (its Store's view).
const qOpenConversations = `SELECT DISTINCT m.conversation_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
	WHERE m.type = 'user_message' AND NOT m.closed AND c.agent_id = $1`

// scanOpenTurns kicks every conversation with open turns whose lease this
// process does not hold; the engine's loop takes the lease if it is free.
func (c *Coordinator) scanOpenTurns() {
	started := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx, c.scan)
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
