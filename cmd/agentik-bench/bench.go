package main

import (
	"context"
	"errors"
	"fmt"
	wsclient "github.com/agentik/agentik/ws"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/postgres"
	"github.com/agentik/agentik/sqlite"
)

// plan sizes every phase; fullPlan is what docs/benchmarks.md reports,
// quickPlan a smoke run of the same code.
type plan struct {
	LatencyTurns  int // measured turns per variant (plain, tool)
	LatencyWarmup int
	RotateEvery   int // turns before a worker moves to a fresh conversation

	Levels        []int
	LevelWarmup   time.Duration
	LevelDuration time.Duration

	RelayDeltasOne  int // deltas of the answer relayed to one client
	RelayDeltasMany int // deltas of the answer relayed to RelayClients
	RelayClients    int

	Lengths     []int
	LengthTurns int

	ReplayEvents int
	ReplayRuns   int

	Branches int // sibling answers of the branched conversation (issue 46)

	IdleConvs   int
	StartupRuns int
	Settle      time.Duration // pause before reading RSS, see measureMemory

	// Subscribers: SSE clients left idle after an answer of
	// SubscriberDeltas went through them, read after SubscriberSettle.
	Subscribers      int
	SubscriberDeltas int
	SubscriberSettle time.Duration

	// Hostile: SlowClients slow-body clients watched for SlowWindow, an
	// MCP array of BombElements, IRCConnections unregistered connections.
	SlowClients    int
	SlowWindow     time.Duration
	BombElements   int
	IRCConnections int

	// Schedules: idle schedules watched for ScheduleIdle (CPU, RSS), then
	// Deliveries webhook events timed to a receiver (schedules.go).
	Schedules    int
	ScheduleIdle time.Duration
	Deliveries   int
}

func fullPlan() plan {
	return plan{
		LatencyTurns: 1000, LatencyWarmup: 50, RotateEvery: 25,
		Levels: []int{1, 10, 20, 100, 1000}, LevelWarmup: 2 * time.Second, LevelDuration: 10 * time.Second,
		RelayDeltasOne: 20000, RelayDeltasMany: 1000, RelayClients: 1000,
		Lengths: []int{10, 1000, 100_000}, LengthTurns: 200,
		ReplayEvents: 10_000, ReplayRuns: 20, Branches: 1000,
		IdleConvs: 1000, StartupRuns: 10, Settle: 2 * time.Second,
		// The Go runtime collects an idle heap by its forced GC (every 2
		// minutes) and returns it to the OS after: a shorter settle would
		// measure the answer's garbage, not what the subscribers hold.
		Subscribers: 1000, SubscriberDeltas: 1100, SubscriberSettle: 130 * time.Second,
		SlowClients: 100, SlowWindow: 10 * time.Second, BombElements: 1_900_000, IRCConnections: 1005,
		Schedules: 10_000, ScheduleIdle: 30 * time.Second, Deliveries: 200,
	}
}

func quickPlan() plan {
	// 1,000 concurrent conversations alone take ~20 s on 2 cores: the quick
	// run stops at 100 and uses 500 idle conversations and SSE clients.
	return plan{
		LatencyTurns: 100, LatencyWarmup: 10, RotateEvery: 25,
		Levels: []int{1, 10, 20, 100}, LevelWarmup: 500 * time.Millisecond, LevelDuration: 1500 * time.Millisecond,
		RelayDeltasOne: 2000, RelayDeltasMany: 200, RelayClients: 500,
		Lengths: []int{10, 1000, 10_000}, LengthTurns: 20, // seeding 100,000 alone takes ~10 s
		ReplayEvents: 10_000, ReplayRuns: 3, Branches: 1000,
		IdleConvs: 500, StartupRuns: 3, Settle: 500 * time.Millisecond,
		Subscribers: 1000, SubscriberDeltas: 1100, SubscriberSettle: 5 * time.Second, // an upper bound: garbage not yet collected
		SlowClients: 100, SlowWindow: 5 * time.Second, BombElements: 1_900_000, IRCConnections: 1005,
		Schedules: 10_000, ScheduleIdle: 5 * time.Second, Deliveries: 50,
	}
}

// Phases, in the order they run.
var allPhases = []string{"startup", "latency", "openai", "concurrency", "memory", "subscribers", "length", "replay", "branches", "hostile", "schedules", "cluster", "pgfloor"}

// defaultPhases are those a run without --phases measures: the cluster
// phase needs --pg (and root for its CPU quotas), the pgfloor phase --pg,
// and both are asked for by name.
var defaultPhases = allPhases[:len(allPhases)-2]

