package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/langgraph"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/openaiapi"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// target is a running Agentik server under test.
type target interface {
	Base() string // http://host:port
	// RSSKB is the resident set size of the server process in KiB.
	RSSKB() (int64, error)
	// StatusKB reads another field in kB of the process's /proc status
	// (RssAnon, RssFile).
	StatusKB(field string) (int64, error)
	// CPU is the CPU time (user + system) the server process has used.
	CPU() (time.Duration, error)
	Stop() error
}

// serverConfig says how to run a server: which database, which model.
type serverConfig struct {
	binary string // the agentik binary; "" runs the stack in this process
	dbPath string // SQLite file (ignored with pgDSN)
	pgDSN  string // AGENTIK_DATABASE_URL
	model  string // OpenAI-compatible base URL
	// cpuProfile is the server binary's AGENTIK_CPUPROFILE (each server of
	// the run writes it in turn: profile one phase at a time).
	cpuProfile string
	// defaultLimits keeps the per-principal limits at their defaults
	// instead of lifting them (the hostile phase measures a server as it
	// ships); env is added to the environment last.
	defaultLimits bool
	env           []string
	// wrap runs the binary through a command (its arguments, then the
	// binary and "serve" appended) that must exec it in the same process:
	// the cluster phase's cgroup wrapper.
	wrap []string
}

// startTarget starts a server and returns once GET /health answers 200,
// with the time that took from exec.
func startTarget(ctx context.Context, sc serverConfig) (target, time.Duration, error) {
	if sc.binary == "" {
		return startInProcess(ctx, sc)
	}
	return startProcess(ctx, sc)
}

// proc is the real agentik binary run as a child process.
type proc struct {
	cmd    *exec.Cmd
	base   string
	exited chan struct{}
	tail   *logTail
	warns  *logWarnings

	mu        sync.Mutex
	listeners map[string]string // "irc listening" → its address, from the log
}

// listening returns the address the server logged for msg ("irc
// listening"), waiting up to 5 s for the line.
func (p *proc) listening(msg string) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		a := p.listeners[msg]
		p.mu.Unlock()
		if a != "" {
			return a, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the server logged no %q\n%s", msg, p.tail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FDs is the number of file descriptors the server process has open.
func (p *proc) FDs() (int, error) { return fdCount(p.cmd.Process.Pid) }

func (p *proc) Base() string                     { return p.base }
func (p *proc) RSSKB() (int64, error)            { return statusKB(p.cmd.Process.Pid, "VmRSS") }
func (p *proc) StatusKB(f string) (int64, error) { return statusKB(p.cmd.Process.Pid, f) }
func (p *proc) CPU() (time.Duration, error)      { return cpuTime(p.cmd.Process.Pid) }

// Stop sends SIGTERM (graceful shutdown) and waits; a server that does not
// stop within 20 s is killed and that is an error.
func (p *proc) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("server did not stop within 20s after SIGTERM; killed\n%s", p.tail)
	}
	if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
		return fmt.Errorf("server exited with %v\n%s", p.cmd.ProcessState, p.tail)
	}
	return nil
}

