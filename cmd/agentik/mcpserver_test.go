package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type tokenTransport struct{ token string }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.token != "" {
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mcpCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mcpConnect opens an MCP client session on endpoint at protocol version v.
func mcpConnect(t *testing.T, endpoint, token, v string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "agentik-test", Version: "1"}, opts)
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tokenTransport{token}}, MaxRetries: -1}
	cs, err := client.Connect(mcpCtx(t), tr, &sdk.ClientSessionOptions{ProtocolVersion: v})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func askTool(t *testing.T, cs *sdk.ClientSession, args map[string]any, token any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	p := &sdk.CallToolParams{Name: "ask", Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := cs.CallTool(mcpCtx(t), p)
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return res, out
}

func toolText(res *sdk.CallToolResult) string {
	var s []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			s = append(s, tc.Text)
		}
	}
	return strings.Join(s, "\n")
}

// TestMCPServerFacade drives /mcp of the real binary with the official Go
// SDK client: both protocol revisions, the same tokens as the other
// facades, principals kept apart, and a shutdown that no open session holds
// up.
func TestMCPServerFacade(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken+",bob:"+bobToken, "AGENTIK_DRAIN_TIMEOUT=5s")
	endpoint := p.url + "/mcp"

	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		for _, tok := range []string{"", "wrong-token-123"} {
			if _, err := mcpConnect(t, endpoint, tok, v, nil); err == nil || !strings.Contains(strings.ToLower(err.Error()), "unauthorized") && !strings.Contains(err.Error(), "401") {
				t.Errorf("%s with token %q: %v", v, tok, err)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb struct{ Error struct{ Code string } }
	json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	if resp.StatusCode != 401 || eb.Error.Code != "unauthorized" || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: %d %+v %q", resp.StatusCode, eb, resp.Header.Get("WWW-Authenticate"))
	}

	var convs []string
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		llm.Enqueue(llmtest.Stream().Role().Content("Paris ", "is the ", "capital.").Finish("stop").Done())
		var mu sync.Mutex
		var streamed strings.Builder
		cs, err := mcpConnect(t, endpoint, aliceToken, v, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			streamed.WriteString(r.Params.Message)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != v {
			t.Fatalf("negotiated %s, want %s", got, v)
		}
		res, out := askTool(t, cs, map[string]any{"message": "Capital of France?"}, "tok-"+v)
		if res.IsError || toolText(res) != "Paris is the capital." || out["answer"] != "Paris is the capital." {
			t.Fatalf("%s: %v %q %v", v, res.IsError, toolText(res), out)
		}
		id, _ := out["conversation_id"].(string)
		convs = append(convs, id)
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			s := streamed.String()
			mu.Unlock()
			if s == "Paris is the capital." {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: progress %q", v, s)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The native API shows alice the same conversations; bob sees none of
	// them through MCP.
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	for _, id := range convs {
		conv, err := alice.Conversation(context.Background(), id)
		if err != nil {
			t.Fatalf("alice's conversation %s over REST: %v", id, err)
		}
		page, _ := conv.Messages(context.Background(), agentik.MessagesRequest{})
		if len(page.Messages) != 2 || page.Messages[0].Context.Origin.Channel != "mcp" || page.Messages[0].Context.Origin.User != "alice" {
			t.Fatalf("journal %+v", page.Messages)
		}
	}
	bob, err := mcpConnect(t, endpoint, bobToken, "2025-11-25", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := bob.CallTool(mcpCtx(t), &sdk.CallToolParams{Name: "read_conversation", Arguments: map[string]any{"conversation_id": convs[0]}})
	if err != nil || !res.IsError || !strings.Contains(toolText(res), "not found") {
		t.Fatalf("bob reads alice's conversation: %v %q", err, toolText(res))
	}

	// An open session (with its standalone stream) does not hold up shutdown.
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("agentik did not stop:\n%s", p.log())
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("shutdown took %s with MCP sessions open:\n%s", took, p.log())
	}
	for _, tok := range []string{aliceToken, bobToken} {
		if strings.Contains(p.log(), tok) {
			t.Fatal("a token reached the logs")
		}
	}
}

func TestMCPServerCanBeTurnedOff(t *testing.T) {
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "AGENTIK_MCP_SERVER=off")
	resp, err := http.Post(p.url+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("AGENTIK_MCP_SERVER=off: %d", resp.StatusCode)
	}
}

// TestMCPBridge runs `agentik mcp` as an MCP client would (a subprocess on
// stdio) against a running server: tools, progress, the bridge's session
// continuing its conversation, and cancellation reaching the turn.
func TestMCPBridge(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken, "AGENTIK_LOG_LEVEL=debug")

	// Refusals fail fast with a message, and never touch stdout.
	for _, tc := range []struct {
		args []string
		env  string
		code int
		want string
	}{
		{[]string{"mcp"}, "", exitConfig, "--url"},
		{[]string{"mcp", "--url", "ftp://x"}, "", exitConfig, "--url"},
		{[]string{"mcp", "--url", p.url, "--agent", "../x"}, "", exitConfig, "--agent"},
		{[]string{"mcp", "--url", p.url}, "AGENTIK_TOKEN=wrong-token-123", exitFail, "nauthorized"},
	} {
		cmd := exec.Command(binary, tc.args...)
		cmd.Env = append(os.Environ(), tc.env)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", tc.args, code, stderr.String(), stdout.String())
		}
	}

	var mu sync.Mutex
	var streamed strings.Builder
	client := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		streamed.WriteString(r.Params.Message)
		mu.Unlock()
	}})
	cmd := exec.Command(binary, "mcp", "--url", p.url)
	cmd.Env = append(os.Environ(), "AGENTIK_TOKEN="+aliceToken)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := client.Connect(mcpCtx(t), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to the bridge: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(mcpCtx(t), nil)
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("tools %v %v", tools, err)
	}
	if cs.InitializeResult().ServerInfo.Name != "Agentik" {
		t.Fatalf("server info %+v", cs.InitializeResult().ServerInfo)
	}

	llm.Enqueue(llmtest.Stream().Role().Content("One", " two.").Finish("stop").Done(), llmtest.Text("Three."))
	res, out := askTool(t, cs, map[string]any{"message": "count"}, 7)
	if res.IsError || toolText(res) != "One two." {
		t.Fatalf("ask: %v %q", res.IsError, toolText(res))
	}
	res, out2 := askTool(t, cs, map[string]any{"message": "go on"}, nil)
	if res.IsError || out2["conversation_id"] != out["conversation_id"] {
		t.Fatalf("the bridge's second ask went to %v, not %v", out2["conversation_id"], out["conversation_id"])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		s := streamed.String()
		mu.Unlock()
		if s == "One two." {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress through the bridge: %q", s)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Cancelling the call through the bridge interrupts the turn.
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	llm.Enqueue(llmtest.Stream().Role().Content("partial ").Pause(gate).Content("never").Finish("stop").Done())
	ctx, cancel := context.WithCancel(mcpCtx(t))
	done := make(chan error, 1)
	go func() {
		p := &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "long one"}}
		p.SetProgressToken("long")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	// Cancel once the partial text has come through: the engine holds it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		mu.Lock()
		s := streamed.String()
		mu.Unlock()
		if s == "One two.partial " {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress of the long answer: %q", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	conv, err := alice.Conversation(context.Background(), out["conversation_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		page, err := conv.Messages(context.Background(), agentik.MessagesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		info, _ := conv.Info(context.Background())
		last := page.Messages[len(page.Messages)-1]
		if !info.Working && last.Type == agentik.MsgAssistant && last.Interrupted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn was not interrupted: %s\nserver:\n%s", fmt.Sprint(page.Messages), p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAgentikUsesAgentik: a second agentik, whose mcp.json points at the
// first's /mcp, calls the first's ask tool in one of its turns.
func TestAgentikUsesAgentik(t *testing.T) {
	llmA := llmtest.NewServer()
	t.Cleanup(llmA.Close)
	a := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llmA.URL(), "OPENAI_MODEL=a",
		"AGENTIK_AUTH_TOKENS=agent-b:"+aliceToken)
	llmA.Enqueue(llmtest.Text("The answer is 42."))

	cfg := writeMCPConfig(t, fmt.Sprintf(`{"mcpServers": {"expert": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${EXPERT_TOKEN}"}}}}`, a.url+"/mcp"))
	llmB := llmtest.NewServer()
	t.Cleanup(llmB.Close)
	b := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "b.db"), "OPENAI_BASE_URL="+llmB.URL(), "OPENAI_MODEL=b",
		"AGENTIK_MCP_CONFIG="+cfg, "EXPERT_TOKEN="+aliceToken, "AGENTIK_MCP_STARTUP_WAIT=20s")
	llmB.Enqueue(
		llmtest.ToolCalls(llmtest.Call("ask", `{"message":"What is the answer?"}`).WithID("call_expert")),
		llmtest.Text("The expert says 42."),
	)
	ctx := mcpCtx(t)
	client := httpapi.NewClient(b.url + "/agentik")
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	st, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("Ask the expert.")}}); err != nil {
		t.Fatal(err)
	}
	var result *agentik.Message
	for done := false; !done; {
		select {
		case ev, ok := <-st.C():
			if !ok {
				t.Fatalf("stream ended: %v", st.Err())
			}
			switch ev.Type {
			case agentik.EvToolResult, agentik.EvToolFailed:
				result = ev.Message
			case agentik.EvEnd:
				if ev.Reason != agentik.EndCompleted {
					t.Fatalf("turn ended %s\nA:\n%s\nB:\n%s", ev.Reason, a.log(), b.log())
				}
				done = true
			}
		case <-ctx.Done():
			t.Fatalf("no end\nB:\n%s", b.log())
		}
	}
	if result == nil || result.IsError || result.Name != "ask" || !strings.Contains(agentik.JoinText(result.Content), "The answer is 42.") {
		t.Fatalf("tool result %+v\nB:\n%s", result, b.log())
	}
	// B's model saw A's answer; A holds the conversation B started.
	reqs := llmB.Requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Raw), "The answer is 42.") {
		t.Fatalf("B's model did not get the answer: %s", reqs[len(reqs)-1].Raw)
	}
	var asked bool
	for _, tl := range reqs[0].Tools {
		asked = asked || tl.Function.Name == "ask"
	}
	if !asked {
		t.Fatalf("B's model was not offered ask: %+v", reqs[0].Tools)
	}
	aliceOnA := httpapi.NewClient(a.url+"/agentik", httpapi.WithToken(aliceToken))
	list, err := aliceOnA.ListConversations(ctx, agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 1 {
		t.Fatalf("A's conversations: %v %v", list, err)
	}
	aconv, _ := aliceOnA.Conversation(ctx, list.Conversations[0].ID)
	page, _ := aconv.Messages(ctx, agentik.MessagesRequest{})
	if len(page.Messages) != 2 || agentik.JoinText(page.Messages[0].Content) != "What is the answer?" || page.Messages[0].Context.Origin.DisplayName != "agentik" {
		t.Fatalf("A's journal %+v", page.Messages)
	}
}

