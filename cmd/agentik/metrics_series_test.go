package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/ws"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
)

// waitMetric scrapes until the series of name with labels has value
// want (a gauge another process updates when a stream ends, or an MCP
// server connects), and returns that scrape.
func waitMetric(t *testing.T, url, name string, labels map[string]string, want float64) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams := scrape(t, url, "")
		got := value(fams, name, labels)
		if got == want {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v is %v, want %v", name, labels, got, want)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's metrics
	}
}

// checkBounded fails on any agentik_ series with a label other than the
// bounded ones, or with a value taken from user input (ids, principals,
// message text, paths).
func checkBounded(t *testing.T, fams map[string]*dto.MetricFamily, forbidden ...string) {
	t.Helper()
	allowed := map[string]func(string) bool{
		"agent":   func(string) bool { return true }, // agent ids: the configuration's
		"model":   func(string) bool { return true }, // the configuration's
		"tool":    func(string) bool { return true }, // registered tools, else "unknown"
		"server":  func(string) bool { return true }, // MCP server names: the configuration's
		"outcome": func(string) bool { return true },
		"type":    func(v string) bool { return v == "input" || v == "output" },
		"method": func(v string) bool {
			return slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}, v)
		},
		"route":  func(v string) bool { return v == "unmatched" || strings.Contains(v, " /") },
		"status": func(v string) bool { return len(v) == 3 },
		"facade": func(v string) bool {
			return slices.Contains([]string{"sse", "agui", "a2a", "ws", "mcp", "irc", "other"}, v)
		},
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "agentik_") {
			continue
		}
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				ok, known := allowed[lp.GetName()]
				if !known || !ok(lp.GetValue()) {
					t.Errorf("%s has the label %s=%q", name, lp.GetName(), lp.GetValue())
				}
				for _, s := range forbidden {
					if strings.Contains(lp.GetValue(), s) {
						t.Errorf("%s has an unbounded label %s=%q", name, lp.GetName(), lp.GetValue())
					}
				}
			}
		}
	}
}