// runner runs the phases against fresh servers and fills res.
type runner struct {
	plan        plan
	clusterPlan clusterPlan
	floorPlan   floorPlan
	server      serverConfig // binary and model; the database is set per server
	pg          *pgSchemas   // --pg: a fresh schema per server; nil for SQLite
	dir         string       // scratch directory for databases
	model       *model
	hc          *http.Client
	out         io.Writer // progress
	t0          time.Time
	res         *Results
	dbs         int
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "[%6.1fs] %s\n", time.Since(r.t0).Seconds(), fmt.Sprintf(format, args...))
}

// newDB returns a fresh, empty database: a SQLite path, or with --pg the DSN
// of a new schema.
func (r *runner) newDB(ctx context.Context) (string, error) {
	if r.pg != nil {
		return r.pg.fresh(ctx)
	}
	r.dbs++
	return filepath.Join(r.dir, "bench-"+strconv.Itoa(r.dbs)+".db"), nil
}

// openStore opens db with the store the server uses for it, for seeding.
func (r *runner) openStore(ctx context.Context, db string) (agentik.Store, error) {
	if r.pg != nil {
		return postgres.Open(ctx, db, postgres.Options{})
	}
	return sqlite.Open(ctx, db)
}

// seed creates a fresh database holding one conversation of n messages.
func (r *runner) seed(ctx context.Context, n int) (db, conv string, err error) {
	if db, err = r.newDB(ctx); err != nil {
		return "", "", err
	}
	store, err := r.openStore(ctx, db)
	if err != nil {
		return "", "", err
	}
	defer store.Close()
	conv, err = seedConversation(ctx, store, n)
	return db, conv, err
}

