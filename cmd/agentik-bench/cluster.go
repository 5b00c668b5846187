package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/jackc/pgx/v5"
)

// The cluster phase (issue 53, SPEC §21): N agentik processes on one
// PostgreSQL database, each confined to a CPU quota of its own (a cgroup v1
// `cpu` controller: processes that stand in for small machines of their
// own), driven with and without affinity. Each conversation is created and
// streamed on its home process; its messages go to the home process
// (affinity) or to the next one (a load balancer without affinity).
//
// What it reports per run: turns/s, turn latency (from POST to the stream's
// `end`), streams that missed an `end` or waited past --cluster-max-wait
// for it, CPU per turn of the agentik processes and of the PostgreSQL
// backends serving them (/proc/<pid>/schedstat, to the nanosecond), and
// round trips, statements and transactions per turn (the processes'
// agentik_db_round_trips_total and agentik_db_statements_total, and
// pg_stat_database of a database the phase creates for the run alone).

// cgroupCPU is where the cgroup v1 cpu controller is mounted.
const cgroupCPU = "/sys/fs/cgroup/cpu"

// cgroupPeriod is the CFS period given to each process's group: short, so
// that a process over its quota waits at most a few milliseconds.
const cgroupPeriod = 10 * time.Millisecond

// clusterPlan is what the phase measures.
type clusterPlan struct {
	Procs   []int         // process counts
	Convs   []int         // conversation counts
	Turns   int           // measured turns per conversation (after one warm-up turn)
	Modes   []string      // "spread" (no affinity) and/or "affinity"
	Quota   float64       // CPUs per process; 0: no cgroup
	MaxWait time.Duration // a stream waiting longer for an end fails the run
	Deltas  int           // the answer's deltas (words)
}

// ClusterRun is one configuration's figures.
type ClusterRun struct {
	Processes      int      `json:"processes"`
	Conversations  int      `json:"conversations"`
	Mode           string   `json:"mode"` // spread or affinity
	QuotaCPU       float64  `json:"quota_cpu"`
	Turns          int      `json:"turns"`
	Seconds        float64  `json:"seconds"`
	TurnsPerSec    float64  `json:"turns_per_sec"`
	Latency        Dist     `json:"latency"`
	LostEnds       int      `json:"lost_ends"`                      // streams whose end did not come within MaxWait, or came with another reason than completed, or broke (warm-up included)
	Failures       []string `json:"failures,omitempty"`             // the first few of those, why
	MaxEndWaitMs   float64  `json:"max_end_wait_ms"`                // the longest wait for an end, warm-up included
	Warnings       int      `json:"server_warnings"`                // log lines at WARN or ERROR, every process, from the first conversation created to the end of the measurement
	WarningLines   []string `json:"server_warning_lines,omitempty"` // the first few of each process
	AgentikCPUMs   float64  `json:"agentik_cpu_ms"`                 // per turn, every process
	PostgresCPUMs  float64  `json:"postgres_cpu_ms"`                // per turn, the run's backends
	RoundTrips     float64  `json:"round_trips"`                    // per turn
	Statements     float64  `json:"statements"`                     // per turn
	Transactions   float64  `json:"transactions"`                   // per turn (commits and rollbacks)
	Backends       int      `json:"backends"`                       // PostgreSQL backends of the run at its end
	OwnDatabase    bool     `json:"own_database"`                   // transactions are the run's alone
	PerProcessRate float64  `json:"turns_per_sec_per_process"`
	// The whole machine during the measured turns, from /proc/stat: the
	// share of all its CPUs busy (1: none idle), and the CPU per turn of
	// this process — the load generator and the scripted model, which
	// share the machine with the processes and PostgreSQL.
	MachineBusy float64 `json:"machine_busy"`
	LoadCPUMs   float64 `json:"load_cpu_ms"`
	// MachineCeiling is the turns/s at which this run's CPU per turn
	// (agentik, PostgreSQL's backends, the load generator) would keep
	// every CPU of the machine busy: no run with these costs goes faster
	// on this machine. It leaves out what else runs here (PostgreSQL's
	// own background processes, the kernel's threads), so the real limit
	// is lower. The costs per turn grow on a busy machine, so it bounds
	// this run: a ratio that needs more than it was out of the run's reach.
	MachineCeiling float64 `json:"machine_ceiling_turns_per_sec"`
}

