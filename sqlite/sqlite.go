// Package sqlite is the embedded agentik.Store: one SQLite file holding
// conversations, their journals, durable events, working memory and the
// agent-level event stream, on the pure-Go modernc.org/sqlite driver (no cgo).
//
// Main guarantee: every Commit is atomic — its own SQLite transaction, or its
// own savepoint in a transaction shared with concurrent writes — so a journal
// message and the durable event that announces it are stored together or not
// at all (the transactional outbox of SPEC §1.4), and a Commit returns only
// after the transaction holding it committed; seqs are gap-free per
// conversation and cursors strictly increasing and never reused, also across
// restarts and deletes.
//
// Writes go through a single connection using BEGIN IMMEDIATE, which
// serialises writers in this process without SQLITE_BUSY upgrades and lets
// busy_timeout arbitrate with other processes. Writes that arrive while one
// transaction runs are group committed: the next transaction applies all of
// them, each in a savepoint, so the cost of a commit is shared (write.go).
// Reads use a separate pool of read-only connections, which WAL lets run
// beside the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/storeutil"
	driver "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var _ agentik.Store = (*Store)(nil)

// readers is the size of the read pool. Reads are short indexed lookups; a
// few connections are enough to keep the HTTP side from queueing behind each
// other on a small machine.
const readers = 4

// Store is an agentik.Store backed by one SQLite file. Safe for concurrent
// use; Close is idempotent.
//
// A Store is the view of one agent (ForAgent): its conversations, and its
// agent events, are the agent's own — another agent's conversation is not
// found. The Store Open returns is the view of agent "", which holds the
// conversations of a database written before agents existed until
// AdoptConversations gives them to an agent. Methods that take a
// conversation id the caller got from the view (Commit, Messages, Events,
// Memory, …) do not check its agent again.
type Store struct {
	*db
	storeutil.Reads // Messages, Events, Memory, State, OpenTurns, …
	agent           string
	view            bool // a ForAgent view: Close leaves the database open
}

// db is the database every view of one Open shares.
type db struct {
	w  *sql.DB   // the writer's pool, whose one connection wc holds: use wc
	wc *sql.Conn // the single writer connection, held for the store's life
	r  *sql.DB   // read-only pool
	ws stmts     // prepared on wc
	rs stmts     // prepared on r

	writer             // the queue of writes to wc (write.go)
	hooks  outboxHooks // told of outbox rows written (webhooks.go)
	cp     *checkpointer
	ix     *indexer // moves queued full-text rows into the index (index.go)

	// noSearchIndex leaves the full-text rows out of commits: only for
	// the benchmark that measures what the index adds to a commit.
	noSearchIndex bool

	closeOnce sync.Once
	closeErr  error
}

// ForAgent returns the view of agent id on the same database. Closing a
// view does nothing: close the Store Open returned, after its views are
// done.
func (s *Store) ForAgent(id string) *Store {
	return &Store{db: s.db, Reads: s.Reads.ForAgent(id), agent: id, view: true}
}

// Agent is the id of the agent s is the view of.
func (s *Store) Agent() string { return s.agent }

