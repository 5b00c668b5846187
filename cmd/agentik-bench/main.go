// Command agentik-bench measures what the Agentik runtime costs on top of
// the model: it starts a scripted OpenAI-compatible model (llmtest) on
// loopback, runs the real agentik server binary against it as a child process
// (SQLite in a temporary directory, or PostgreSQL with --pg), drives it over
// HTTP+SSE like a client would, and reports added latency per turn,
// throughput under concurrency, token relay, latency against conversation
// length, replay time, memory, start-up time and binary size, and what
// hostile callers make it do (descriptors, memory, time).
//
// Its guarantee is that every figure comes from the real server over real
// sockets; only the model is scripted, and the same model requests are also
// timed directly so that the runtime's share can be told apart.
//
//	go run ./cmd/agentik-bench --json bench.json --md bench.md --svg docs/
//	go run ./cmd/agentik-bench --quick
//	go run ./cmd/agentik-bench --inprocess --phases concurrency --cpuprofile cpu.out
//	go run ./cmd/agentik-bench --phases hostile --binary /tmp/agentik-old
//
// See docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type flags struct {
	binary        string
	inProcess     bool
	pg            string
	quick         bool
	jsonOut       string
	svgDir        string
	mdOut         string
	from          string
	phases        string
	cpuProfile    string
	serverProfile string
	levels        []int
	ttft          time.Duration
	chunkDelay    time.Duration
	settle        time.Duration
	cluster       clusterPlan
	floor         floorPlan
}

func parseFlags(args []string, stderr io.Writer) (f flags, err error) {
	fs := flag.NewFlagSet("agentik-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.binary, "binary", "", "agentik binary to run (default: build ./cmd/agentik into a temporary directory)")
	fs.BoolVar(&f.inProcess, "inprocess", false, "run the server stack inside the bench instead of the binary (for --cpuprofile; memory figures then include the bench)")
	fs.StringVar(&f.pg, "pg", "", "PostgreSQL DSN: run the server with AGENTIK_DATABASE_URL instead of SQLite (each server gets a fresh schema in that database, dropped at the end)")
	fs.BoolVar(&f.quick, "quick", false, "a short run of every phase (under a minute)")
	fs.StringVar(&f.jsonOut, "json", "", "write the results as JSON to this file")
	fs.StringVar(&f.svgDir, "svg", "", "write the plots (bench-concurrency.svg, bench-length.svg) into this directory")
	fs.StringVar(&f.mdOut, "md", "", "write the results as Markdown tables to this file")
	fs.StringVar(&f.from, "from", "", "measure nothing: read results from this JSON file and write --md/--svg from them")
	fs.StringVar(&f.phases, "phases", strings.Join(defaultPhases, ","), "comma-separated phases to run (hostile: slow bodies, an MCP array bomb, large metadata and approval arguments, an IRC flood, against the binary with its default settings; ~15 s, 30 s against a build that never answers or closes)")
	fs.StringVar(&f.serverProfile, "server-cpuprofile", "", "the server binary writes a CPU profile of itself to this file (AGENTIK_CPUPROFILE; run one phase)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the bench process (use with --inprocess to profile the server)")
	levels := fs.String("levels", "", "comma-separated concurrency levels (default 1,10,20,100,1000; quick 1,10,20,100)")
	fs.DurationVar(&f.ttft, "ttft", 0, "the model's time to first token")
	fs.DurationVar(&f.chunkDelay, "chunk-delay", 0, "the model's delay between chunks (1/tokens per second)")
	fs.DurationVar(&f.settle, "subscriber-settle", 0, "subscribers phase: how long after the answer to read RSS (default 130s; quick 5s)")
	cl := clusterFlags(fs)
	fl := floorFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.cluster, err = cl(); err != nil {
		return f, err
	}
	if f.floor, err = fl(); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, p := range strings.Split(f.phases, ",") {
		if !slices.Contains(allPhases, p) {
			return f, fmt.Errorf("unknown phase %q (phases: %s)", p, strings.Join(allPhases, ","))
		}
	}
	if *levels != "" {
		for _, l := range strings.Split(*levels, ",") {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 || n > 10_000 {
				return f, fmt.Errorf("bad concurrency level %q (1…10000)", l)
			}
			f.levels = append(f.levels, n)
		}
	}
	if f.inProcess && f.pg != "" {
		return f, errors.New("--inprocess runs SQLite only; --pg needs the server binary")
	}
	if f.inProcess && f.binary != "" {
		return f, errors.New("--inprocess and --binary exclude each other")
	}
	if f.ttft < 0 || f.chunkDelay < 0 {
		return f, errors.New("--ttft and --chunk-delay must not be negative")
	}
	return f, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "agentik-bench:", err)
		}
		return 2
	}
	if f.from != "" {
		return rewrite(f, stdout, stderr)
	}
	res, err := bench(ctx, f, stderr)
	if res != nil {
		if werr := writeOutputs(f, res, stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentik-bench:", err)
		return 1
	}
	return 0
}

