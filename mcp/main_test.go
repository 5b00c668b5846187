package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/tools"
)

// npmDir holds the pinned npm MCP servers (package.json + package-lock.json).
const npmDir = "testdata/npm"

var everythingEntry = filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) != "" {
		runStdioTestServer()
		return
	}
	if err := npmInstall(); err != nil {
		fmt.Fprintln(os.Stderr, "mcp tests: installing the pinned npm MCP servers failed (Node 20 and npm are required):", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// npmInstall runs `npm ci` when node_modules is missing or older than the
// lock file, so a fresh clone needs only Go, Node and npm.
func npmInstall() error {
	lock, err := os.Stat(filepath.Join(npmDir, "package-lock.json"))
	if err != nil {
		return err
	}
	if st, err := os.Stat(filepath.Join(npmDir, "node_modules", ".package-lock.json")); err == nil && !st.ModTime().Before(lock.ModTime()) {
		if _, err := os.Stat(everythingEntry); err == nil {
			return nil
		}
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return err
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = npmDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci: %v\n%s", err, out)
	}
	return nil
}

// testOptions are fast supervision settings for tests.
func testOptions(t *testing.T) Options {
	return Options{
		Logger:         testLogger(t),
		ConnectTimeout: 20 * time.Second,
		StartupWait:    20 * time.Second,
		CloseTimeout:   time.Second,
		MinBackoff:     50 * time.Millisecond,
		MaxBackoff:     200 * time.Millisecond,
	}
}

// startSource starts a source and closes it at the end of the test.
func startSource(t *testing.T, cfg *Config, opts Options) *Source {
	t.Helper()
	src := New(cfg, opts)
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := src.WaitReady(ctx); err != nil {
		t.Fatalf("servers not ready: %v (%+v)", err, src.Health())
	}
	return src
}

// selfServer configures the test binary itself as a stdio MCP server.
func selfServer(name string, env map[string]string) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	e := map[string]string{testServerEnv: "1"}
	for k, v := range env {
		e[k] = v
	}
	return ServerConfig{Name: name, Transport: TransportStdio, Command: exe, Env: e}
}

// everythingStdio configures server-everything over stdio, run with node
// directly (no npx).
func everythingStdio(name string) ServerConfig {
	abs, _ := filepath.Abs(everythingEntry)
	return ServerConfig{Name: name, Transport: TransportStdio, Command: "node", Args: []string{abs, "stdio"}}
}

// startEverythingHTTP runs server-everything in streamableHttp mode on a
// free loopback port and returns its /mcp URL.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	abs, _ := filepath.Abs(everythingEntry)
	for attempt := 0; attempt < 3; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		cmd := exec.Command("node", abs, "streamableHttp")
		cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
		setProcAttr(cmd)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		listening := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			ok := false
			for sc.Scan() {
				if !ok && strings.Contains(sc.Text(), "listening on port") {
					ok = true
					listening <- true
				}
			}
			if !ok {
				listening <- false
			}
			io.Copy(io.Discard, stderr)
		}()
		// Node may take long to start on a busy machine: wait for the
		// server to say it listens, or to end (its port taken since we
		// freed it: try another). No timer races the start.
		if <-listening {
			t.Cleanup(func() { killGroup(cmd.Process.Pid); cmd.Wait() })
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
		killGroup(cmd.Process.Pid)
		cmd.Wait()
		t.Logf("server-everything ended before listening on port %d (attempt %d)", port, attempt+1)
	}
	t.Fatal("server-everything did not start in streamableHttp mode")
	return ""
}

// harness is a real engine on a real SQLite file, with a scripted model
// behind the real OpenAI adapter, and the given MCP source as its tools.
type harness struct {
	t   *testing.T
	llm *llmtest.Server
	eng *engine.Engine
}

func newHarness(t *testing.T, src *Source, toolTimeout time.Duration) *harness {
	t.Helper()
	reg := tools.NewRegistry(tools.CurrentTime{})
	reg.AddSource("mcp", src)
	st := stacktest.New(t,
		stacktest.Model(func(o *openai.Options) {
			o.MaxRetries = 0 // the adapter's default
			o.Timeout = 30 * time.Second
			o.ImageInput = true
		}),
		stacktest.Engine(func(o *engine.Options) {
			o.Tools = reg
			o.ToolTimeout = toolTimeout
			o.ImageInput = true
		}))
	return &harness{t: t, llm: st.LLM, eng: st.Engine}
}

// turn sends text in a new conversation and waits for the turn's end event.
func (h *harness) turn(text string) (agentik.Conversation, []agentik.Event) {
	h.t.Helper()
	c, s := h.open()
	res, err := c.Send(context.Background(), agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
	if err != nil {
		h.t.Fatal(err)
	}
	return c, until(h.t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
}

func (h *harness) open() (agentik.Conversation, agentik.Stream[agentik.Event]) {
	h.t.Helper()
	ctx := context.Background()
	info, err := h.eng.CreateConversation(ctx, agentik.CreateRequest{Title: "mcp"})
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := h.eng.Conversation(ctx, info.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	s, err := c.Events(ctx, agentik.LiveOnly)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { s.Close() })
	return c, s
}

func until(t *testing.T, s agentik.Stream[agentik.Event], stop func(agentik.Event) bool) []agentik.Event {
	t.Helper()
	var got []agentik.Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-s.C():
			if !ok {
				t.Fatalf("stream ended (%v) after %d events", s.Err(), len(got))
			}
			got = append(got, ev)
			if stop(ev) {
				return got
			}
		case <-timeout:
			t.Fatalf("timed out after %d events", len(got))
		}
	}
}

// results returns the tool_result entries of a conversation's journal by
// tool name.
func results(t *testing.T, c agentik.Conversation) map[string]agentik.Message {
	t.Helper()
	page, err := c.Messages(context.Background(), agentik.MessagesRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]agentik.Message)
	for _, m := range page.Messages {
		if m.Type == agentik.MsgToolResult {
			out[m.Name] = m
		}
	}
	return out
}

// toolMessages returns what the model received as role "tool" messages in
// its last request, by tool_call_id.
func toolMessages(h *harness) map[string]llmtest.Message {
	reqs := h.llm.Requests()
	out := make(map[string]llmtest.Message)
	if len(reqs) == 0 {
		return out
	}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m
		}
	}
	return out
}

// offered returns the tool names the model was offered in request i.
func offered(h *harness, i int) []string {
	var names []string
	for _, t := range h.llm.Requests()[i].Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// logWriter collects log output for the test (shown on failure).
type logWriter struct {
	mu sync.Mutex
	t  *testing.T
	b  strings.Builder
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// testLogger logs into a buffer that is printed if the test fails (t.Log
// cannot be used from goroutines that may outlive the test).
func testLogger(t *testing.T) *slog.Logger {
	w := &logWriter{t: t}
	t.Cleanup(func() {
		if t.Failed() {
			w.mu.Lock()
			t.Logf("log:\n%s", w.b.String())
			w.mu.Unlock()
		}
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
