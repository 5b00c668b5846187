package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitFor polls cond until it holds or 20 s pass: used only for state that
// changes in the background with no event to wait on (a restart, a re-list).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func toolNames(src *Source) []string {
	var n []string
	for _, t := range src.Tools(context.Background()) {
		n = append(n, t.Spec().Name)
	}
	return n
}

func lookupTool(t *testing.T, src *Source, name string) agentik.Tool {
	t.Helper()
	for _, tl := range src.Tools(context.Background()) {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q in %v", name, toolNames(src))
	return nil
}

func callText(t *testing.T, tl agentik.Tool, args string) (string, bool) {
	t.Helper()
	res, err := tl.Call(context.Background(), agentik.RawJSON(args))
	if err != nil {
		t.Fatalf("call %s: %v", tl.Spec().Name, err)
	}
	return agentik.JoinText(res.Content), res.IsError
}

// processGone reports whether pid no longer runs (gone, or a zombie that
// only waits to be reaped by an init that may not reap).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && (f[2] == "Z" || f[2] == "X")
}

func TestErrorsAndNamesReachTheModel(t *testing.T) {
	t.Parallel()
	src := startSource(t, &Config{Servers: []ServerConfig{selfServer("gotest", nil)}}, testOptions(t))
	h := newHarness(t, src, 10*time.Second)
	long := sanitizeName(strings.Repeat("x", 70))
	h.llm.Enqueue(
		llmtest.ToolCalls(
			llmtest.Call("fail", `{}`).WithID("c_fail"),
			llmtest.Call("rpc_error", `{}`).WithID("c_rpc"),
			llmtest.Call("name_with_dots", `{}`).WithID("c_dots"),
			llmtest.Call(long, `{}`).WithID("c_long"),
			llmtest.Call("structured", `{}`).WithID("c_struct"),
			llmtest.Call("image", `{}`).WithID("c_img"),
			llmtest.Call("echo", `{"text": 5}`).WithID("c_badargs"),
		),
		llmtest.Text("ok"),
	)
	c, _ := h.turn("go")
	// The Go SDK server speaks the stateless 2026-07-28 protocol.
	if hs := src.Health()[0]; hs.Protocol != "2026-07-28" || hs.Tools != 13 { // 13 tools in pages of 4
		t.Errorf("health %+v", hs)
	}
	names := offered(h, 0)
	if !slices.Contains(names, "name_with_dots") || !slices.Contains(names, long) || len(long) != 64 {
		t.Fatalf("offered %v", names)
	}
	got := toolMessages(h)
	for id, want := range map[string]string{
		"c_fail":    "the widget is broken",
		"c_rpc":     "MCP error -32042: the database is on fire",
		"c_dots":    "dots ok",
		"c_long":    "long ok",
		"c_struct":  `{"temperature":21}`,
		"c_img":     "a pixel",
		"c_badargs": "",
	} {
		if m := got[id].Text(); !strings.Contains(m, want) {
			t.Errorf("%s → %q, want %q", id, m, want)
		}
	}
	res := results(t, c)
	for name, isErr := range map[string]bool{"fail": true, "rpc_error": true, "name_with_dots": false, "structured": false, "image": false, "echo": true} {
		if r, ok := res[name]; !ok || r.IsError != isErr {
			t.Errorf("journal %s: %+v (want is_error %v)", name, r, isErr)
		}
	}
	if !agentik.HasImage(res["image"].Content) {
		t.Errorf("image result %+v", res["image"])
	}
}

func TestSameToolOnTwoServersIsPrefixed(t *testing.T) {
	t.Parallel()
	src := startSource(t, &Config{Servers: []ServerConfig{selfServer("alpha", nil), selfServer("beta", nil)}}, testOptions(t))
	names := toolNames(src)
	for _, want := range []string{"alpha_echo", "beta_echo", "alpha_pid", "beta_pid"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s missing from %v", want, names)
		}
	}
	if slices.Contains(names, "echo") {
		t.Fatalf("unprefixed clash in %v", names)
	}
	a, _ := callText(t, lookupTool(t, src, "alpha_pid"), `{}`)
	b, _ := callText(t, lookupTool(t, src, "beta_pid"), `{}`)
	if a == b || a == "" {
		t.Fatalf("alpha and beta answered from the same process: %s %s", a, b)
	}
	if s := lookupTool(t, src, "beta_echo").Spec(); s.Source != "mcp:beta" {
		t.Fatalf("spec %+v", s)
	}
}