// startFresh runs a server on a fresh database.
func (r *runner) startFresh(ctx context.Context) (target, *api, time.Duration, error) {
	db, err := r.newDB(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	return r.start(ctx, db)
}

// start runs a server on db and returns it with a client for it.
func (r *runner) start(ctx context.Context, db string) (target, *api, time.Duration, error) {
	sc := r.server
	if r.pg != nil {
		sc.pgDSN = db
	} else {
		sc.dbPath = db
	}
	t, d, err := startTarget(ctx, sc)
	if err != nil {
		return nil, nil, 0, err
	}
	return t, &api{base: t.Base(), hc: r.hc}, d, nil
}

func stop(t target, err *error) {
	if e := t.Stop(); e != nil && *err == nil {
		*err = e
	}
}

// run runs the phases named in phases.
func (r *runner) run(ctx context.Context, phases []string) error {
	for _, p := range allPhases {
		if !slices.Contains(phases, p) {
			continue
		}
		r.logf("== %s", p)
		var err error
		switch p {
		case "startup":
			err = r.startup(ctx)
		case "latency":
			err = r.latency(ctx)
		case "openai":
			err = r.openai(ctx)
		case "concurrency":
			err = r.concurrency(ctx)
		case "memory":
			err = r.memory(ctx)
		case "subscribers":
			err = r.subscribers(ctx)
		case "length":
			err = r.length(ctx)
		case "replay":
			err = r.replay(ctx)
		case "branches":
			err = r.branches(ctx)
		case "hostile":
			err = r.hostile(ctx)
		case "schedules":
			err = r.schedules(ctx)
		case "cluster":
			err = r.cluster(ctx)
		case "pgfloor":
			err = r.floor(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// startup (7): start-up time to a healthy server on a fresh database, and
// the binary's size.
func (r *runner) startup(ctx context.Context) error {
	if r.server.binary != "" {
		fi, err := os.Stat(r.server.binary)
		if err != nil {
			return err
		}
		r.res.Binary = &BinaryInfo{Path: r.server.binary, SizeBytes: fi.Size()}
		r.logf("binary %s: %.1f MiB", r.server.binary, float64(fi.Size())/(1<<20))
	}
	var ds []time.Duration
	for range r.plan.StartupRuns {
		t, _, d, err := r.startFresh(ctx)
		if err != nil {
			return err
		}
		if err := t.Stop(); err != nil {
			return err
		}
		ds = append(ds, d)
	}
	s := &Startup{Dist: dist(ds).rounded()}
	for _, d := range ds {
		s.Runs = append(s.Runs, round3(ms(d)))
	}
	r.res.Startup = s
	r.logf("start-up to healthy: p50 %.1f ms (min %.1f, max %.1f) over %d runs", s.Dist.P50Ms, s.Dist.MinMs, s.Dist.MaxMs, s.Dist.N)
	return nil
}

// latency (1): one turn at a time, each followed by a direct replay of the
// very requests the server made to the model, so both see the same load.
func (r *runner) latency(ctx context.Context) (err error) {
	t, a, _, err := r.startFresh(ctx)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	res := &Latency{}
	for _, v := range []struct {
		name, prompt string
		calls        int
		out          *LatencyPair
	}{
		{"plain", promptPlain, 1, &res.Plain},
		{"one tool call", promptTool, 2, &res.Tool},
	} {
		p, err := r.latencyVariant(ctx, t, a, v.prompt, v.calls)
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		*v.out = p
		r.logf("%s turn: agentik p50 %.3f ms p99 %.3f ms | direct p50 %.3f ms p99 %.3f ms | added p50 %.3f ms p99 %.3f ms | server CPU %.3f ms/turn",
			v.name, p.Agentik.P50Ms, p.Agentik.P99Ms, p.Direct.P50Ms, p.Direct.P99Ms, p.AddedP50Ms, p.AddedP99Ms, p.ServerCPUPerTurnMs)
	}
	r.res.Latency = res
	return nil
}

func (r *runner) latencyVariant(ctx context.Context, t target, a *api, prompt string, calls int) (LatencyPair, error) {
	cpu0, err := t.CPU()
	if err != nil {
		return LatencyPair{}, err
	}
	r.model.startRecording()
	defer r.model.stopRecording()
	var agentik, direct, pair, ack []time.Duration
	var es *eventStream
	defer func() {
		if es != nil {
			es.Close()
		}
	}()
	var conv string
	for i := range r.plan.LatencyWarmup + r.plan.LatencyTurns {
		if i%r.plan.RotateEvery == 0 {
			if es != nil {
				es.Close()
			}
			var err error
			if conv, err = a.createConversation(ctx, "latency"); err != nil {
				return LatencyPair{}, err
			}
			if es, err = a.events(ctx, conv, -1); err != nil {
				return LatencyPair{}, err
			}
		}
		r.model.take()
		t0 := time.Now()
		if err := a.send(ctx, conv, prompt); err != nil {
			return LatencyPair{}, err
		}
		acked := time.Since(t0)
		if _, err := es.waitEnd(); err != nil {
			return LatencyPair{}, err
		}
		d := time.Since(t0)
		bodies := r.model.take()
		if len(bodies) != calls {
			return LatencyPair{}, fmt.Errorf("the turn made %d model calls, want %d", len(bodies), calls)
		}
		t1 := time.Now()
		for _, b := range bodies {
			if _, err := r.model.direct(ctx, r.hc, b); err != nil {
				return LatencyPair{}, err
			}
		}
		dd := time.Since(t1)
		if i >= r.plan.LatencyWarmup {
			agentik, direct, pair, ack = append(agentik, d), append(direct, dd), append(pair, d-dd), append(ack, acked)
		}
	}
	p := LatencyPair{Agentik: dist(agentik).rounded(), Direct: dist(direct).rounded(), Pairwise: dist(pair).rounded(), Ack: dist(ack).rounded()}
	p.AddedP50Ms = round3(p.Agentik.P50Ms - p.Direct.P50Ms)
	p.AddedP99Ms = round3(p.Agentik.P99Ms - p.Direct.P99Ms)
	cpu1, err := t.CPU()
	if err != nil {
		return p, err
	}
	p.ServerCPUPerTurnMs = round3(ms(cpu1-cpu0) / float64(r.plan.LatencyWarmup+r.plan.LatencyTurns))
	return p, nil
}

// worker is one conversation driven in a closed loop: send, wait for end,
// send again. It moves to a fresh conversation every RotateEvery turns so
// that the model context stays the size of a real chat.
type worker struct {
	a      *api
	rotate int
	conv   string
	es     *eventStream
	turns  int
}

func (w *worker) open(ctx context.Context) error {
	if w.es != nil {
		w.es.Close()
	}
	var err error
	if w.conv, err = w.a.createConversation(ctx, "load"); err != nil {
		return err
	}
	w.es, err = w.a.events(ctx, w.conv, -1)
	return err
}

func (w *worker) turn(ctx context.Context, prompt string) error {
	if w.turns > 0 && w.turns%w.rotate == 0 {
		if err := w.open(ctx); err != nil {
			return err
		}
	}
	w.turns++
	if err := w.a.send(ctx, w.conv, prompt); err != nil {
		return err
	}
	_, err := w.es.waitEnd()
	return err
}

func (w *worker) close() {
	if w.es != nil {
		w.es.Close()
	}
}

// openWorkers creates n conversations with their event streams, 32 at a time.
func openWorkers(ctx context.Context, a *api, n, rotate int) ([]*worker, error) {
	ws := make([]*worker, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = &worker{a: a, rotate: rotate}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = ws[i].open(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, w := range ws {
			w.close()
		}
		return nil, err
	}
	return ws, nil
}

// concurrency (2): closed-loop load at each level. Throughput counts the
// turns completed inside the measuring window; latency is that of the turns
// started inside it.
func (r *runner) concurrency(ctx context.Context) (err error) {
	t, a, _, err := r.startFresh(ctx)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	for _, n := range r.plan.Levels {
		r.model.startRecording()
		lvl, err := r.level(ctx, t, a, n)
		bodies := r.model.take()
		r.model.stopRecording()
		if err != nil {
			return fmt.Errorf("%d conversations: %w", n, err)
		}
		if lvl.DirectTurnsPerSec, err = r.directLevel(ctx, n, bodies); err != nil {
			return fmt.Errorf("%d conversations, direct: %w", n, err)
		}
		if lvl.DirectTurnsPerSec > 0 {
			lvl.OfDirect = round3(lvl.TurnsPerSec / lvl.DirectTurnsPerSec)
		}
		r.res.Concurrency = append(r.res.Concurrency, lvl)
		r.logf("%4d conversations: %7.0f turns/s  p50 %8.3f ms  p99 %8.3f ms  (%d turns, %d errors, server CPU %.3f ms/turn); direct %7.0f turns/s (%.0f %%)",
			n, lvl.TurnsPerSec, lvl.Latency.P50Ms, lvl.Latency.P99Ms, lvl.Turns, lvl.Errors, lvl.ServerCPUPerTurnMs, lvl.DirectTurnsPerSec, 100*lvl.OfDirect)
	}
	return nil
}

// directLevel is the floor of a concurrency level, measured right after it:
// n clients in a closed loop, each making the model requests the server made
// during the level directly (the server is idle meanwhile), for as long as
// the level's window after its warm-up. It returns model calls per second.
func (r *runner) directLevel(ctx context.Context, n int, bodies [][]byte) (float64, error) {
	if len(bodies) == 0 {
		return 0, nil
	}
	var (
		next      atomic.Int64
		completed atomic.Int64
		failed    atomic.Int64
		wg        sync.WaitGroup
	)
	from := time.Now().Add(r.plan.LevelWarmup)
	end := from.Add(r.plan.LevelDuration)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if time.Now().After(end) {
					return
				}
				b := bodies[int(next.Add(1)-1)%len(bodies)]
				if _, err := r.model.direct(ctx, r.hc, b); err != nil {
					// Not the runtime's: counted and reported, the
					// client goes on (a loaded machine can time a dial out).
					if failed.Add(1) > int64(10*n) || ctx.Err() != nil {
						return
					}
					continue
				}
				if t := time.Now(); t.After(from) && t.Before(end) {
					completed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		r.logf("  direct floor at %d conversations: %d requests failed", n, f)
	}
	if completed.Load() == 0 {
		return 0, fmt.Errorf("no direct request completed (%d failed)", failed.Load())
	}
	return round3(float64(completed.Load()) / r.plan.LevelDuration.Seconds()), nil
}

func (r *runner) level(ctx context.Context, t target, a *api, n int) (ConcurrencyLevel, error) {
	ws, err := openWorkers(ctx, a, n, r.plan.RotateEvery)
	if err != nil {
		return ConcurrencyLevel{}, err
	}
	cpu0, err := t.CPU()
	if err != nil {
		return ConcurrencyLevel{}, err
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	win := &levelWindow{n: n, start: time.Now(), warmup: r.plan.LevelWarmup, duration: r.plan.LevelDuration}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { win.drive(ctx, w) })
	}
	wg.Wait()
	cpu1, err := t.CPU()
	if err != nil {
		return ConcurrencyLevel{}, err
	}
	if win.windowNs.Load() == 0 {
		return ConcurrencyLevel{}, fmt.Errorf("no conversation finished a turn: %v", win.firstErr)
	}
	window := time.Duration(win.windowNs.Load())
	lvl := ConcurrencyLevel{
		Conversations: n,
		Seconds:       round3(window.Seconds()),
		Turns:         int(win.completed.Load()),
		TurnsPerSec:   round3(float64(win.completed.Load()) / window.Seconds()),
		Latency:       dist(win.lat).rounded(),
		Errors:        int(win.failed.Load()),
	}
	if n := win.all.Load(); n > 0 {
		lvl.ServerCPUPerTurnMs = round3(ms(cpu1-cpu0) / float64(n))
	}
	if win.firstErr != nil {
		r.logf("  first error at %d conversations: %v", n, win.firstErr)
	}
	if lvl.Turns == 0 {
		return lvl, fmt.Errorf("no turn completed: %v", win.firstErr)
	}
	return lvl, nil
}

// levelWindow is the measuring window of a concurrency level and what its
// workers count in it. The window opens after the warm-up and once every
// conversation has finished its first turn (at 1,000 conversations the
// first round alone can outlast the warm-up), then stays open for the
// level's duration.
type levelWindow struct {
	n                int // workers
	start            time.Time
	warmup, duration time.Duration

	fromNs, endNs atomic.Int64 // unix nanoseconds; 0 until the window is known
	windowNs      atomic.Int64
	started       atomic.Int64 // workers past their first turn
	completed     atomic.Int64
	all           atomic.Int64 // every completed turn, warm-up included
	failed        atomic.Int64

	mu       sync.Mutex
	lat      []time.Duration
	firstErr error
}

// firstDone counts a worker past its first turn; the last one opens the
// window.
func (win *levelWindow) firstDone() {
	if win.started.Add(1) != int64(win.n) {
		return
	}
	from := win.start.Add(win.warmup)
	if now := time.Now(); now.After(from) {
		from = now
	}
	// A window shorter than a few turn latencies counts mostly the turns
	// that happen to straddle its edges: stretch it to three times the
	// first round.
	window := max(win.duration, 3*time.Since(win.start))
	win.fromNs.Store(from.UnixNano())
	win.endNs.Store(from.Add(window).UnixNano())
	win.windowNs.Store(int64(window))
}

// drive runs w's turns in a closed loop until the window ends or w's
// connection breaks.
func (win *levelWindow) drive(ctx context.Context, w *worker) {
	var mine []time.Duration
	first := true
	defer func() {
		if first {
			win.firstDone() // a worker that died must not hold the window shut
		}
		win.mu.Lock()
		win.lat = append(win.lat, mine...)
		win.mu.Unlock()
	}()
	for {
		t0 := time.Now()
		if e := win.endNs.Load(); e != 0 && t0.UnixNano() >= e {
			return
		}
		err := w.turn(ctx, promptPlain)
		t1 := time.Now()
		if first {
			first = false
			win.firstDone()
		}
		if err != nil {
			win.failed.Add(1)
			win.mu.Lock()
			if win.firstErr == nil {
				win.firstErr = err
			}
			win.mu.Unlock()
			if errors.Is(err, errTurnFailed) {
				continue
			}
			return // a broken connection: this worker is done
		}
		win.all.Add(1)
		from, end := win.fromNs.Load(), win.endNs.Load()
		if from == 0 {
			continue
		}
		if t0.UnixNano() >= from {
			mine = append(mine, t1.Sub(t0))
		}
		if t1.UnixNano() >= from && t1.UnixNano() < end {
			win.completed.Add(1)
		}
	}
}

// memory (6) and relay (3) share one server: RSS idle, after IdleConvs
// conversations with one answered turn each, after RelayClients SSE clients;
// then an answer relayed to one client and to all of them.
//
// RSS is read after Settle: the Go runtime returns freed memory lazily, so the
// figures include garbage not yet collected and are upper bounds.
func (r *runner) memory(ctx context.Context) (err error) {
	t, a, _, err := r.startFresh(ctx)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	settle := func() (int64, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(r.plan.Settle):
		}
		return t.RSSKB()
	}
	m := &Memory{IdleConversations: r.plan.IdleConvs, SSEClients: r.plan.RelayClients}
	r.res.Memory = m
	if err := r.memoryIdle(ctx, t, a, m, settle); err != nil {
		return err
	}
	if err := r.relayOne(ctx, a); err != nil {
		return err
	}

	// Many clients of one conversation: RSS per client, then the relay.
	conv, err := a.createConversation(ctx, "relay")
	if err != nil {
		return err
	}
	before, err := settle()
	if err != nil {
		return err
	}
	clients, err := openClients(ctx, a, conv, r.plan.RelayClients)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if m.RSSWithClientsKB, err = settle(); err != nil {
		return err
	}
	m.PerSSEClientKB = round3(float64(m.RSSWithClientsKB-before) / float64(r.plan.RelayClients))
	r.logf("%d SSE clients: RSS %d KiB, %.2f KiB each", r.plan.RelayClients, m.RSSWithClientsKB, m.PerSSEClientKB)
	if err := r.memoryWS(ctx, a, conv, m, settle); err != nil {
		return err
	}
	many, err := r.relay(ctx, a, r.plan.RelayClients, r.plan.RelayDeltasMany, &relayConv{id: conv, clients: clients})
	if err != nil {
		return err
	}
	r.res.Relay = append(r.res.Relay, many)
	r.logf("relay to %d clients: %.0f deltas/s in total, %.0f per client, min delivered %d/%d",
		many.Clients, many.DeltasPerSec, many.PerClientDeltasPerSec, many.DeliveredMin, many.DeltasSent)
	m.RSSAfterBurstKB, _ = t.RSSKB()

	return nil
}

// memoryIdle measures the idle server, the server warmed up, and the
// server with IdleConvs conversations answered once each.
func (r *runner) memoryIdle(ctx context.Context, t target, a *api, m *Memory, settle func() (int64, error)) (err error) {
	if m.IdleRSSKB, err = settle(); err != nil {
		return err
	}
	// The file-backed part is the binary's pages the process mapped, which
	// depends on the page cache as much as on the program: a binary just
	// written maps more of itself per fault than one read back from disk.
	if m.IdleAnonKB, err = t.StatusKB("RssAnon"); err != nil {
		return err
	}
	if m.IdleFileKB, err = t.StatusKB("RssFile"); err != nil {
		return err
	}
	r.logf("idle RSS %d KiB (anonymous %d KiB, file-backed %d KiB)", m.IdleRSSKB, m.IdleAnonKB, m.IdleFileKB)

	// Warm up: the first turns allocate what every later turn reuses (HTTP
	// connections to the model, pools, the statement cache).
	ws, err := openWorkers(ctx, a, 10, r.plan.RotateEvery)
	if err != nil {
		return err
	}
	for _, w := range ws {
		for range 3 {
			if err := w.turn(ctx, promptPlain); err != nil {
				return err
			}
		}
		w.close()
	}
	if m.WarmRSSKB, err = settle(); err != nil {
		return err
	}

	if err := r.idleConversations(ctx, a); err != nil {
		return err
	}
	if m.RSSWithConvsKB, err = settle(); err != nil {
		return err
	}
	m.PerConversationKB = round3(float64(m.RSSWithConvsKB-m.WarmRSSKB) / float64(r.plan.IdleConvs))
	r.logf("%d idle conversations: RSS %d KiB, %.2f KiB each", r.plan.IdleConvs, m.RSSWithConvsKB, m.PerConversationKB)
	return nil
}

// idleConversations creates IdleConvs conversations, answers each once,
// then leaves them alone.
func (r *runner) idleConversations(ctx context.Context, a *api) error {
	var wg sync.WaitGroup
	errs := make(chan error, r.plan.IdleConvs)
	sem := make(chan struct{}, 20)
	for range r.plan.IdleConvs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w := &worker{a: a, rotate: 1 << 30}
			defer w.close()
			if err := w.open(ctx); err != nil {
				errs <- err
				return
			}
			if err := w.turn(ctx, promptPlain); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// relayOne relays an answer to one client, and times the model's own rate
// for the same answer.
func (r *runner) relayOne(ctx context.Context, a *api) error {
	one, err := r.relay(ctx, a, 1, r.plan.RelayDeltasOne, nil)
	if err != nil {
		return err
	}
	t0 := time.Now()
	n, err := r.model.direct(ctx, r.hc, relayBody(r.plan.RelayDeltasOne))
	if err != nil {
		return err
	}
	one.ModelDeltasPerSec = round3(float64(n) / time.Since(t0).Seconds())
	r.res.Relay = append(r.res.Relay, one)
	r.logf("relay to 1 client: %.0f deltas/s (model alone: %.0f deltas/s), %d/%d delivered",
		one.DeltasPerSec, one.ModelDeltasPerSec, one.DeliveredMin, one.DeltasSent)
	return nil
}

// memoryWS measures WebSocket clients attached to conversation conv: RSS
// per client (before the relay burst, whose garbage would hide them). They
// are gone when it returns, before the relay, which they would slow down.
func (r *runner) memoryWS(ctx context.Context, a *api, conv string, m *Memory, settle func() (int64, error)) error {
	before := m.RSSWithClientsKB
	wsURL := "ws" + strings.TrimPrefix(a.base, "http") + "/agentik/ws"
	conns := make([]*wsclient.Conn, 0, r.plan.RelayClients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range r.plan.RelayClients {
		c, err := wsclient.Dial(ctx, wsURL, &wsclient.DialOptions{ConversationID: conv})
		if err != nil {
			return fmt.Errorf("websocket client: %w", err)
		}
		conns = append(conns, c)
	}
	after, err := settle()
	if err != nil {
		return err
	}
	m.WSClients = len(conns)
	m.RSSWithWSClientsKB = after
	m.PerWSClientKB = round3(float64(after-before) / float64(len(conns)))
	r.logf("%d WebSocket clients: RSS %d KiB, %.2f KiB each", len(conns), after, m.PerWSClientKB)
	return nil
}

// subscribers: what idle SSE subscribers cost once traffic has been through
// their buffers (issue 24: 1,000 of them ≤ 40 MiB above the idle server).
// A fresh server; RSS idle, with the clients connected, and after an answer
// of SubscriberDeltas deltas reached every client and SubscriberSettle
// passed.
func (r *runner) subscribers(ctx context.Context) (err error) {
	t, a, _, err := r.startFresh(ctx)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	rss := func(d time.Duration) (int64, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(d):
		}
		return t.RSSKB()
	}
	s := &Subscribers{Clients: r.plan.Subscribers, Deltas: r.plan.SubscriberDeltas, SettleSeconds: r.plan.SubscriberSettle.Seconds()}
	r.res.Subscribers = s
	if s.IdleRSSKB, err = rss(r.plan.Settle); err != nil {
		return err
	}
	idleAnon, idleFile, err := anonFile(t)
	if err != nil {
		return err
	}
	conv, err := a.createConversation(ctx, "subscribers")
	if err != nil {
		return err
	}
	clients, err := openClients(ctx, a, conv, s.Clients)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if s.ConnectedRSSKB, err = rss(r.plan.Settle); err != nil {
		return err
	}
	rel, err := r.relay(ctx, a, s.Clients, s.Deltas, &relayConv{id: conv, clients: clients})
	if err != nil {
		return err
	}
	if rel.DeliveredMin != s.Deltas {
		return fmt.Errorf("a subscriber got %d of %d deltas", rel.DeliveredMin, s.Deltas)
	}
	if s.AfterRSSKB, err = rss(r.plan.SubscriberSettle); err != nil {
		return err
	}
	s.AboveIdleMiB = round3(float64(s.AfterRSSKB-s.IdleRSSKB) / 1024)
	anon, file, err := anonFile(t)
	if err != nil {
		return err
	}
	s.AnonAboveIdleMiB, s.FileAboveIdleMiB = round3(float64(anon-idleAnon)/1024), round3(float64(file-idleFile)/1024)
	r.logf("%d idle SSE subscribers: RSS idle %d KiB, connected %d KiB, after a %d-delta answer and %s %d KiB: %.1f MiB above idle (%.1f MiB anonymous, %.1f MiB of the binary's file)",
		s.Clients, s.IdleRSSKB, s.ConnectedRSSKB, s.Deltas, r.plan.SubscriberSettle, s.AfterRSSKB, s.AboveIdleMiB, s.AnonAboveIdleMiB, s.FileAboveIdleMiB)
	return nil
}

// anonFile reads a target's anonymous and file-backed resident memory.
func anonFile(t target) (anon, file int64, err error) {
	if anon, err = t.StatusKB("RssAnon"); err != nil {
		return 0, 0, err
	}
	file, err = t.StatusKB("RssFile")
	return anon, file, err
}

func openClients(ctx context.Context, a *api, conv string, n int) ([]*eventStream, error) {
	cs := make([]*eventStream, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cs[i], errs[i] = a.events(ctx, conv, -1)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return cs, nil
}

type relayConv struct {
	id      string
	clients []*eventStream
}

// relay sends relay:deltas and has every client read the answer to its end,
// noting when its first and last delta arrived.
func (r *runner) relay(ctx context.Context, a *api, n, deltas int, rc *relayConv) (Relay, error) {
	if rc == nil {
		conv, err := a.createConversation(ctx, "relay")
		if err != nil {
			return Relay{}, err
		}
		cs, err := openClients(ctx, a, conv, n)
		if err != nil {
			return Relay{}, err
		}
		defer func() {
			for _, c := range cs {
				c.Close()
			}
		}()
		rc = &relayConv{id: conv, clients: cs}
	}
	type got struct {
		first, last time.Time
		count       int
		err         error
	}
	gots := make([]got, len(rc.clients))
	var wg sync.WaitGroup
	for i, c := range rc.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &gots[i]
			for {
				ev, err := c.Next()
				if err != nil {
					g.err = err
					return
				}
				switch ev.Type {
				case "append_text":
					g.last = time.Now()
					if g.count == 0 {
						g.first = g.last
					}
					g.count++
				case "end":
					return
				}
			}
		}()
	}
	if err := a.send(ctx, rc.id, relayPrefix+strconv.Itoa(deltas)); err != nil {
		for _, c := range rc.clients {
			c.Close()
		}
		wg.Wait()
		return Relay{}, err
	}
	wg.Wait()
	res := Relay{Clients: len(rc.clients), DeltasSent: deltas, DeliveredMin: deltas}
	var first, last time.Time
	var rates []float64
	for _, g := range gots {
		if g.err != nil {
			return Relay{}, fmt.Errorf("relay client: %w", g.err)
		}
		res.DeliveredTotal += int64(g.count)
		res.DeliveredMin = min(res.DeliveredMin, g.count)
		if g.count == 0 {
			continue
		}
		if first.IsZero() || g.first.Before(first) {
			first = g.first
		}
		if g.last.After(last) {
			last = g.last
		}
		if d := g.last.Sub(g.first); d > 0 {
			rates = append(rates, float64(g.count-1)/d.Seconds())
		}
	}
	if d := last.Sub(first); d > 0 {
		res.Seconds = round3(d.Seconds())
		res.DeltasPerSec = round3(float64(res.DeliveredTotal) / d.Seconds())
	}
	if len(rates) > 0 {
		slices.Sort(rates)
		res.PerClientDeltasPerSec = round3(rates[len(rates)/2])
	}
	return res, nil
}

// length (4): turn latency in a conversation that already holds n journal
// messages, seeded straight into the database before the server starts.
func (r *runner) length(ctx context.Context) error {
	for _, n := range r.plan.Lengths {
		p, err := r.lengthPoint(ctx, n)
		if err != nil {
			return fmt.Errorf("%d messages: %w", n, err)
		}
		r.res.Length = append(r.res.Length, p)
		r.logf("%6d messages: first turn %.3f ms, p50 %.3f ms, p99 %.3f ms (seeded in %.1fs, start-up %.1f ms)",
			n, p.FirstTurnMs, p.Latency.P50Ms, p.Latency.P99Ms, p.SeedSeconds, p.StartupMs)
	}
	return nil
}

func (r *runner) lengthPoint(ctx context.Context, n int) (p LengthPoint, err error) {
	t0 := time.Now()
	db, conv, err := r.seed(ctx, n)
	if err != nil {
		return p, err
	}
	p = LengthPoint{Messages: n, SeedSeconds: round3(time.Since(t0).Seconds())}
	t, a, d, err := r.start(ctx, db)
	if err != nil {
		return p, err
	}
	defer stop(t, &err)
	p.StartupMs = round3(ms(d))
	es, err := a.events(ctx, conv, -1)
	if err != nil {
		return p, err
	}
	defer es.Close()
	var lat []time.Duration
	for i := range r.plan.LengthTurns + 1 {
		t0 := time.Now()
		if err := a.send(ctx, conv, promptPlain); err != nil {
			return p, err
		}
		if _, err := es.waitEnd(); err != nil {
			return p, err
		}
		if i == 0 {
			p.FirstTurnMs = round3(ms(time.Since(t0)))
			continue
		}
		lat = append(lat, time.Since(t0))
	}
	p.Latency = dist(lat).rounded()
	return p, nil
}

// replay (5): a client reconnecting with after=0 to a conversation holding
// ReplayEvents durable events, timed until the last one arrived.
func (r *runner) replay(ctx context.Context) (err error) {
	db, conv, err := r.seed(ctx, r.plan.ReplayEvents)
	if err != nil {
		return err
	}
	t, a, _, err := r.start(ctx, db)
	if err != nil {
		return err
	}
	defer stop(t, &err)
	var ds []time.Duration
	cpu0, err := t.CPU()
	if err != nil {
		return err
	}
	for range r.plan.ReplayRuns {
		t0 := time.Now()
		es, err := a.events(ctx, conv, 0)
		if err != nil {
			return err
		}
		got := 0
		for got < r.plan.ReplayEvents {
			ev, err := es.Next()
			if err != nil {
				es.Close()
				return fmt.Errorf("after %d events: %w", got, err)
			}
			if ev.HasID { // durable
				got++
			}
		}
		ds = append(ds, time.Since(t0))
		es.Close()
	}
	cpu1, err := t.CPU()
	if err != nil {
		return err
	}
	r.res.Replay = &Replay{Events: r.plan.ReplayEvents, Dist: dist(ds).rounded(), ServerCPUMs: round3(ms(cpu1-cpu0) / float64(len(ds)))}
	r.logf("replay of %d events: p50 %.1f ms (min %.1f, max %.1f) over %d runs, server CPU %.1f ms per replay",
		r.plan.ReplayEvents, r.res.Replay.Dist.P50Ms, r.res.Replay.Dist.MinMs, r.res.Replay.Dist.MaxMs, len(ds), r.res.Replay.ServerCPUMs)
	return nil
}
