package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The pgfloor phase (--phases pgfloor, with --pg) measures what PostgreSQL
// itself charges on this machine for the least a plain turn must store:
// two durable commits (the user message before the 202, the answer after
// the model), each one statement and one round trip that inserts one
// journal row and moves its conversation's counters. No agentik process
// takes part. Its backends' CPU per such turn is a floor under the
// cluster phase's PostgreSQL CPU per turn: a turn of any storage design
// that keeps SPEC's promises (202 means committed, the answer committed
// with its turn's close) costs at least this much, before its event log,
// working memory, agent stream, lease and queue read.

// floorPlan is what the phase measures.
type floorPlan struct {
	Clients  int           // connections, each with conversations of its own
	Convs    int           // conversations in all
	Duration time.Duration // measured (after a warm-up of a fifth of it)
	Payload  int           // bytes of each journal row's payload
	Shape    string        // minimal, journal, agentik or split (floorshape.go)
}

// Floor is the phase's outcome.
type Floor struct {
	Shape         string  `json:"shape"`
	Clients       int     `json:"clients"`
	Conversations int     `json:"conversations"`
	PayloadBytes  int     `json:"payload_bytes"`
	Turns         int64   `json:"turns"`
	Seconds       float64 `json:"seconds"`
	TurnsPerSec   float64 `json:"turns_per_sec"`
	PostgresCPUMs float64 `json:"postgres_cpu_ms"` // per turn, the run's backends
	Skipped       string  `json:"skipped,omitempty"`
}

// floorSchema is the least a journal needs: conversations with their
// counters, and messages keyed by conversation and seq.
const floorSchema = `
CREATE SEQUENCE floor_cursors;
CREATE TABLE floor_conversations (id text COLLATE "C" PRIMARY KEY, next_seq bigint NOT NULL, last_cursor bigint NOT NULL);
CREATE TABLE floor_messages (
	conversation_id text COLLATE "C" NOT NULL,
	seq bigint NOT NULL,
	id text COLLATE "C" NOT NULL,
	payload text NOT NULL,
	PRIMARY KEY (conversation_id, seq)
);`

// qFloorCommit is one commit of a minimal turn: the conversation's
// counters moved and its journal row inserted, one statement.
const qFloorCommit = `WITH c AS (UPDATE floor_conversations SET next_seq = next_seq + 1, last_cursor = nextval('floor_cursors')
	WHERE id = $1 RETURNING next_seq)
	INSERT INTO floor_messages (conversation_id, seq, id, payload) SELECT $1, c.next_seq, $2, $3 FROM c`

// floorFlags registers the phase's flags; the function returned checks
// them once parsed.
func floorFlags(fs *flag.FlagSet) func() (floorPlan, error) {
	clients := fs.Int("pgfloor-clients", 8, "pgfloor phase: connections (the cluster phase gives each agentik process a pool of 8)")
	convs := fs.Int("pgfloor-convs", 120, "pgfloor phase: conversations")
	dur := fs.Duration("pgfloor-duration", 8*time.Second, "pgfloor phase: how long to measure (after a warm-up of a fifth of it)")
	payload := fs.Int("pgfloor-payload", 300, "pgfloor phase: bytes of each journal row")
	shape := fs.String("pgfloor-shape", "minimal", "pgfloor phase: minimal (two one-row commits), journal or agentik (agentik's schema, each commit one statement), split (agentik's writes one statement a row, each commit one batch; floorshape.go)")
	return func() (floorPlan, error) {
		p := floorPlan{Clients: *clients, Convs: *convs, Duration: *dur, Payload: *payload, Shape: *shape}
		switch {
		case !slices.Contains(floorShapes, p.Shape):
			return p, fmt.Errorf("--pgfloor-shape: one of %s", strings.Join(floorShapes, ", "))
		case p.Clients < 1 || p.Clients > 256:
			return p, errors.New("--pgfloor-clients: 1…256")
		case p.Convs < p.Clients || p.Convs > 100_000:
			return p, errors.New("--pgfloor-convs: at least --pgfloor-clients, at most 100000")
		case p.Duration < 100*time.Millisecond || p.Duration > time.Hour:
			return p, errors.New("--pgfloor-duration: 100ms…1h")
		case p.Payload < 0 || p.Payload > 1<<20:
			return p, errors.New("--pgfloor-payload: 0…1 MiB")
		}
		return p, nil
	}
}