// Cluster is the phase's outcome.
type Cluster struct {
	Runs    []ClusterRun `json:"runs,omitempty"`
	Skipped string       `json:"skipped,omitempty"`
}

// clusterSkip says why the phase cannot run here, or "".
func clusterSkip(pg *pgSchemas, quota float64) string {
	if pg == nil {
		return "needs PostgreSQL (--pg)"
	}
	if quota <= 0 {
		return ""
	}
	if os.Geteuid() != 0 {
		return "needs root to give each process a cgroup CPU quota (or --cluster-quota 0)"
	}
	if _, err := os.Stat(filepath.Join(cgroupCPU, "cpu.cfs_quota_us")); err != nil {
		return "no cgroup v1 cpu controller at " + cgroupCPU + " (or --cluster-quota 0)"
	}
	return ""
}

// cluster runs the phase.
func (r *runner) cluster(ctx context.Context) error {
	cp := r.clusterPlan
	res := &Cluster{}
	r.res.Cluster = res
	if why := clusterSkip(r.pg, cp.Quota); why != "" {
		res.Skipped = why
		r.logf("cluster: skipped: %s", why)
		return nil
	}
	var failed []string
	for _, convs := range cp.Convs {
		for _, mode := range cp.Modes {
			for _, n := range cp.Procs {
				run, err := r.clusterRun(ctx, n, convs, mode)
				if err != nil {
					return fmt.Errorf("%d processes, %d conversations, %s: %w", n, convs, mode, err)
				}
				res.Runs = append(res.Runs, run)
				r.logf("cluster %d procs %d convs %s: %.1f turns/s, p50 %.1f p99 %.1f ms, lost ends %d (longest wait %.0f ms), CPU/turn agentik %.2f postgres %.2f ms, per turn %.1f round trips %.1f statements %.2f transactions; machine %.0f %% busy, load generator %.2f ms/turn, machine ceiling %.0f turns/s",
					n, convs, mode, run.TurnsPerSec, run.Latency.P50Ms, run.Latency.P99Ms, run.LostEnds, run.MaxEndWaitMs,
					run.AgentikCPUMs, run.PostgresCPUMs, run.RoundTrips, run.Statements, run.Transactions, 100*run.MachineBusy, run.LoadCPUMs, run.MachineCeiling)
				for _, why := range run.Failures {
					r.logf("cluster: a stream failed: %s", why)
				}
				if run.Warnings > 0 {
					r.logf("cluster: the processes logged %d warnings; the first: %s", run.Warnings, strings.Join(run.WarningLines, "\n  "))
				}
				if run.LostEnds > 0 {
					failed = append(failed, fmt.Sprintf("%d processes %d conversations %s: %d streams failed (no end within %v, an end other than completed, a broken stream or a refused post)", n, convs, mode, run.LostEnds, cp.MaxWait))
				}
			}
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// clusterWarnings sums the warnings the processes logged and keeps the
// first few of each.
func clusterWarnings(procs []*clusterProc) (n int, first []string) {
	for _, p := range procs {
		k, lines := p.t.warns.seen()
		n += k
		first = append(first, lines...)
	}
	return n, first
}

// clusterProc is one agentik process of a run.
type clusterProc struct {
	t   *proc
	api *api
	cg  string // its cgroup directory, "" without a quota
}

// clusterRun measures one configuration on a database of its own.
func (r *runner) clusterRun(ctx context.Context, n, convs int, mode string) (run ClusterRun, err error) {
	cp := r.clusterPlan
	run = ClusterRun{Processes: n, Conversations: convs, Mode: mode, QuotaCPU: cp.Quota}
	db, err := r.pg.freshDatabase(ctx)
	if err != nil {
		return run, err
	}
	run.OwnDatabase = db.own
	procs, err := r.startCluster(ctx, n, db.dsn)
	defer func() {
		if e := stopCluster(procs); e != nil && err == nil {
			err = e
		}
	}()
	if err != nil {
		return run, err
	}
	for _, p := range procs {
		p.t.warns.restart() // start-up's, such as authentication being off
	}
	load, err := newClusterLoad(ctx, procs, convs, mode == "affinity")
	if err != nil {
		return run, err
	}
	defer load.close()
	// One warm-up turn per conversation (unmeasured: connections, caches
	// and the first turn after creation, where the lost end showed), then
	// the measured turns.
	load.turns(ctx, 1, cp.MaxWait, promptFor(cp.Deltas))
	settleStats()
	before, err := r.clusterSnapshot(ctx, db, procs)
	if err != nil {
		return run, err
	}
	t0, m0, self0 := time.Now(), readMachineCPU(), selfCPU()
	lat := load.turns(ctx, cp.Turns, cp.MaxWait, promptFor(cp.Deltas))
	elapsed, m1, self1 := time.Since(t0), readMachineCPU(), selfCPU()
	settleStats()
	after, err := r.clusterSnapshot(ctx, db, procs)
	if err != nil {
		return run, err
	}
	run.Turns = len(lat)
	run.Seconds = round3(elapsed.Seconds())
	run.Latency = dist(lat).rounded()
	run.LostEnds, run.MaxEndWaitMs = load.lost(), round3(ms(load.longest()))
	run.Failures = load.failures()
	run.Warnings, run.WarningLines = clusterWarnings(procs)
	if run.Turns > 0 {
		run.TurnsPerSec = round3(float64(run.Turns) / elapsed.Seconds())
		run.PerProcessRate = round3(run.TurnsPerSec / float64(n))
		after.perTurn(before, run.Turns, &run)
		run.MachineBusy = round3(m1.busySince(m0))
		run.LoadCPUMs = round3(ms(self1-self0) / float64(run.Turns))
		run.MachineCeiling = round3(machineCeiling(runtime.NumCPU(), run))
	}
	return run, nil
}

// machineCeiling is ClusterRun.MachineCeiling for a machine of cpus CPUs
// (0 when the run's CPU per turn is unknown).
func machineCeiling(cpus int, r ClusterRun) float64 {
	perTurn := r.AgentikCPUMs + r.PostgresCPUMs + r.LoadCPUMs
	if perTurn <= 0 {
		return 0
	}
	return float64(cpus) * 1000 / perTurn
}

// machineCPU is /proc/stat's first line: the jiffies of all CPUs, busy
// and in all (zero where it cannot be read).
type machineCPU struct{ busy, total uint64 }

func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// counted in user already).
	var m machineCPU
	for i, v := range f[1:9] {
		n, _ := strconv.ParseUint(v, 10, 64)
		m.total += n
		if i != 3 && i != 4 {
			m.busy += n
		}
	}
	return m
}

// busySince is the share of the machine's CPU time busy between before and
// m.
func (m machineCPU) busySince(before machineCPU) float64 {
	if m.total <= before.total {
		return 0
	}
	return float64(m.busy-before.busy) / float64(m.total-before.total)
}

// selfCPU is the CPU time this process has used (0 where unknown).
func selfCPU() time.Duration {
	d, _ := cpuTime(os.Getpid())
	return d
}

func promptFor(deltas int) string { return relayPrefix + strconv.Itoa(deltas) }

// settleStats waits for the backends to report their statistics: an idle
// backend flushes its pending counters (pg_stat_database) within a second.
func settleStats() { time.Sleep(1500 * time.Millisecond) }

// startCluster starts n processes on dsn, each in a cgroup of its own
// when the plan has a quota.
func (r *runner) startCluster(ctx context.Context, n int, dsn string) ([]*clusterProc, error) {
	cp := r.clusterPlan
	var procs []*clusterProc
	for i := range n {
		sc := r.server
		sc.pgDSN = dsn
		sc.env = append(sc.env, "AGENTIK_DB_POOL_SIZE=8")
		if sc.cpuProfile != "" {
			// One profile per process: <path>.<n>p.<i>, n processes, the i-th.
			sc.cpuProfile = fmt.Sprintf("%s.%dp.%d", sc.cpuProfile, n, i)
		}
		cg := ""
		if cp.Quota > 0 {
			var err error
			if cg, err = newCgroup(fmt.Sprintf("agentik-bench-%d-%d", os.Getpid(), i), cp.Quota); err != nil {
				return procs, err
			}
			sc.wrap = []string{"/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg}
			sc.env = append(sc.env, "GOMAXPROCS="+strconv.Itoa(max(1, int(cp.Quota+0.999))))
		}
		t, _, err := startTarget(ctx, sc)
		if err != nil {
			removeCgroup(cg)
			return procs, fmt.Errorf("process %d: %w", i, err)
		}
		p := t.(*proc)
		procs = append(procs, &clusterProc{t: p, api: &api{base: p.Base(), hc: r.hc}, cg: cg})
	}
	return procs, nil
}

// stopCluster stops the processes (gracefully) and removes their cgroups.
func stopCluster(procs []*clusterProc) error {
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.t.Stop())
		removeCgroup(p.cg)
	}
	return errors.Join(errs...)
}

// newCgroup creates a cpu cgroup capped at quota CPUs.
func newCgroup(name string, quota float64) (string, error) {
	dir := filepath.Join(cgroupCPU, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	period := cgroupPeriod.Microseconds()
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte(strconv.FormatInt(period, 10)), 0o644); err != nil {
		removeCgroup(dir)
		return "", fmt.Errorf("cgroup period: %w", err)
	}
	q := int64(quota * float64(period))
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(q, 10)), 0o644); err != nil {
		removeCgroup(dir)
		return "", fmt.Errorf("cgroup quota: %w", err)
	}
	return dir, nil
}