// rewrite renders the outputs of an earlier run's JSON.
func rewrite(f flags, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(f.from)
	if err == nil {
		var res Results
		if err = json.Unmarshal(b, &res); err == nil {
			f.jsonOut = "" // never overwrite the input with itself
			err = writeOutputs(f, &res, io.Discard)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentik-bench:", err)
		return 1
	}
	return 0
}

// bench runs the selected phases and returns the results, partial ones too
// when a phase failed.
func bench(ctx context.Context, f flags, progress io.Writer) (*Results, error) {
	dir, err := os.MkdirTemp("", "agentik-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}

	p := fullPlan()
	mode := "full"
	if f.quick {
		p, mode = quickPlan(), "quick"
	}
	if f.levels != nil {
		p.Levels = f.levels
	}
	if f.settle > 0 {
		p.SubscriberSettle = f.settle
	}
	res := &Results{
		Started: time.Now().UTC().Format(time.RFC3339), Mode: mode, Server: "binary", Store: "sqlite",
		Machine: machine(), Command: "agentik-bench " + strings.Join(os.Args[1:], " "),
		Model: ModelCfg{TTFTMs: ms(f.ttft), ChunkDelayMs: ms(f.chunkDelay), AnswerDeltas: len(strings.Fields(answerText))},
	}
	if f.pg != "" {
		res.Store = "postgres"
	}
	r := &runner{plan: p, clusterPlan: f.cluster, floorPlan: f.floor, dir: dir, hc: newHTTPClient(), out: progress, t0: time.Now(), res: res}
	if f.pg != "" {
		r.pg = &pgSchemas{dsn: f.pg}
		defer func() {
			if err := r.pg.dropAll(); err != nil {
				r.logf("%v", err)
			}
		}()
	}
	switch {
	case f.inProcess:
		res.Server = "in-process"
	case f.binary != "":
		r.server.binary = f.binary
	case f.phases == "pgfloor":
		res.Server = "none" // no agentik process takes part
	default:
		r.logf("building ./cmd/agentik")
		if r.server.binary, err = buildBinary(ctx, dir); err != nil {
			return nil, err
		}
	}
	r.model = newModel(f.ttft, f.chunkDelay)
	defer r.model.Close()
	r.server.model = r.model.URL()
	r.server.cpuProfile = f.serverProfile
	r.logf("mode %s, server %s, store %s, %d CPUs, load average %.2f", mode, res.Server, res.Store, res.Machine.CPUs, res.Machine.LoadStart)

	err = r.run(ctx, strings.Split(f.phases, ","))
	res.Machine.LoadEnd, res.Machine.LoadEnd5m = loadAvg()
	res.Targets = evaluate(res)
	for _, t := range res.Targets {
		state := "MET"
		switch {
		case t.Missing:
			state = "not measured"
		case !t.Met:
			state = "MISSED"
		}
		r.logf("target (issue %s) %s %s: %v %s — %s", t.Issue, t.Name, t.Goal, t.Value, t.Unit, state)
	}
	r.logf("done; load average %.2f (1 min), %.2f (5 min)", res.Machine.LoadEnd, res.Machine.LoadEnd5m)
	return res, err
}

// buildBinary builds ./cmd/agentik of the module the bench runs in, the way
// a user would (pure Go, no special flags; the test adds -race).
func buildBinary(ctx context.Context, dir string, extra ...string) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module (run the bench inside the agentik module or pass --binary): %w", err)
	}
	out := filepath.Join(dir, "agentik")
	args := append([]string{"build"}, extra...)
	args = append(args, "-o", out, "./cmd/agentik")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = strings.TrimSpace(string(root))
	if !slices.Contains(extra, "-race") { // -race needs cgo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agentik: %w\n%s", err, b)
	}
	return out, nil
}

func writeOutputs(f flags, res *Results, stdout io.Writer) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if f.jsonOut != "" {
		if err := os.WriteFile(f.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if f.mdOut != "" {
		if err := os.WriteFile(f.mdOut, []byte(markdown(res)), 0o644); err != nil {
			return err
		}
	}
	if f.svgDir != "" {
		if len(res.Concurrency) > 0 {
			if err := os.WriteFile(filepath.Join(f.svgDir, "bench-concurrency.svg"), []byte(concurrencyChart(res.Concurrency).SVG()), 0o644); err != nil {
				return err
			}
		}
		if len(res.Length) > 0 {
			if err := os.WriteFile(filepath.Join(f.svgDir, "bench-length.svg"), []byte(lengthChart(res.Length).SVG()), 0o644); err != nil {
				return err
			}
		}
	}
	if f.jsonOut == "" {
		_, err = fmt.Fprintf(stdout, "%s\n", b)
	}
	return err
}

// machine describes this machine from /proc; what it cannot read stays empty.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				m.MemTotalKB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadStart, m.LoadStart5m = loadAvg()
	return m
}

func loadAvg() (one, five float64) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, 0
	}
	fs := strings.Fields(string(b))
	if len(fs) >= 2 {
		one, _ = strconv.ParseFloat(fs[0], 64)
		five, _ = strconv.ParseFloat(fs[1], 64)
	}
	return one, five
}