// floor runs the phase.
func (r *runner) floor(ctx context.Context) error {
	fp := r.floorPlan
	res := &Floor{Shape: fp.Shape, Clients: fp.Clients, Conversations: fp.Convs, PayloadBytes: fp.Payload}
	r.res.PGFloor = res
	if r.pg == nil {
		res.Skipped = "needs PostgreSQL (--pg)"
		r.logf("pgfloor: skipped: %s", res.Skipped)
		return nil
	}
	db, err := r.pg.freshDatabase(ctx)
	if err != nil {
		return err
	}
	if !db.own {
		res.Skipped = "needs a database of its own (CREATE DATABASE was refused)"
		r.logf("pgfloor: skipped: %s", res.Skipped)
		return nil
	}
	cfg, err := pgxpool.ParseConfig(db.dsn)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(fp.Clients)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := floorPrepare(ctx, pool, db.dsn, fp.Shape, fp.Convs); err != nil {
		return err
	}
	var turns atomic.Int64
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var wg sync.WaitGroup
	var connected sync.WaitGroup
	connected.Add(fp.Clients)
	errs := make(chan error, fp.Clients)
	payload := strings.Repeat("x", fp.Payload)
	for i := range fp.Clients {
		wg.Go(func() {
			if err := floorClient(runCtx, pool, i, fp, payload, &turns, connected.Done); err != nil && runCtx.Err() == nil {
				errs <- err
				stopRun()
			}
		})
	}
	n, elapsed, cpu, err := r.floorMeasure(runCtx, db, fp, &turns, connected.Wait)
	stopRun()
	wg.Wait()
	close(errs)
	if e := <-errs; e != nil {
		return fmt.Errorf("client: %w", e)
	}
	if err != nil {
		return err
	}
	if err := floorCheck(ctx, pool, fp.Shape, turns.Load(), int64(fp.Clients)); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no turn committed in %v", fp.Duration)
	}
	res.Turns, res.Seconds = n, round3(elapsed.Seconds())
	res.TurnsPerSec = round3(float64(n) / elapsed.Seconds())
	res.PostgresCPUMs = round3(ms(cpu) / float64(n))
	r.logf("pgfloor: %s shape, %d clients, %d conversations: %.0f turns/s, PostgreSQL CPU %.3f ms per turn",
		fp.Shape, fp.Clients, fp.Convs, res.TurnsPerSec, res.PostgresCPUMs)
	return nil
}

// floorMeasure waits for every client's connection and the warm-up, then
// measures for fp.Duration: the turns counted, the time, and the CPU of
// the clients' backends, each read at the same two edges. The backends
// are found once, after the warm-up; every one must be readable here
// (PostgreSQL on this machine, in this pid namespace), or the figure
// would leave some out.
func (r *runner) floorMeasure(ctx context.Context, db clusterDB, fp floorPlan, turns *atomic.Int64, waitConnected func()) (n int64, elapsed, cpu time.Duration, err error) {
	mon, err := pgx.Connect(ctx, r.pg.dsn)
	if err != nil {
		return 0, 0, 0, err
	}
	defer mon.Close(context.WithoutCancel(ctx))
	waitConnected()
	select {
	case <-time.After(fp.Duration / 5):
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	}
	rows, err := mon.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()", db.name)
	if err != nil {
		return 0, 0, 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return 0, 0, 0, err
	}
	if len(pids) != fp.Clients {
		return 0, 0, 0, fmt.Errorf("%d backends for %d clients", len(pids), fp.Clients)
	}
	cpu0, err := backendsCPU(pids)
	if err != nil {
		return 0, 0, 0, err
	}
	t0, n0 := time.Now(), turns.Load()
	select {
	case <-time.After(fp.Duration):
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	}
	cpu1, err := backendsCPU(pids)
	elapsed, n = time.Since(t0), turns.Load()-n0
	return n, elapsed, cpu1 - cpu0, err
}