// removeCgroup removes a cgroup whose process has exited.
func removeCgroup(dir string) {
	if dir != "" {
		_ = os.Remove(dir)
	}
}

// clusterLoad is the run's conversations, each streamed on its home
// process and posted to its post process.
type clusterLoad struct {
	convs []*clusterConv

	mu     sync.Mutex
	lostN  int
	waitMx time.Duration
	why    []string // the first few failures, each with its conversation
}

// maxFailures is how many failures a run keeps the reasons of.
const maxFailures = 5

type clusterConv struct {
	id     string
	stream *eventStream
	post   *api
	dead   bool // its stream missed an end: no more turns
}

func newClusterLoad(ctx context.Context, procs []*clusterProc, n int, affinity bool) (*clusterLoad, error) {
	l := &clusterLoad{}
	for i := range n {
		home := procs[i%len(procs)]
		post := home
		if !affinity {
			post = procs[(i+1)%len(procs)]
		}
		id, err := home.api.createConversation(ctx, "cluster "+strconv.Itoa(i))
		if err != nil {
			l.close()
			return nil, err
		}
		s, err := home.api.events(ctx, id, -1)
		if err != nil {
			l.close()
			return nil, err
		}
		l.convs = append(l.convs, &clusterConv{id: id, stream: s, post: post.api})
	}
	return l, nil
}