func TestCrashMidCallRestarts(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	src := startSource(t, &Config{Servers: []ServerConfig{selfServer("crashy", map[string]string{startsFileEnv: starts})}}, testOptions(t))
	h := newHarness(t, src, 10*time.Second)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("crash", `{}`).WithID("c1")), llmtest.Text("it crashed"))
	c, evs := h.turn("crash it")
	if r := results(t, c)["crash"]; !r.IsError || !strings.Contains(agentik.JoinText(r.Content), "crashy") {
		t.Fatalf("crash result %+v", r)
	}
	var failed bool
	for _, ev := range evs {
		failed = failed || ev.Type == agentik.EvToolFailed
	}
	if !failed {
		t.Fatalf("no tool_failed event in %+v", evs)
	}
	waitFor(t, "the restart", func() bool {
		h := src.Health()[0]
		b, _ := os.ReadFile(starts)
		return h.State == StateUp && h.Restarts == 1 && strings.Count(string(b), "\n") == 2
	})
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("echo", `{"text":"back"}`).WithID("c2")), llmtest.Text("fine"))
	c, _ = h.turn("again")
	if r := results(t, c)["echo"]; r.IsError || agentik.JoinText(r.Content) != "echo: back" {
		t.Fatalf("after restart: %+v (health %+v)", r, src.Health())
	}
}

func TestHungCallTimesOutWhileOthersProceed(t *testing.T) {
	t.Parallel()
	hung := selfServer("hung", nil)
	hung.Timeout = 1500 * time.Millisecond
	src := startSource(t, &Config{Servers: []ServerConfig{hung, selfServer("other", nil)}}, testOptions(t))
	h := newHarness(t, src, 20*time.Second)
	// Conversation A: the hung call and a quick call of the same server in
	// one round. Conversation B meanwhile uses the other server.
	h.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "user" && last.Text() == "A":
			return llmtest.ToolCalls(llmtest.Call("hung_hang", `{}`).WithID("a1"), llmtest.Call("hung_echo", `{"text":"quick"}`).WithID("a2"))
		case last.Role == "user" && last.Text() == "B":
			return llmtest.ToolCalls(llmtest.Call("other_echo", `{"text":"b"}`).WithID("b1"))
		}
		return llmtest.Text("done")
	})
	ca, sa := h.open()
	resA, err := ca.Send(t.Context(), agentik.SendRequest{Content: []agentik.Content{agentik.Text("A")}})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	// The quick call of the same server returns while the hang is pending.
	until(t, sa, func(ev agentik.Event) bool {
		return ev.Type == agentik.EvToolResult && ev.Message != nil && ev.Message.CallID == "a2"
	})
	_, evsB := h.turn("B")
	if time.Since(started) >= hung.Timeout {
		t.Fatalf("other calls waited for the hung one (%s)", time.Since(started))
	}
	if evsB[len(evsB)-1].Reason != agentik.EndCompleted {
		t.Fatalf("B ended %+v", evsB[len(evsB)-1])
	}
	evsA := until(t, sa, func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == resA.MessageID })
	took := time.Since(started)
	if took < hung.Timeout || took > hung.Timeout+5*time.Second {
		t.Fatalf("hung call ended after %s, want about %s", took, hung.Timeout)
	}
	if evsA[len(evsA)-1].Reason != agentik.EndCompleted {
		t.Fatalf("A ended %+v", evsA[len(evsA)-1])
	}
	r := results(t, ca)["hung_hang"]
	if !r.IsError || !strings.Contains(agentik.JoinText(r.Content), "did not answer within 1.5s") {
		t.Fatalf("hang result %+v", r)
	}
	// The server stays usable.
	if txt, isErr := callText(t, lookupTool(t, src, "hung_echo"), `{"text":"still"}`); isErr || txt != "echo: still" {
		t.Fatalf("after the timeout: %q %v", txt, isErr)
	}
}

