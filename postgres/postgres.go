// Package postgres is the scale-out agentik.Store: conversations, journals,
// durable events, working memory and the agent-level event stream in one
// PostgreSQL database that several agentik processes share, on the pure-Go
// pgx driver. It also provides the cross-process agentik.Bus (LISTEN/NOTIFY
// as the wake-up, the events table as the source of truth) and a
// Coordinator that gives each conversation's turns to exactly one process.
//
// Main guarantee: every Commit is one transaction, so a journal message and
// its durable event are stored together or not at all (SPEC §1.4); seqs are
// gap-free per conversation; cursors are unique, never reused, and within a
// conversation handed out in commit order, so a reader that follows a
// conversation's events by cursor never skips one that commits late; agent
// events are numbered after commit by a sequencer, so the agent stream
// follows by cursor too. No commit waits for a lock of another conversation
// (docs/postgres.md, "Cursors without a global lock").
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ agentik.Store = (*Store)(nil)

// Defaults of Options.
const (
	DefaultMaxConns         = 10
	DefaultStatementTimeout = 30 * time.Second
	DefaultConnectTimeout   = 5 * time.Second
)

// Options tune the connection pool. Zero values take the defaults.
type Options struct {
	// MaxConns is the pool size of this process (AGENTIK_DB_POOL_SIZE).
	// The Bus and the Coordinator each hold one more connection of their own.
	MaxConns int32
	// StatementTimeout bounds every statement on the server
	// (AGENTIK_DB_STATEMENT_TIMEOUT): a stuck query becomes EUnavailable
	// instead of holding a turn or a request forever.
	StatementTimeout time.Duration
	// ConnectTimeout bounds dialling the database, so that requests fail
	// fast with EUnavailable while it is down.
	ConnectTimeout time.Duration
}

// Store is an agentik.Store backed by PostgreSQL. Safe for concurrent use;
// Close is idempotent.
//
// A Store is the view of one agent (ForAgent): its conversations, and its
// agent events, are the agent's own — another agent's conversation is not
// found. The Store Open returns is the view of agent "", which holds the
// conversations of a database written before agents existed until
// AdoptConversations gives them to an agent. Methods that take a
// conversation id the caller got from the view (Commit, Messages, Events,
// Memory, …) do not check its agent again. A Bus or a Coordinator made on
// a view serves that agent's agent events and open turns.
type Store struct {
	*shared
	storeutil.Reads // Messages, Events, Memory, State, OpenTurns, …
	agent           string
	view            bool // a ForAgent view: Close leaves the pool open
}

// ForAgent returns the view of agent id on the same pool. Closing a view
// does nothing: close the Store Open returned, after its views are done.
func (s *Store) ForAgent(id string) *Store {
	return &Store{shared: s.shared, Reads: s.Reads.ForAgent(id), agent: id, view: true}
}

// Agent is the id of the agent s is the view of.
func (s *Store) Agent() string { return s.agent }

// AdoptConversations gives the conversations and agent events that belong
// to no agent (written before agents existed) to agent id, and returns how
// many conversations it moved. Idempotent.
func (s *Store) AdoptConversations(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.write(ctx, "adopt conversations", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qAdoptConversations, id)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		// Unnumbered first: a row the sequencer numbers between the two
		// statements is then found by the second.
		if _, err = tx.Exec(ctx, qAdoptUnnumbered, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qAdoptAgentEvents, id)
		return err
	})
	s.states.clear() // the agents remembered for the next commits moved
	return n, err
}

// shared is what every view of one Open shares.
type shared struct {
	hooks   outboxHooks // told of outbox rows written (outbox.go)
	pool    *pgxpool.Pool
	cfg     *pgx.ConnConfig // for the Bus's and Coordinator's own connections
	schema  string          // current_schema() at Open: scopes notifications and locks
	node    string          // this handle's id in notifications
	timeout time.Duration
	chain   chain        // see Bus.Publish
	states  commitStates // see Commit
	trips   *trips       // see RoundTrips

	embedWalk embedWalk // the embedding worker's index (ensureEmbedWalk)

	// noSearchIndex leaves the search vectors out of commits: only for
	// the benchmark that measures what the index adds to a commit.
	noSearchIndex bool

	closeOnce sync.Once
	closed    chan struct{}
}

// Open connects to the database at dsn (a postgres:// URL or a key=value
// connection string; search_path in it selects the schema), applies pending
// migrations and returns the store. It refuses a database whose schema is
// newer than this program knows (ErrSchemaTooNew). Errors reaching the
// database are EUnavailable.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = DefaultStatementTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included: keep it out.
		return nil, agentik.Errorf(agentik.EInvalid, "AGENTIK_DATABASE_URL is not a valid PostgreSQL connection string")
	}
	pc.MaxConns = opts.MaxConns
	pc.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "agentik"
	}
	tr := &trips{}
	pc.ConnConfig.Tracer = tr
	// A connection that died while the database was down is noticed when it
	// is next used; checking idle ones keeps the pool from handing them out.
	pc.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", unavailable(err))
	}
	sh := &shared{
		pool:    pool,
		cfg:     pc.ConnConfig.Copy(),
		node:    agentik.NewID(),
		trips:   tr,
		timeout: opts.StatementTimeout,
		closed:  make(chan struct{}),
	}
	sh.embedWalk.turn = make(chan struct{}, 1)
	s := &Store{shared: sh, Reads: storeutil.NewReads(readDB{sh}, &reads, "")}
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&s.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", classify(err))
	}
	if s.schema == "" {
		pool.Close()
		return nil, fmt.Errorf("open postgres: no schema in search_path exists")
	}
	if err := migrate(ctx, pool, s.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return s, nil
}

// Schema is the schema the store works in.
func (s *Store) Schema() string { return s.schema }

// Close closes the pool (of a view: nothing). It is idempotent.
func (s *Store) Close() error {
	if s.view {
		return nil
	}
	s.closeOnce.Do(func() {
		close(s.closed)
		s.pool.Close()
	})
	return nil
}

func (s *shared) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	if s.isClosed() {
		return fmt.Errorf("ping: %w", unavailable(errors.New("store closed")))
	}
	var one int
	if err := s.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", classify(err))
	}
	return nil
}

// unavailable marks a database failure (storeutil.Unavailable).
func unavailable(err error) error { return storeutil.Unavailable(err) }

// classify turns an error from a store operation into one with a code from
// the agentik vocabulary (storeutil.Classify): a unique violation is a
// conflict, and the context's own errors stay as they are (a caller that
// gave up is not a database failure).
func classify(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		var ne net.Error
		if !errors.As(err, &ne) { // a dial timeout is the database's fault
			return err
		}
	}
	var pe *pgconn.PgError
	return storeutil.Classify(err, errors.As(err, &pe) && pe.Code == "23505") // unique_violation
}

// write runs fn in one transaction; any error rolls everything back. op
// names the operation in the returned error.
func (s *Store) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	if s.isClosed() {
		return fmt.Errorf("%s: %w", op, unavailable(errors.New("store closed")))
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	return nil
}

// read runs fn on the pool. Reads are single statements (a page query
// fetches one extra row for has_more), each seeing one consistent snapshot.
func (s *shared) read(ctx context.Context, op string, fn func(q querier) error) error {
	if s.isClosed() {
		return fmt.Errorf("%s: %w", op, unavailable(errors.New("store closed")))
	}
	if err := fn(s.pool); err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	return nil
}

// querier is what both a transaction and the pool offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func notFound(id string) error { return storeutil.NotFound(id) }