func (l *clusterLoad) close() {
	for _, c := range l.convs {
		c.stream.Close()
	}
}

func (l *clusterLoad) lost() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostN
}

func (l *clusterLoad) longest() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitMx
}

// turns runs k turns in every conversation at once and returns the
// latencies of those that ended.
func (l *clusterLoad) turns(ctx context.Context, k int, maxWait time.Duration, prompt string) []time.Duration {
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	for _, c := range l.convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := l.conversationTurns(ctx, c, k, maxWait, prompt)
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

func (l *clusterLoad) conversationTurns(ctx context.Context, c *clusterConv, k int, maxWait time.Duration, prompt string) []time.Duration {
	var lat []time.Duration
	for range k {
		if c.dead || ctx.Err() != nil {
			return lat
		}
		t0 := time.Now()
		if err := c.post.send(ctx, c.id, prompt); err != nil {
			c.dead = true
			l.fail(0, c.id+": post: "+err.Error())
			return lat
		}
		// A stream whose end does not come within maxWait is closed: the
		// turn counts as lost and the conversation stops.
		timer := time.AfterFunc(maxWait, c.stream.Close)
		_, err := c.stream.waitEnd()
		stopped := timer.Stop()
		d := time.Since(t0)
		if err != nil || !stopped {
			c.dead = true
			why := fmt.Sprintf("%s: after %v: %v", c.id, d.Round(time.Millisecond), err)
			if !stopped {
				why = fmt.Sprintf("%s: no end within %v", c.id, maxWait)
			}
			l.fail(d, why)
			return lat
		}
		l.waited(d)
		lat = append(lat, d)
	}
	return lat
}

func (l *clusterLoad) fail(d time.Duration, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lostN++
	l.waitMx = max(l.waitMx, d)
	if len(l.why) < maxFailures {
		l.why = append(l.why, why)
	}
}

func (l *clusterLoad) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.why)
}

func (l *clusterLoad) waited(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitMx = max(l.waitMx, d)
}

// clusterDB is the database of one run.
type clusterDB struct {
	dsn  string
	name string // its name in pg_stat_database
	own  bool   // created for the run (else a schema in the --pg database)
}