// TestMetricsQueueSubscribersCommitsMCP: through the binary, the queued
// turns, the event streams per facade, the store commits and the health
// of the MCP servers move by exactly what the test does.
func TestMetricsQueueSubscribersCommitsMCP(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate, gateAGUI := llmtest.NewGate(), llmtest.NewGate()
	defer gate.Release()
	defer gateAGUI.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("first").Pause(gate).Finish("stop").Done(),
		llmtest.Stream().Role().Content("agui").Pause(gateAGUI).Finish("stop").Done(),
		llmtest.Text("second"))
	weather := weatherServer(t, "k3y")
	mcpCfg := writeMCPConfig(t, fmt.Sprintf(`{"mcpServers": {
		"weather": {"type": "http", "url": %q, "headers": {"X-Api-Key": "k3y"}},
		"broken": {"command": "/nonexistent/server"}
	}}`, weather))
	const bob = "tok-bob-secret"
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "agentik.db"), "OPENAI_BASE_URL="+llm.URL(), "AGENTIK_LLM_MAX_RETRIES=0",
		"AGENTIK_AUTH_TOKENS=root:tok-root-secret,bob:"+bob, "AGENTIK_ADMINS=root", "AGENTIK_METRICS_ADDR=127.0.0.1:0",
		"AGENTIK_MCP_CONFIG="+mcpCfg)
	m := metricsListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no metrics listener:\n%s", p.log())
	}
	url := "http://" + m[1] + "/metrics"
	agent := map[string]string{"agent": "agentik"}
	with := func(kv ...string) map[string]string {
		l := map[string]string{"agent": "agentik"}
		for i := 0; i < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}

	// MCP health: the reachable server is up with its one tool, the one
	// that cannot start is not.
	waitMetric(t, url, "agentik_mcp_server_up", with("server", "weather"), 1)
	before := scrape(t, url, "")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentik_mcp_server_up", with("server", "broken"), 0},
		{"agentik_mcp_server_tools", with("server", "weather"), 1},
		{"agentik_mcp_server_tools", with("server", "broken"), 0},
		{"agentik_turns_queued", agent, 0},
		{"agentik_subscribers", agent, 0},
	} {
		if got := value(before, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if f := before["agentik_mcp_server_restarts_total"]; f == nil || len(f.Metric) != 2 || f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("restarts: %v", f)
	}
	if f := before["agentik_turns_queued"]; f == nil || len(f.Metric) != 1 {
		t.Errorf("queued turns: %v", f)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(bob))
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	agentStream, err := client.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	first, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("one")}})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.Reached()
	second, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("two")}, IfBusy: agentik.BusyEnqueue})
	if err != nil {
		t.Fatal(err)
	}
	// An AG-UI run of another thread: its stream is open while its model
	// call waits.
	aguiDone := make(chan string, 1)
	go func() {
		body := `{"threadId":"thread-` + agentik.NewID() + `","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/agui", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bob)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			aguiDone <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		aguiDone <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}()
	<-gateAGUI.Reached()

	// A model call reached while its message committed is sent early,
	// before its turn counts itself running (microseconds later): wait
	// for both turns to count.
	mid := waitMetric(t, url, "agentik_turns_running", agent, value(before, "agentik_turns_running", agent)+2)
	for _, c := range []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"agentik_turns_queued", agent, 1},
		{"agentik_turns_running", agent, 2},
		{"agentik_subscribers", with("facade", "sse"), 2}, // the conversation's stream and the agent's
		{"agentik_subscribers", with("facade", "agui"), 1},
		{"agentik_subscribers", agent, 3},
	} {
		if d := value(mid, c.name, c.labels) - value(before, c.name, c.labels); d != c.delta {
			t.Errorf("while running: %s%v moved by %v, want %v", c.name, c.labels, d, c.delta)
		}
	}

	gateAGUI.Release()
	if got := <-aguiDone; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "RUN_FINISHED") {
		t.Fatalf("agui run: %s", got)
	}
	gate.Release()
	for ev := range s.C() {
		if ev.Type == agentik.EvEnd && ev.ReplyTo == second.MessageID {
			break
		}
	}
	s.Close()
	agentStream.Close()
	after := waitMetric(t, url, "agentik_subscribers", agent, 0)
	if d := value(after, "agentik_turns_queued", agent); d != 0 {
		t.Errorf("queued after the turns: %v", d)
	}
	// Three turns (first, second, the AG-UI run): each commits at least
	// its user message and its answer; the engine may split a turn's
	// writes further, never into more than a few commits for a plain turn.
	commits := value(after, "agentik_store_commit_duration_seconds", agent) - value(before, "agentik_store_commit_duration_seconds", agent)
	if commits < 6 || commits > 18 {
		t.Errorf("%v store commits for three plain turns", commits)
	}
	if h := after["agentik_store_commit_duration_seconds"].Metric[0].Histogram; h.GetSampleSum() <= 0 || h.Bucket[0].GetUpperBound() != 0.0001 {
		t.Errorf("commit histogram: %v", h)
	}
	_ = first
	checkBounded(t, after, info.ID, first.MessageID, second.MessageID, "bob", "root", "thread-")
}

// TestMetricsSubscribersWS: a WebSocket connection's conversation stream
// is counted under facade ws while it is connected, and no longer once it
// closes.
func TestMetricsSubscribersWS(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("hello"))
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1", "AGENTIK_METRICS_ADDR=127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no metrics listener:\n%s", p.log())
	}
	url := "http://" + m[1] + "/metrics"
	wsFacade := map[string]string{"agent": "agentik", "facade": "ws"}
	if v := value(scrape(t, url, ""), "agentik_subscribers", wsFacade); v != 0 {
		t.Fatalf("ws subscribers before: %v", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ws.Dial(ctx, wsURL(p), &ws.DialOptions{Token: "tok-alice-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Send(ctx, "hi")
	for msg := range c.Messages() {
		if _, ok := msg.(*ws.End); ok {
			break
		}
	}
	fams := scrape(t, url, "")
	if v := value(fams, "agentik_subscribers", wsFacade); v != 1 {
		t.Fatalf("ws subscribers while connected: %v", v)
	}
	if v := value(fams, "agentik_subscribers", map[string]string{"agent": "agentik"}); v != 1 {
		t.Fatalf("subscribers while connected: %v", v)
	}
	c.Close()
	waitMetric(t, url, "agentik_subscribers", wsFacade, 0)
}

// TestMetricsSubscribersMCP: an MCP tools/call ask that waits for its
// turn holds one stream counted under facade mcp, released with the
// answer.
func TestMetricsSubscribersMCP(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Content(" done").Finish("stop").Done())
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test",
		"AGENTIK_AUTH_TOKENS=alice:"+aliceToken, "AGENTIK_METRICS_ADDR=127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no metrics listener:\n%s", p.log())
	}
	url := "http://" + m[1] + "/metrics"
	mcpFacade := map[string]string{"agent": "agentik", "facade": "mcp"}
	cs, err := mcpConnect(t, p.url+"/mcp", aliceToken, "2025-11-25", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(mcpCtx(t), &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "hi"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- toolText(res)
	}()
	<-gate.Reached()
	fams := scrape(t, url, "")
	if v := value(fams, "agentik_subscribers", mcpFacade); v != 1 {
		t.Errorf("mcp subscribers while asking: %v (all: %v)", v, value(fams, "agentik_subscribers", map[string]string{"agent": "agentik"}))
	}
	gate.Release()
	if got := <-done; !strings.Contains(got, "half done") {
		t.Fatalf("ask: %s", got)
	}
	waitMetric(t, url, "agentik_subscribers", mcpFacade, 0)
}

// TestMetricsSubscribersIRC: an IRC client follows its agent's events and
// its joined channel's conversation: two streams under facade irc, none
// once it quits.
func TestMetricsSubscribersIRC(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Enqueue(llmtest.Text("Hello from IRC"))
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1", "AGENTIK_IRC_ADDR=127.0.0.1:0", "AGENTIK_METRICS_ADDR=127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no metrics listener:\n%s", p.log())
	}
	url := "http://" + m[1] + "/metrics"
	ircFacade := map[string]string{"agent": "agentik", "facade": "irc"}
	c := dialIRC(t, ircAddr(t, p))
	c.send("PASS tok-alice-1", "NICK alice", "USER alice 0 * :Alice")
	c.until(ircCmd("376"))
	c.send("JOIN #metrics")
	c.until(ircCmd("366"))
	c.send("PRIVMSG #metrics :hi")
	c.until(fromAgent("Hello from IRC"))
	fams := waitMetric(t, url, "agentik_subscribers", ircFacade, 2)
	if v := value(fams, "agentik_subscribers", map[string]string{"agent": "agentik"}); v != 2 {
		t.Errorf("subscribers: %v", v)
	}
	c.send("QUIT :bye")
	waitMetric(t, url, "agentik_subscribers", ircFacade, 0)
}

// TestMetricsSubscribersA2A: an A2A streaming message holds one stream
// counted under facade a2a while its turn runs.
func TestMetricsSubscribersA2A(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Content(" done").Finish("stop").Done())
	p := startProc(t, "AGENTIK_DB_PATH="+filepath.Join(t.TempDir(), "a.db"), "OPENAI_BASE_URL="+llm.URL(),
		"AGENTIK_AUTH_TOKENS=alice:tok-alice-1", "AGENTIK_METRICS_ADDR=127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no metrics listener:\n%s", p.log())
	}
	url := "http://" + m[1] + "/metrics"
	a2aFacade := map[string]string{"agent": "agentik", "facade": "a2a"}
	done := make(chan string, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"` + agentik.NewID() +
			`","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
		req, _ := http.NewRequest(http.MethodPost, p.url+"/a2a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Authorization", "Bearer tok-alice-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}()
	<-gate.Reached()
	if v := value(scrape(t, url, ""), "agentik_subscribers", a2aFacade); v != 1 {
		t.Errorf("a2a subscribers while streaming: %v", v)
	}
	gate.Release()
	if got := <-done; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Fatalf("stream: %s", got)
	}
	waitMetric(t, url, "agentik_subscribers", a2aFacade, 0)
}