func TestInterruptDuringCallEndsTheTurnAtOnce(t *testing.T) {
	t.Parallel()
	cancelFile := filepath.Join(t.TempDir(), "cancelled")
	src := startSource(t, &Config{Servers: []ServerConfig{selfServer("hung", map[string]string{cancelFileEnv: cancelFile})}}, testOptions(t))
	h := newHarness(t, src, 60*time.Second)
	// One call ignores cancellation, the other honours it.
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("hang", `{}`).WithID("h1"), llmtest.Call("slow", `{}`).WithID("h2")))
	c, s := h.open()
	res, err := c.Send(t.Context(), agentik.SendRequest{Content: []agentik.Content{agentik.Text("hang")}})
	if err != nil {
		t.Fatal(err)
	}
	until(t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvToolCall })
	waitFor(t, "the slow call to reach the server", func() bool {
		b, _ := os.ReadFile(cancelFile)
		return string(b) == "started"
	})
	start := time.Now()
	if _, err := c.Interrupt(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := until(t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID })
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("interrupt took %s", took)
	}
	if evs[len(evs)-1].Reason != agentik.EndInterrupted {
		t.Fatalf("ended %+v", evs[len(evs)-1])
	}
	// The server was told (notifications/cancelled): its handler's context
	// ended.
	waitFor(t, "the server to see the cancellation", func() bool {
		b, _ := os.ReadFile(cancelFile)
		return string(b) == "cancelled"
	})
	// The session survives the abandoned call.
	if txt, isErr := callText(t, lookupTool(t, src, "echo"), `{"text":"alive"}`); isErr || txt != "echo: alive" {
		t.Fatalf("after interrupt: %q %v", txt, isErr)
	}
}

func TestListChangedRefreshesTools(t *testing.T) {
	t.Parallel()
	src := startSource(t, &Config{Servers: []ServerConfig{selfServer("dyn", nil)}}, testOptions(t))
	h := newHarness(t, src, 10*time.Second)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("add_tool", `{"name":"fresh.tool"}`)), llmtest.Text("added"))
	h.turn("add one")
	waitFor(t, "the new tool", func() bool { return slices.Contains(toolNames(src), "fresh_tool") })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("fresh_tool", `{}`)), llmtest.Text("used"))
	c, _ := h.turn("use it")
	if r := results(t, c)["fresh_tool"]; r.IsError || agentik.JoinText(r.Content) != "I am fresh.tool" {
		t.Fatalf("new tool result %+v", r)
	}
	if names := offered(h, len(h.llm.Requests())-2); !slices.Contains(names, "fresh_tool") {
		t.Fatalf("model not offered the new tool: %v", names)
	}
}

// A server that ignores SIGTERM and stdin EOF, with a grandchild process
// and a call hanging in it: shutting the engine down within its drain
// timeout and closing the source leaves no process behind.
func TestShutdownWithHungServerLeavesNoChild(t *testing.T) {
	t.Parallel()
	opts := testOptions(t)
	src := New(&Config{Servers: []ServerConfig{selfServer("stubborn", map[string]string{stubbornEnv: "1"})}}, opts)
	t.Cleanup(func() { src.Close() })
	if err := src.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	pidText, _ := callText(t, lookupTool(t, src, "pid"), `{}`)
	childText, _ := callText(t, lookupTool(t, src, "spawn"), `{}`)
	pid, _ := strconv.Atoi(pidText)
	child, _ := strconv.Atoi(childText)
	if pid == 0 || child == 0 || processGone(pid) || processGone(child) {
		t.Fatalf("pids %q %q", pidText, childText)
	}
	h := newHarness(t, src, 60*time.Second)
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("hang", `{}`)))
	c, s := h.open()
	if _, err := c.Send(t.Context(), agentik.SendRequest{Content: []agentik.Content{agentik.Text("hang")}}); err != nil {
		t.Fatal(err)
	}
	until(t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvToolCall })

	const drain = 500 * time.Millisecond
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	h.eng.Shutdown(ctx)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if budget := drain + opts.CloseTimeout + 2*time.Second; took > budget {
		t.Fatalf("shutdown took %s, budget %s", took, budget)
	}
	waitFor(t, "the processes to be gone", func() bool { return processGone(pid) && processGone(child) })
	t.Logf("shutdown with a hung, SIGTERM-ignoring server: %s", took)
}