// freshDatabase creates a database for one run, so that pg_stat_database
// counts the run's transactions alone; where that is not allowed, a fresh
// schema in the --pg database (its figures then include whatever else
// uses that database).
func (p *pgSchemas) freshDatabase(ctx context.Context) (clusterDB, error) {
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return clusterDB{}, fmt.Errorf("connect to --pg database: %w", err)
	}
	defer conn.Close(ctx)
	name := "agentik_bench_" + strings.ReplaceAll(agentik.NewID(), "-", "")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err == nil {
		p.databases = append(p.databases, name)
		dsn, err := withDatabase(p.dsn, name)
		return clusterDB{dsn: dsn, name: name, own: true}, err
	}
	dsn, err := p.fresh(ctx)
	if err != nil {
		return clusterDB{}, err
	}
	var cur string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&cur); err != nil {
		return clusterDB{}, err
	}
	return clusterDB{dsn: dsn, name: cur}, nil
}

// withDatabase replaces the database of a postgres:// URL.
func withDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("--pg: the cluster phase needs a postgres:// URL")
	}
	u.Path = "/" + name
	return u.String(), nil
}

// clusterStats is what a run reads before and after its measured turns.
type clusterStats struct {
	agentik    time.Duration
	backends   map[int]time.Duration // by pid
	xacts      int64
	roundTrips int64
	statements int64
}

func (r *runner) clusterSnapshot(ctx context.Context, db clusterDB, procs []*clusterProc) (clusterStats, error) {
	st := clusterStats{backends: map[int]time.Duration{}}
	for _, p := range procs {
		// The whole process, every thread (schedstat would be the main
		// thread's alone), in clock ticks: runs last seconds.
		d, err := p.t.CPU()
		if err != nil {
			return st, err
		}
		st.agentik += d
		rt, sm, err := dbCounters(ctx, p.api)
		if err != nil {
			return st, err
		}
		st.roundTrips += rt
		st.statements += sm
	}
	conn, err := pgx.Connect(ctx, r.pg.dsn)
	if err != nil {
		return st, err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", db.name).Scan(&st.xacts); err != nil {
		return st, fmt.Errorf("pg_stat_database: %w", err)
	}
	// The run's backends: those of its database, or, sharing one, those
	// named after the run's processes (pool and Bus: "agentik"; lease
	// sessions: "agentik <host>:<pid>").
	pids, err := runBackends(ctx, conn, db, procs)
	if err != nil {
		return st, err
	}
	for _, pid := range pids {
		if d, err := schedTime(pid); err == nil {
			st.backends[pid] = d
		}
	}
	return st, nil
}

func runBackends(ctx context.Context, conn *pgx.Conn, db clusterDB, procs []*clusterProc) ([]int, error) {
	q := "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()"
	args := []any{db.name}
	if !db.own {
		host, _ := os.Hostname()
		var names []string
		for _, p := range procs {
			names = append(names, "agentik "+host+":"+strconv.Itoa(p.t.cmd.Process.Pid))
		}
		q += " AND (application_name = 'agentik' OR application_name = ANY($2))"
		args = append(args, names)
	}
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// perTurn fills run's per-turn figures from the difference to before. A
// backend started during the run counts whole.
func (s clusterStats) perTurn(before clusterStats, turns int, run *ClusterRun) {
	per := func(d time.Duration) float64 { return round3(ms(d) / float64(turns)) }
	run.AgentikCPUMs = per(s.agentik - before.agentik)
	var pg time.Duration
	for pid, d := range s.backends {
		pg += d - before.backends[pid]
	}
	run.PostgresCPUMs = per(pg)
	run.Backends = len(s.backends)
	run.Transactions = round3(float64(s.xacts-before.xacts) / float64(turns))
	run.RoundTrips = round3(float64(s.roundTrips-before.roundTrips) / float64(turns))
	run.Statements = round3(float64(s.statements-before.statements) / float64(turns))
}

// schedTime is the CPU time a single-threaded process (a PostgreSQL
// backend) has run, from /proc/<pid>/schedstat in nanoseconds.
func schedTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "schedstat"))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("empty schedstat")
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err
}