// AdoptConversations gives the conversations and agent events that belong
// to no agent (written before agents existed) to agent id, and returns how
// many conversations it moved. Idempotent.
func (s *Store) AdoptConversations(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.write(ctx, "adopt conversations", func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, qAdoptConversations, id)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, qAdoptAgentEvents, id)
		return err
	})
	return n, err
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and returns the store. It refuses a database whose schema is
// newer than this program knows (ErrSchemaTooNew).
func Open(ctx context.Context, path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// busy_timeout comes first so the other pragmas (journal_mode needs a
	// lock) wait for other processes instead of failing.
	common := url.Values{}
	common.Add("_pragma", "busy_timeout(5000)")
	common.Add("_pragma", "journal_mode(WAL)")
	common.Add("_pragma", "synchronous(NORMAL)")
	common.Add("_pragma", "foreign_keys(1)")

	wq := cloneValues(common)
	wq.Set("_txlock", "immediate") // the migrations' transactions (the writer begins its own)
	// A batch of group commit that runs again with savepoints (write.go)
	// has their sub-journal spill to a temporary file past 64 KiB: kept in
	// memory, a batch writes only its WAL frames.
	wq.Add("_pragma", "temp_store(MEMORY)")
	// Checkpoints run off the commit path (checkpoint.go).
	wq.Add("_pragma", "wal_autocheckpoint(0)")
	w, err := sql.Open("sqlite", dsn(abs, wq))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, unavailable(err))
	}
	w.SetMaxOpenConns(1) // taken out of the pool and held as wc, below
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}

	rq := cloneValues(common)
	rq.Add("_pragma", "query_only(1)")
	// Readers read pages with pread, not through a mapping of the file
	// (mmap_size): SQLite unmaps the whole mapping at every read
	// transaction that follows a commit, which a live server always has,
	// and the next read faults its pages in again: BenchmarkReadAfterWrite
	// took 333-341 µs mapped, 220-243 µs not. Only a long read with no
	// commit before it gains: a replay of 10,000 events costs about 10 %
	// less mapped.
	r, err := sql.Open("sqlite", dsn(abs, rq))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, unavailable(err))
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	wc, err := w.Conn(ctx)
	if err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, unavailable(err))
	}
	ws, err := prepare(ctx, wc, writeQueries)
	if err != nil {
		wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, unavailable(err))
	}
	rs, err := prepare(ctx, r, readQueries)
	if err != nil {
		ws.close()
		wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, unavailable(err))
	}
	c, err := sql.Open("sqlite", dsn(abs, common))
	if err != nil {
		rs.close()
		ws.close()
		wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, unavailable(err))
	}
	c.SetMaxOpenConns(1)
	d := &db{w: w, wc: wc, r: r, ws: ws, rs: rs}
	d.cp = newCheckpointer(c)
	d.ix = newIndexer(&Store{db: d})
	s := &Store{db: d, Reads: storeutil.NewReads(readDB{d}, &reads, "")}
	// The full-text rows a crash left queued.
	if err := s.indexCurrent(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return s, nil
}

// dsn builds a file: URI so that any path (with '?', '#', spaces) survives,
// with the driver's parameters in the query.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// Close closes both connection pools (of a view: nothing). It is idempotent.
func (s *Store) Close() error {
	if s.view {
		return nil
	}
	s.closeOnce.Do(func() {
		s.ix.close()
		errC := s.cp.close()
		s.ws.close()
		s.rs.close()
		errWC := s.wc.Close()
		errW := s.w.Close()
		errR := s.r.Close()
		s.closeErr = errors.Join(errC, errWC, errW, errR)
	})
	return s.closeErr
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", unavailable(err))
	}
	return nil
}

// unavailable marks a database failure (storeutil.Unavailable).
func unavailable(err error) error { return storeutil.Unavailable(err) }

// classify turns an error from a store operation into one with a code from
// the agentik vocabulary (storeutil.Classify): a constraint violation is a
// conflict.
func classify(err error) error {
	var se *driver.Error
	return storeutil.Classify(err, errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT)
}

// read runs fn on the reader pool. Reads are single statements (a page query
// fetches one extra row for has_more), so they need no transaction: each
// statement sees one consistent snapshot on its own.
func (d *db) read(ctx context.Context, op string, fn func(r *reader) error) error {
	if err := fn(&reader{db: d.r, st: d.rs}); err != nil {
		return fmt.Errorf("%s: %w", op, classify(err))
	}
	return nil
}

func notFound(id string) error { return storeutil.NotFound(id) }

// queryer is what both a write transaction and the reader pool offer.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// stmts are statements prepared once per pool: parsing SQL costs about as
// much as running these short indexed queries. Queries not in the map run
// unprepared.
type stmts map[string]*sql.Stmt

// prepare prepares qs on db, a pool or a connection.
func prepare(ctx context.Context, db interface {
	PrepareContext(ctx context.Context, q string) (*sql.Stmt, error)
}, qs []string) (stmts, error) {
	st := stmts{}
	for _, q := range qs {
		p, err := db.PrepareContext(ctx, q)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		st[q] = p
	}
	return st, nil
}

func (st stmts) close() {
	for _, p := range st {
		p.Close()
	}
}

// reader runs the reader pool's prepared statements; database/sql prepares
// each again on the other connections of the pool the first time it runs there.
type reader struct {
	db *sql.DB
	st stmts
}

func (r *reader) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if p := r.st[q]; p != nil {
		return p.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, q, args...)
}

func (r *reader) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if p := r.st[q]; p != nil {
		return p.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, q, args...)
}