// A server that cannot start and one that never answers do not hold up the
// others beyond the start-up wait; they are retried and reported.
func TestBrokenServersDoNotBlock(t *testing.T) {
	t.Parallel()
	opts := testOptions(t)
	opts.StartupWait = time.Second
	src := New(&Config{Servers: []ServerConfig{
		{Name: "missing", Transport: TransportStdio, Command: "/nonexistent/mcp-server"},
		{Name: "silent", Transport: TransportStdio, Command: "sleep", Args: []string{"300"}},
		selfServer("good", nil),
	}}, opts)
	t.Cleanup(func() { src.Close() })
	start := time.Now()
	names := toolNames(src)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Tools blocked %s", took)
	}
	waitFor(t, "the good server", func() bool { return slices.Contains(toolNames(src), "echo") })
	waitFor(t, "the missing server to be retried", func() bool { return src.Health()[0].State == StateFailed || src.Health()[0].Restarts > 0 })
	hs := src.Health()
	if hs[0].Error == "" || !strings.Contains(hs[0].Error, "nonexistent") {
		t.Fatalf("missing: %+v", hs[0])
	}
	if hs[1].State != StateConnecting || hs[2].State != StateUp {
		t.Fatalf("health %+v", hs)
	}
	_ = names
	start = time.Now()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > opts.CloseTimeout+3*time.Second {
		t.Fatalf("close took %s", took)
	}
}

// serveGoHTTP serves the test server over Streamable HTTP (and legacy SSE
// at /sse) on addr ("127.0.0.1:0" for any port).
func serveGoHTTP(t *testing.T, addr string, release chan struct{}) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(release)
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	mux.Handle("/sse", sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return hs, ln.Addr().String()
}

func TestHTTPServerThatDropsIsReconnected(t *testing.T) {
	t.Parallel()
	hs, addr := serveGoHTTP(t, "127.0.0.1:0", nil)
	opts := testOptions(t)
	opts.KeepAlive = 200 * time.Millisecond
	src := startSource(t, &Config{Servers: []ServerConfig{{Name: "web", Transport: TransportHTTP, URL: "http://" + addr + "/mcp"}}}, opts)
	echo := lookupTool(t, src, "echo")
	if txt, isErr := callText(t, echo, `{"text":"one"}`); isErr || txt != "echo: one" {
		t.Fatalf("%q %v", txt, isErr)
	}
	hs.Close()
	// While it is down, calls fail as results the model sees.
	if txt, isErr := callText(t, echo, `{"text":"two"}`); !isErr || !strings.Contains(txt, "web") {
		t.Fatalf("call to a dropped server: %q %v", txt, isErr)
	}
	waitFor(t, "the drop to be noticed", func() bool { return src.Health()[0].State != StateUp })
	serveGoHTTP(t, addr, nil)
	waitFor(t, "the reconnect", func() bool { return src.Health()[0].State == StateUp })
	if txt, isErr := callText(t, lookupTool(t, src, "echo"), `{"text":"three"}`); isErr || txt != "echo: three" {
		t.Fatalf("after reconnect: %q %v", txt, isErr)
	}
	if h := src.Health()[0]; h.Restarts < 1 {
		t.Fatalf("health %+v", h)
	}
}

func TestLegacySSEAndAutoFallback(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	_, addr := serveGoHTTP(t, "127.0.0.1:0", release)
	src := startSource(t, &Config{Servers: []ServerConfig{
		{Name: "legacy", Transport: TransportSSE, URL: "http://" + addr + "/sse"},
		{Name: "auto", Transport: TransportAuto, URL: "http://" + addr + "/sse"},
	}}, testOptions(t))
	for _, name := range []string{"legacy_echo", "auto_echo"} {
		if txt, isErr := callText(t, lookupTool(t, src, name), `{"text":"sse"}`); isErr || txt != "echo: sse" {
			t.Fatalf("%s: %q %v", name, txt, isErr)
		}
	}
	for _, h := range src.Health() {
		if h.State != StateUp || h.Protocol != "2024-11-05" && h.Protocol == "" {
			t.Fatalf("health %+v", h)
		}
	}
}

// Starting holds while the start-up window is open and a server has not
// made its first connection attempt; never once the window is closed.
func TestStarting(t *testing.T) {
	t.Parallel()
	silent := ServerConfig{Name: "silent", Transport: TransportStdio, Command: "sleep", Args: []string{"300"}}
	src := New(&Config{Servers: []ServerConfig{silent}}, testOptions(t))
	t.Cleanup(func() { src.Close() })
	if !src.Starting() {
		t.Fatal("a source whose server has not answered yet is not starting")
	}
	opts := testOptions(t)
	opts.StartupWait = -1
	closed := New(&Config{Servers: []ServerConfig{silent}}, opts)
	t.Cleanup(func() { closed.Close() })
	if closed.Starting() {
		t.Fatal("starting without a start-up window")
	}
	good := startSource(t, &Config{Servers: []ServerConfig{selfServer("good", nil)}}, testOptions(t))
	if good.Starting() {
		t.Fatalf("starting once every server made its first attempt: %+v", good.Health())
	}
}