// dbCounters reads a process's agentik_db_round_trips_total and
// agentik_db_statements_total from its GET /metrics.
func dbCounters(ctx context.Context, a *api) (roundTrips, statements int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	found := 0
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, perr := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch {
		case perr != nil:
		case name == "agentik_db_round_trips_total":
			roundTrips, found = int64(f), found+1
		case name == "agentik_db_statements_total":
			statements, found = int64(f), found+1
		}
	}
	if found < 2 {
		return 0, 0, errors.New("GET /metrics has no agentik_db_round_trips_total (a build before issue 53?)")
	}
	return roundTrips, statements, sc.Err()
}

// clusterFlags declares the cluster phase's flags on fs and returns what
// reads them once parsed.
func clusterFlags(fs *flag.FlagSet) func() (clusterPlan, error) {
	procs := fs.String("cluster-procs", "1,2,3", "cluster phase: process counts")
	convs := fs.String("cluster-convs", "120", "cluster phase: conversation counts")
	turns := fs.Int("cluster-turns", 10, "cluster phase: measured turns per conversation (after one warm-up turn)")
	modes := fs.String("cluster-modes", "spread,affinity", "cluster phase: spread (each message to another process than the streaming one) and/or affinity")
	quota := fs.Float64("cluster-quota", 0.25, "cluster phase: CPUs per process, each in a cgroup of its own (root, cgroup v1 cpu controller); 0: no cgroup")
	maxWait := fs.Duration("cluster-max-wait", 30*time.Second, "cluster phase: a stream waiting longer for a turn's end fails the run")
	deltas := fs.Int("cluster-deltas", 5, "cluster phase: words of the scripted answer")
	return func() (clusterPlan, error) {
		p := clusterPlan{Turns: *turns, Quota: *quota, MaxWait: *maxWait, Deltas: *deltas}
		var err error
		if p.Procs, err = counts(*procs, 1, 16); err != nil {
			return p, fmt.Errorf("--cluster-procs: %w", err)
		}
		if p.Convs, err = counts(*convs, 1, 10_000); err != nil {
			return p, fmt.Errorf("--cluster-convs: %w", err)
		}
		for _, m := range strings.Split(*modes, ",") {
			if m != "spread" && m != "affinity" {
				return p, fmt.Errorf("--cluster-modes: unknown mode %q (spread, affinity)", m)
			}
			p.Modes = append(p.Modes, m)
		}
		switch {
		case p.Turns < 1 || p.Turns > 10_000:
			return p, errors.New("--cluster-turns: 1…10000")
		case p.Quota < 0 || p.Quota > 64:
			return p, errors.New("--cluster-quota: 0…64 CPUs")
		case p.MaxWait <= 0:
			return p, errors.New("--cluster-max-wait must be positive")
		case p.Deltas < 1 || p.Deltas > 1000:
			return p, errors.New("--cluster-deltas: 1…1000")
		}
		return p, nil
	}
}

// counts parses a comma-separated list of integers in [lo, hi].
func counts(s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("bad count %q (%d…%d)", f, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}

// clusterMarkdown writes the phase's table.
func clusterMarkdown(p func(string, ...any), c *Cluster) {
	p("### Cluster on PostgreSQL\n\n")
	if c.Skipped != "" {
		p("Skipped: %s.\n\n", c.Skipped)
		return
	}
	p("| processes | conversations | messages posted | CPU quota each | turns/s | per process | p50 | p99 | lost ends | longest wait for end | agentik CPU/turn | PostgreSQL CPU/turn | round trips/turn | statements/turn | transactions/turn | machine busy | load generator CPU/turn | machine ceiling |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range c.Runs {
		posted := "to another process"
		if r.Mode == "affinity" {
			posted = "to the streaming process"
		}
		quota := "none"
		if r.QuotaCPU > 0 {
			quota = strconv.FormatFloat(r.QuotaCPU, 'g', -1, 64) + " CPU"
		}
		p("| %d | %d | %s | %s | **%.0f** | %.0f | %.1f ms | %.1f ms | %d | %.0f ms | %.2f ms | %.2f ms | %.1f | %.1f | %.2f | %.0f %% | %.2f ms | %.0f turns/s |\n",
			r.Processes, r.Conversations, posted, quota, r.TurnsPerSec, r.PerProcessRate, r.Latency.P50Ms, r.Latency.P99Ms,
			r.LostEnds, r.MaxEndWaitMs, r.AgentikCPUMs, r.PostgresCPUMs, r.RoundTrips, r.Statements, r.Transactions, 100*r.MachineBusy, r.LoadCPUMs, r.MachineCeiling)
	}
	p("\n")
}