// backendsCPU is the CPU time the backends have run, all of them or an
// error.
func backendsCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := schedTime(pid)
		if err != nil {
			return 0, fmt.Errorf("backend %d: %w (PostgreSQL must run on this machine)", pid, err)
		}
		sum += d
	}
	return sum, nil
}

// floorClient runs its shape's turns on its share of the conversations until
// ctx ends: client i takes conversations i, i+Clients, i+2·Clients, …, so
// no two clients share one. It calls connected once it holds its
// connection.
func floorClient(ctx context.Context, pool *pgxpool.Pool, i int, fp floorPlan, payload string, turns *atomic.Int64, connected func()) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		connected()
		return err
	}
	defer conn.Release()
	connected()
	mine := (fp.Convs - i + fp.Clients - 1) / fp.Clients // at least 1: Convs ≥ Clients
	turn := floorTurnOf(fp.Shape)
	seqs := map[string]int64{} // each conversation's next seq (conversations start at 1)
	for k := 0; ctx.Err() == nil; k++ {
		conv := "c" + strconv.Itoa(1+i+fp.Clients*(k%mine))
		seq := max(seqs[conv], 1)
		for j, step := range turn {
			id := strconv.Itoa(j) + "-" + strconv.Itoa(i) + "-" + strconv.Itoa(k)
			values := [...]any{argConv: conv, argID: id, argPayload: payload, argTime: time.Now(), argSeq: seq, argVector: floorVector}
			if err := floorRun(ctx, conn.Conn(), step, values[:]); err != nil {
				return err
			}
			if len(step) > 1 {
				seq++ // a split commit inserted message seq (other shapes number in SQL)
			}
		}
		seqs[conv] = seq
		turns.Add(1)
	}
	return nil
}

// floorRun runs one transaction of a turn: its statement, or its
// statements in one batch.
func floorRun(ctx context.Context, conn *pgx.Conn, step floorStep, values []any) error {
	args := func(st floorStmt) []any {
		a := make([]any, len(st.args))
		for i, k := range st.args {
			a[i] = values[k]
		}
		return a
	}
	if len(step) == 1 {
		_, err := conn.Exec(ctx, step[0].sql, args(step[0])...)
		return err
	}
	var b pgx.Batch
	for _, st := range step {
		b.Queue(st.sql, args(st)...)
	}
	return conn.SendBatch(ctx, &b).Close()
}

// floorMarkdown writes the phase's line.
func floorMarkdown(p func(string, ...any), f *Floor) {
	p("### PostgreSQL floor of a plain turn\n\n")
	if f.Skipped != "" {
		p("Skipped: %s.\n\n", f.Skipped)
		return
	}
	what := map[string]string{
		"":        "Two one-row commits per turn", // results written before shapes
		"minimal": "Two one-row commits per turn",
		"journal": "A turn's journal on agentik's schema, each commit one statement",
		"agentik": "Everything a plain turn writes on agentik's schema, each commit one statement",
		"split":   "Everything a plain turn writes on agentik's schema, one statement a row, each commit one batch",
	}[f.Shape]
	p("%s (%d clients, %d conversations, %d-byte rows): **%.3f ms** of PostgreSQL CPU per turn, %.0f turns/s.\n\n",
		what, f.Clients, f.Conversations, f.PayloadBytes, f.PostgresCPUMs, f.TurnsPerSec)
}