func TestMCPEndpoint(t *testing.T) {
	for _, tc := range []struct{ url, agent, want string }{
		{"http://localhost:8080", "", "http://localhost:8080/mcp"},
		{"http://localhost:8080/", "", "http://localhost:8080/mcp"},
		{"https://h.example/base", "support", "https://h.example/base/agents/support/mcp"},
		{"http://h:1/agents/x/mcp", "", "http://h:1/agents/x/mcp"},
		{"http://h:1/mcp/", "", "http://h:1/mcp"},
		{"http://h:1/mcp", "x", ""},
		{"http://h:1", "a/b", ""},
		{"http://h:1", "..", ""},
		{"localhost:8080", "", ""},
		{"http://h:1?x=1", "", ""},
		{"", "", ""},
	} {
		got, err := mcpEndpoint(tc.url, tc.agent)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("mcpEndpoint(%q, %q) = %q, %v; want %q", tc.url, tc.agent, got, err, tc.want)
		}
	}
}

// mcpPost posts body to an MCP endpoint as a client at protocol version v
// would, with token; it returns the status and the body of the answer.
func mcpPost(t *testing.T, endpoint, token, v, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(mcpCtx(t), http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v)
	if v >= "2026-07-28" { // the current revision names the call in headers too
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "ask")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// peakRSS is VmHWM of process pid in bytes (0 where /proc is missing).
func peakRSS(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestMCPServerRefusesJSONBombs sends the real binary's /mcp what every
// other endpoint refuses: an array of 1.9 million elements (3.8 MB, under
// the body limit), first alone, then four at once; duplicate keys (also
// by case) and nesting past agentik.MaxJSONDepth. Each is refused with a
// JSON-RPC error before the SDK decodes it, and the process's peak memory
// stays where it was (the SDK decoding the array cost +747 MiB).
func TestMCPServerRefusesJSONBombs(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken)
	endpoint := p.url + "/mcp"
	// A call of ask as revision v sends it: the current one has its
	// version in _meta.
	call := func(v, args string) string {
		meta := ""
		if v >= "2026-07-28" {
			meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}},`
		}
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + meta + `"name":"ask","arguments":` + args + `}}`
	}
	bomb := call("2026-07-28", `{"message":[`+strings.TrimSuffix(strings.Repeat("0,", 1_900_000), ",")+`]}`)
	refused := func(what string, status int, b []byte, want int, wantRPC int) {
		t.Helper()
		var rpc struct {
			JSONRPC string
			ID      any
			Error   struct {
				Code    int
				Message string
			}
		}
		if status != want || json.Unmarshal(b, &rpc) != nil || rpc.JSONRPC != "2.0" || rpc.Error.Code != wantRPC || rpc.Error.Message == "" {
			t.Errorf("%s: %d %.200s, want %d and a JSON-RPC error %d", what, status, b, want, wantRPC)
		}
	}

	before := peakRSS(p.cmd.Process.Pid)
	status, _, b := mcpPost(t, endpoint, aliceToken, "2026-07-28", bomb)
	refused("1.9M-element array", status, b, http.StatusRequestEntityTooLarge, -32600)
	one := peakRSS(p.cmd.Process.Pid)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			status, _, b := mcpPost(t, endpoint, aliceToken, "2026-07-28", bomb)
			refused("1.9M-element array, four at once", status, b, http.StatusRequestEntityTooLarge, -32600)
		})
	}
	wg.Wait()
	four := peakRSS(p.cmd.Process.Pid)
	const mib = 1 << 20
	t.Logf("peak RSS (VmHWM): %d MiB before, %d MiB after one %d-byte array request, %d MiB after four at once", before/mib, one/mib, len(bomb), four/mib)
	if before > 0 && four > before+128*mib {
		t.Errorf("peak RSS grew by %d MiB for refused requests", (four-before)/mib)
	}

	// MCP's own body limit (4 MiB), not the server's 16 MiB.
	status, _, b = mcpPost(t, endpoint, aliceToken, "2026-07-28", call("2026-07-28", `{"message":"`+strings.Repeat("x", 5<<20)+`"}`))
	refused("a 5 MiB body", status, b, http.StatusRequestEntityTooLarge, -32600)

	for _, tc := range []struct {
		name string
		body func(v string) string
	}{
		{"duplicate key", func(v string) string { return call(v, `{"message":"a","message":"b"}`) }},
		{"duplicate key by case", func(v string) string { return call(v, `{"message":"a","Message":"b"}`) }},
		{"duplicate id by case", func(v string) string {
			return strings.Replace(call(v, `{"message":"a"}`), `"id":7,`, `"id":7,"ID":8,`, 1)
		}},
		{"nested too deep", func(v string) string {
			return call(v, `{"message":"a","x":`+strings.Repeat("[", agentik.MaxJSONDepth)+strings.Repeat("]", agentik.MaxJSONDepth)+`}`)
		}},
	} {
		for _, v := range []string{"2026-07-28", "2025-11-25"} {
			status, _, b := mcpPost(t, endpoint, aliceToken, v, tc.body(v))
			refused(tc.name+" at "+v, status, b, http.StatusBadRequest, -32700)
		}
	}
	if n := len(llm.Requests()); n != 0 {
		t.Fatalf("%d model calls for refused requests", n)
	}
}

// TestMCPServerSessionLimits: the AGENTIK_MCP_SERVER_* session limits reach
// the endpoint. A principal past its cap, and anyone past the server's,
// cannot initialize another session (previous revisions); the current
// revision, which opens none, still works.
func TestMCPServerSessionLimits(t *testing.T) {
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "AGENTIK_AUTH_TOKENS=alice:"+aliceToken+",bob:"+bobToken,
		"AGENTIK_MCP_SERVER_MAX_SESSIONS_PER_PRINCIPAL=2", "AGENTIK_MCP_SERVER_MAX_SESSIONS=3", "AGENTIK_MCP_SERVER_SESSION_BURST=3")
	endpoint := p.url + "/mcp"
	for range 2 {
		if _, err := mcpConnect(t, endpoint, aliceToken, "2025-11-25", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mcpConnect(t, endpoint, aliceToken, "2025-11-25", nil); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("alice's third session: %v", err)
	}
	if _, err := mcpConnect(t, endpoint, aliceToken, "2026-07-28", nil); err != nil {
		t.Fatalf("the current revision at the cap: %v", err)
	}
	if _, err := mcpConnect(t, endpoint, bobToken, "2025-11-25", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpConnect(t, endpoint, bobToken, "2025-11-25", nil); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("a session past the server's cap: %v", err)
	}
}

// TestMCPBridgeApproval: the `agentik mcp` binary, between a desktop client
// (the official Go SDK over stdio, declaring elicitation) and a server whose
// current_time call needs approval, asks the person through the client and
// passes the answer on: approved, the call runs and the turn answers; a
// client that declares no elicitation is told it cannot answer approvals.
func TestMCPBridgeApproval(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken, "AGENTIK_TOOL_APPROVAL=current_time=ask")
	bridge := func(opts *sdk.ClientOptions) *sdk.ClientSession {
		t.Helper()
		cmd := exec.Command(binary, "mcp", "--url", p.url)
		cmd.Env = append(os.Environ(), "AGENTIK_TOKEN="+aliceToken)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, opts).Connect(mcpCtx(t), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to the bridge: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	var mu sync.Mutex
	var asked []string
	cs := bridge(&sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, r.Params.Message)
		mu.Unlock()
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
	}})
	// Two rounds: the turn parks again after the first answer.
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text("It is noon."))
	res, out := askTool(t, cs, map[string]any{"message": "time?"}, nil)
	mu.Lock()
	got := slices.Clone(asked)
	mu.Unlock()
	if res.IsError || out["answer"] != "It is noon." || len(got) != 2 || !strings.Contains(got[1], "current_time") {
		t.Fatalf("ask through the bridge: %v %q, asked %q\nserver:\n%s", res.IsError, toolText(res), got, p.log())
	}
	alice := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(aliceToken))
	conv, err := alice.Conversation(context.Background(), out["conversation_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	types, msgs := journalTypes(t, conv)
	for _, m := range msgs {
		if m.Type == agentik.MsgToolResult && m.IsError {
			t.Fatalf("the approved call failed: %s", agentik.JoinText(m.Content))
		}
	}
	if types != "user_message,tool_call,tool_result,tool_call,tool_result,assistant_message" {
		t.Fatalf("journal %s", types)
	}

	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text("later"))
	mute := bridge(nil) // declares no elicitation
	res, _ = askTool(t, mute, map[string]any{"message": "time?", "new_conversation": true}, nil)
	if !res.IsError || !strings.Contains(toolText(res), "cannot answer approvals") {
		t.Fatalf("a client that cannot be asked: %v %q", res.IsError, toolText(res))
	}
}