func serverEnv(sc serverConfig) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTIK_") || strings.HasPrefix(kv, "OPENAI_") {
			continue // the bench decides the whole configuration
		}
		env = append(env, kv)
	}
	env = append(env,
		"AGENTIK_HOST=127.0.0.1",
		"AGENTIK_PORT=0",
		"AGENTIK_LOG_FORMAT=json",
		// The bench reads the listening line, logged at info. In JSON mode
		// info also holds the edge's one line per request (the access log
		// an operator's pipeline reads): its cost is measured with the rest.
		"AGENTIK_LOG_LEVEL=info",
		"AGENTIK_LLM_BACKEND=openai",
		"OPENAI_BASE_URL="+sc.model,
		"OPENAI_MODEL=llmtest",
		"AGENTIK_LLM_MAX_RETRIES=0",
		"AGENTIK_DRAIN_TIMEOUT=5s",
	)
	if !sc.defaultLimits {
		// The bench is one principal driving the server far past the
		// per-principal defaults: it measures the server, not its limits.
		env = append(env, "AGENTIK_MESSAGES_PER_MINUTE=0", "AGENTIK_CONVERSATIONS_PER_MINUTE=0", "AGENTIK_MAX_CONCURRENT_TURNS=0",
			"AGENTIK_WS_MAX_CONNECTIONS=0", "AGENTIK_TEMPORAL_MAX_BYTES=0", "AGENTIK_TEMPORAL_MAX_BYTES_TOTAL=0")
	}
	if sc.cpuProfile != "" {
		env = append(env, "AGENTIK_CPUPROFILE="+sc.cpuProfile)
	}
	if sc.pgDSN != "" {
		env = append(env, "AGENTIK_DATABASE_URL="+sc.pgDSN)
	} else {
		env = append(env, "AGENTIK_DB_PATH="+sc.dbPath)
	}
	return append(env, sc.env...)
}

func startProcess(ctx context.Context, sc serverConfig) (target, time.Duration, error) {
	cmd := exec.Command(sc.binary, "serve")
	if len(sc.wrap) > 0 {
		cmd = exec.Command(sc.wrap[0], append(sc.wrap[1:], sc.binary, "serve")...)
	}
	cmd.Env = serverEnv(sc)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, 0, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{}), tail: &logTail{}, warns: &logWarnings{}, listeners: map[string]string{}}
	addr := make(chan string, 1)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	// The log must be drained for the server's whole life, or it blocks on
	// a full pipe.
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.tail.add(line)
			p.warns.add(line)
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Addr == "" || !strings.HasSuffix(rec.Msg, " listening") {
				continue
			}
			p.mu.Lock()
			p.listeners[rec.Msg] = rec.Addr
			p.mu.Unlock()
			if rec.Msg == "agentik listening" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
		// A line past the scanner's buffer ends the scan: the rest is
		// still drained.
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.exited:
		return nil, 0, fmt.Errorf("server exited during start-up: %v\n%s", cmd.ProcessState, p.tail)
	case <-time.After(60 * time.Second):
		_ = p.Stop()
		return nil, 0, fmt.Errorf("server did not listen within 60s\n%s", p.tail)
	case <-ctx.Done():
		_ = p.Stop()
		return nil, 0, ctx.Err()
	}
	if err := waitHealthy(ctx, p.base); err != nil {
		_ = p.Stop()
		return nil, 0, fmt.Errorf("%w\n%s", err, p.tail)
	}
	return p, time.Since(t0), nil
}

// waitHealthy polls GET /health until it answers 200. The server logs that
// it listens just before serving, so the first or second poll succeeds.
func waitHealthy(ctx context.Context, base string) error {
	a := &api{base: base, hc: &http.Client{Timeout: 2 * time.Second}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := a.health(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not healthy: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// statusKB reads a field in kB (VmRSS, RssAnon, RssFile) from
// /proc/<pid>/status.
func statusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc status", field)
}

// fdCount counts the entries of /proc/<pid>/fd: the process's open file
// descriptors (sockets, the database, the log pipe).
func fdCount(pid int) (int, error) {
	es, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return 0, err
	}
	return len(es), nil
}

// clockTick is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// cpuTime reads utime + stime from /proc/<pid>/stat. CPU time, unlike wall
// time, barely depends on what else the machine runs, so it compares runs
// made under different loads.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	// After the name: state is field 3, so utime (14) and stime (15) are f[11], f[12].
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * clockTick, nil
}

// logTail keeps the last lines of the server's log for error messages.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (t *logTail) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > 30 {
		t.lines = t.lines[len(t.lines)-30:]
	}
}

func (t *logTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return "server log (last lines):\n  " + strings.Join(t.lines, "\n  ")
}

// logWarnings counts the server's log lines at WARN or ERROR and keeps
// the first few: a failed stream of a benchmark says what the server saw.
type logWarnings struct {
	mu    sync.Mutex
	n     int
	first []string
}

