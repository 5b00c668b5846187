package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// TestBenchCluster runs the cluster phase small (2 processes, without a
// quota, messages posted to the other process) against the binary on
// PostgreSQL: every turn's end arrives, the per-turn figures come from the
// run's own database and the processes' counters, and the database is
// dropped afterwards.
func TestBenchCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	dsn := os.Getenv("AGENTIK_TEST_DATABASE_URL")
	if dsn == "" {
		testenv.Missing(t, "AGENTIK_TEST_DATABASE_URL is not set: the bench's cluster phase is not tested")
	}
	bin := testBinary(t)
	m := newModel(0, 0)
	defer m.Close()
	var progress bytes.Buffer
	res := &Results{Mode: "test", Server: "binary", Store: "postgres"}
	pg := &pgSchemas{dsn: dsn}
	r := &runner{plan: tinyPlan(), dir: t.TempDir(), hc: newHTTPClient(), out: &progress, t0: time.Now(), res: res, model: m, pg: pg,
		server:      serverConfig{binary: bin, model: m.URL()},
		clusterPlan: clusterPlan{Procs: []int{2}, Convs: []int{4}, Turns: 2, Modes: []string{"spread"}, MaxWait: 30 * time.Second, Deltas: 3}}
	dbs, err := runAndDrop(t, r, pg, "cluster")
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	c := res.Cluster
	if c == nil || c.Skipped != "" || len(c.Runs) != 1 {
		t.Fatalf("cluster %+v\n%s", c, progress.String())
	}
	run := c.Runs[0]
	if run.Processes != 2 || run.Turns != 8 || run.LostEnds != 0 || run.Latency.N != 8 || run.TurnsPerSec <= 0 ||
		run.RoundTrips <= 0 || run.Statements < run.RoundTrips || run.Transactions <= 0 || run.AgentikCPUMs <= 0 || run.PostgresCPUMs <= 0 || run.Backends == 0 ||
		run.MachineBusy < 0 || run.MachineBusy > 1 {
		t.Fatalf("run %+v", run)
	}
	if want := float64(runtime.NumCPU()) * 1000 / (run.AgentikCPUMs + run.PostgresCPUMs + run.LoadCPUMs); math.Abs(run.MachineCeiling-want) > 0.01 {
		t.Errorf("machine ceiling %v, want %v", run.MachineCeiling, want)
	}
	if !strings.Contains(markdown(res), "| 2 | 4 | to another process | none |") {
		t.Errorf("markdown:\n%s", markdown(res))
	}
	checkDropped(t, dsn, dbs)
}

// runAndDrop runs one phase that makes databases of its own, drops them,
// and returns their names and the phase's error.
func runAndDrop(t *testing.T, r *runner, pg *pgSchemas, phase string) ([]string, error) {
	t.Helper()
	err := r.run(t.Context(), []string{phase})
	dbs := append([]string(nil), pg.databases...)
	if derr := pg.dropAll(); derr != nil {
		t.Error(derr)
	}
	return dbs, err
}

// checkDropped checks that none of the databases is left.
func checkDropped(t *testing.T, dsn string, dbs []string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, d := range dbs {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", d).Scan(&n); err != nil || n != 0 {
			t.Errorf("database %s left behind: %d %v", d, n, err)
		}
	}
}

// TestClusterSkips: the phase says why it cannot run rather than failing.
func TestClusterSkips(t *testing.T) {
	if why := clusterSkip(nil, 0); !strings.Contains(why, "--pg") {
		t.Errorf("without --pg: %q", why)
	}
	if why := clusterSkip(&pgSchemas{dsn: "postgres://x"}, 0); why != "" {
		t.Errorf("no quota, with --pg: %q", why)
	}
	why := clusterSkip(&pgSchemas{dsn: "postgres://x"}, 0.25)
	switch {
	case os.Geteuid() != 0:
		if !strings.Contains(why, "root") {
			t.Errorf("not root: %q", why)
		}
	case exists(cgroupCPU + "/cpu.cfs_quota_us"):
		if why != "" {
			t.Errorf("root with a cpu controller: %q", why)
		}
	default:
		if !strings.Contains(why, "cgroup") {
			t.Errorf("no controller: %q", why)
		}
	}
}

func TestClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--phases", "cluster", "--cluster-procs", "1,3", "--cluster-convs", "120,400", "--cluster-modes", "affinity"}, true},
		{[]string{"--cluster-procs", "0"}, false},
		{[]string{"--cluster-procs", "1,x"}, false},
		{[]string{"--cluster-modes", "sticky"}, false},
		{[]string{"--cluster-quota", "-1"}, false},
		{[]string{"--cluster-max-wait", "0s"}, false},
		{[]string{"--cluster-turns", "0"}, false},
	} {
		_, err := parseFlags(tc.args, &bytes.Buffer{})
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v", tc.args, err)
		}
	}
	f, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || strings.Contains(f.phases, "cluster") {
		t.Errorf("default phases %q: %v", f.phases, err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestMachineCeiling: the turns/s at which a run's CPU per turn fills the
// machine's CPUs.
func TestMachineCeiling(t *testing.T) {
	if c := machineCeiling(2, ClusterRun{}); c != 0 {
		t.Errorf("machine ceiling without CPU figures: %v", c)
	}
	// 2 ms of CPU a turn in all, on 2 CPUs: 1,000 turns/s fill them.
	if c := machineCeiling(2, ClusterRun{AgentikCPUMs: 1, PostgresCPUMs: 0.5, LoadCPUMs: 0.5}); c != 1000 {
		t.Errorf("machine ceiling of 2 ms a turn on 2 CPUs: %v", c)
	}
	if c := machineCeiling(4, ClusterRun{AgentikCPUMs: 2, PostgresCPUMs: 1.5, LoadCPUMs: 0.5}); c != 1000 {
		t.Errorf("machine ceiling of 4 ms a turn on 4 CPUs: %v", c)
	}
}

// TestPGFloor runs the pgfloor phase briefly on real PostgreSQL, in each
// shape: it counts turns whose rows it finds committed, reports its
// backends' CPU per turn, and leaves no database behind; without --pg it
// says why it skips.
func TestPGFloor(t *testing.T) {
	dsn := os.Getenv("AGENTIK_TEST_DATABASE_URL")
	if dsn == "" {
		testenv.Missing(t, "AGENTIK_TEST_DATABASE_URL is not set: the bench's pgfloor phase is not tested")
	}
	heading := map[string]string{"minimal": "Two one-row commits per turn", "journal": "A turn's journal on agentik's schema", "agentik": "Everything a plain turn writes on agentik's schema, each commit one statement", "split": "one statement a row, each commit one batch"}
	for _, shape := range floorShapes {
		t.Run(shape, func(t *testing.T) {
			var progress bytes.Buffer
			res := &Results{Mode: "test"}
			pg := &pgSchemas{dsn: dsn}
			r := &runner{out: &progress, t0: time.Now(), res: res, pg: pg,
				floorPlan: floorPlan{Clients: 2, Convs: 4, Duration: 500 * time.Millisecond, Payload: 50, Shape: shape}}
			dbs, err := runAndDrop(t, r, pg, "pgfloor")
			if err != nil {
				t.Fatalf("run: %v\n%s", err, progress.String())
			}
			f := res.PGFloor
			if f == nil || f.Skipped != "" || f.Shape != shape || f.Turns <= 0 || f.TurnsPerSec <= 0 || f.PostgresCPUMs <= 0 || f.Clients != 2 || f.Conversations != 4 {
				t.Fatalf("floor %+v\n%s", f, progress.String())
			}
			if md := markdown(res); !strings.Contains(md, "### PostgreSQL floor of a plain turn") || !strings.Contains(md, heading[shape]) || !strings.Contains(md, "(2 clients, 4 conversations, 50-byte rows)") {
				t.Errorf("markdown:\n%s", md)
			}
			if len(dbs) != 1 {
				t.Fatalf("databases %v", dbs)
			}
			checkDropped(t, dsn, dbs)
		})
	}

	var progress bytes.Buffer
	skip := &Results{}
	r := &runner{out: &progress, t0: time.Now(), res: skip, floorPlan: floorPlan{Clients: 2, Convs: 4, Duration: 500 * time.Millisecond, Shape: "minimal"}}
	if err := r.run(t.Context(), []string{"pgfloor"}); err != nil || skip.PGFloor == nil || !strings.Contains(skip.PGFloor.Skipped, "--pg") {
		t.Errorf("without --pg: %v %+v", err, skip.PGFloor)
	}
}

// TestClusterLoadFailures: every failure counts; the first few keep why.
func TestClusterLoadFailures(t *testing.T) {
	l := &clusterLoad{}
	for i := range maxFailures + 2 {
		l.fail(time.Duration(i)*time.Second, "conversation "+strconv.Itoa(i))
	}
	why := l.failures()
	if l.lost() != maxFailures+2 || len(why) != maxFailures || why[0] != "conversation 0" || l.longest() != (maxFailures+1)*time.Second {
		t.Errorf("lost %d, longest %v, why %q", l.lost(), l.longest(), why)
	}
}

// TestLogWarnings: lines at WARN and ERROR count, others do not; the
// first few are kept; restart forgets those before it.
func TestLogWarnings(t *testing.T) {
	w := &logWarnings{}
	w.add(`{"level":"WARN","msg":"start-up"}`)
	w.restart()
	w.add(`{"time":"t","level":"INFO","msg":"agentik listening","addr":"127.0.0.1:1"}`)
	w.add(`not JSON`)
	for i := range maxWarnings + 1 {
		level := "WARN"
		if i%2 == 1 {
			level = "ERROR"
		}
		w.add(`{"level":"` + level + `","msg":"m` + strconv.Itoa(i) + `"}`)
	}
	n, first := w.seen()
	if n != maxWarnings+1 || len(first) != maxWarnings || !strings.Contains(first[0], `"msg":"m0"`) || !strings.Contains(first[1], "ERROR") {
		t.Errorf("%d warnings, first %q", n, first)
	}
}

// TestFloorFlags: an unknown shape is refused with the shapes named; a
// result without a shape (written before shapes) renders as minimal.
func TestFloorFlags(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	check := floorFlags(fs)
	if err := fs.Parse([]string{"--pgfloor-shape", "merged"}); err != nil {
		t.Fatal(err)
	}
	if _, err := check(); err == nil || !strings.Contains(err.Error(), "minimal, journal, agentik, split") {
		t.Errorf("unknown shape: %v", err)
	}
	var md strings.Builder
	floorMarkdown(func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, &Floor{Clients: 8, Conversations: 120, PayloadBytes: 300})
	if !strings.Contains(md.String(), "Two one-row commits per turn (8 clients") {
		t.Errorf("markdown without a shape:\n%s", md.String())
	}
}