// maxWarnings is how many warning lines a process keeps.
const maxWarnings = 5

// add takes one line of the JSON log (AGENTIK_LOG_FORMAT=json).
func (w *logWarnings) add(l string) {
	if !strings.Contains(l, `"level":"WARN"`) && !strings.Contains(l, `"level":"ERROR"`) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if len(w.first) < maxWarnings {
		w.first = append(w.first, l)
	}
}

// restart forgets the warnings logged so far (start-up's).
func (w *logWarnings) restart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n, w.first = 0, nil
}

// seen returns how many warnings were logged and the first few.
func (w *logWarnings) seen() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, slices.Clone(w.first)
}

// inProcess runs the same stack as `agentik serve` (SQLite store, in-process
// bus, OpenAI adapter, built-in tools, engine, REST+SSE) inside the bench, so
// that --cpuprofile sees the server's hot paths. Its RSS is the bench's own
// (model and clients included), so memory figures only come from the binary.
type inProcess struct {
	srv   *http.Server
	ln    net.Listener
	eng   *engine.Engine
	store *sqlite.Store
}

func startInProcess(ctx context.Context, sc serverConfig) (target, time.Duration, error) {
	if sc.pgDSN != "" {
		return nil, 0, errors.New("--pg needs the server binary (the in-process mode runs SQLite only)")
	}
	t0 := time.Now()
	store, err := sqlite.Open(ctx, sc.dbPath)
	if err != nil {
		return nil, 0, err
	}
	llm, err := openai.New(openai.Options{BaseURL: sc.model, Model: "llmtest", MaxRetries: -1, ContextTokens: 32768})
	if err != nil {
		store.Close()
		return nil, 0, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := engine.New(engine.Options{
		Store: store, Temporal: memstore.New(), Bus: bus.New(), LLM: llm, Tools: tools.NewRegistry(tools.CurrentTime{}),
		Info:         agentik.AgentInfo{ID: "agentik", Name: "Agentik"},
		SystemPrompt: "You are a helpful assistant. Answer concisely and use the tools you are given when they help.",
		Logger:       log,
	})
	if err != nil {
		store.Close()
		return nil, 0, err
	}
	mux := http.NewServeMux()
	httpapi.MountHealth(mux, store.Ping)
	httpapi.Mount(mux, "/agentik", eng, httpapi.Options{Logger: log})
	openaiapi.Mount(mux, "/v1", openaiapi.NewHandler(openaiapi.Options{Logger: log,
		Models: func(context.Context) []openaiapi.Model { return []openaiapi.Model{{ID: "agentik", Agent: eng}} }}), nil)
	langgraph.New(langgraph.Options{Logger: log, Agents: func(context.Context) []agentik.Agent { return []agentik.Agent{eng} }}).Mount(mux, "/langgraph", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		return nil, 0, err
	}
	if err := eng.Start(ctx); err != nil {
		ln.Close()
		store.Close()
		return nil, 0, err
	}
	ip := &inProcess{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, eng: eng, store: store}
	go ip.srv.Serve(ln) //nolint:errcheck // ErrServerClosed on Stop
	if err := waitHealthy(ctx, ip.Base()); err != nil {
		ip.Stop()
		return nil, 0, err
	}
	return ip, time.Since(t0), nil
}

func (p *inProcess) Base() string                     { return "http://" + p.ln.Addr().String() }
func (p *inProcess) RSSKB() (int64, error)            { return statusKB(os.Getpid(), "VmRSS") }
func (p *inProcess) StatusKB(f string) (int64, error) { return statusKB(os.Getpid(), f) }
func (p *inProcess) CPU() (time.Duration, error)      { return cpuTime(os.Getpid()) }

func (p *inProcess) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.eng.Shutdown(ctx)
	p.srv.Shutdown(ctx) //nolint:errcheck // streams are already ended by the engine
	p.store.Close()
	return err
}
