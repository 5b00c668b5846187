package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var metricsListening = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)

// scrape fetches and parses an exposition; it fails the test on any
// invalid line.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("invalid exposition: %v", err)
	}
	return fams
}

// value is the counter, gauge or histogram count of the series of name
// with exactly labels; 0 when absent.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.Metric {
		ok := true
		for k, v := range labels {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func statusOf(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsThroughBinary drives a plain, a tool, a failed and an
// interrupted turn through the binary and checks that each series moved
// by exactly what was done, on the metrics port and on the main port
// (admin only).
func TestMetricsThroughBinary(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "AGENTIK_LLM_MAX_RETRIES=0",
		"AGENTIK_AUTH_TOKENS=root:tok-root-secret,bob:tok-bob-secret", "AGENTIK_ADMINS=root", "AGENTIK_METRICS_ADDR=127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no metrics listener:\n%s", p.log())
	}
	metricsURL := "http://" + m[1] + "/metrics"

	// Main port: admins only; anyone else is told the route does not exist.
	if s := statusOf(t, p.url+"/metrics", ""); s != http.StatusUnauthorized {
		t.Fatalf("no token: %d", s)
	}
	if s := statusOf(t, p.url+"/metrics", "tok-bob-secret"); s != http.StatusNotFound {
		t.Fatalf("non-admin: %d", s)
	}
	scrape(t, p.url+"/metrics", "tok-root-secret")
	before := scrape(t, metricsURL, "")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken("tok-bob-secret"))
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turn := func(text string, during func()) string {
		t.Helper()
		res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
		if err != nil {
			t.Fatal(err)
		}
		if during != nil {
			during()
		}
		for ev := range s.C() {
			if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
				return ev.Reason
			}
		}
		t.Fatalf("stream ended: %v\n%s", s.Err(), p.log())
		return ""
	}

	llm.Enqueue(llmtest.Text("hello world"))
	if r := turn("plain", nil); r != agentik.EndCompleted {
		t.Fatalf("plain: %s", r)
	}
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", "{}")), llmtest.Text("it is now"))
	if r := turn("tool", nil); r != agentik.EndCompleted {
		t.Fatalf("tool: %s", r)
	}
	llm.Enqueue(llmtest.ServerError())
	if r := turn("fail", nil); r != agentik.EndError {
		t.Fatalf("fail: %s", r)
	}
	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Finish("stop").Done())
	if r := turn("interrupt", func() {
		<-gate.Reached()
		for ev := range s.C() { // the engine has the first piece: it was timed
			if ev.Type == agentik.EvAppendText {
				break
			}
		}
		if ok, err := conv.Interrupt(ctx); err != nil || !ok {
			t.Fatalf("interrupt: %v %v", ok, err)
		}
	}); r != agentik.EndInterrupted {
		t.Fatalf("interrupt: %s", r)
	}
	gate.Release()

	// A turn counts itself ended just after its end event is out: wait
	// for the last of those counts (the duration's) to take in all four.
	agent := map[string]string{"agent": "agentik"}
	after := waitMetric(t, metricsURL, "agentik_turn_duration_seconds", agent, value(before, "agentik_turn_duration_seconds", agent)+4)
	with := func(kv ...string) map[string]string {
		l := map[string]string{"agent": "agentik"}
		for i := 0; i < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	model := "gpt-4o-mini"
	checks := []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"agentik_turns_total", with("outcome", "completed"), 2},
		{"agentik_turns_total", with("outcome", "error"), 1},
		{"agentik_turns_total", with("outcome", "interrupted"), 1},
		{"agentik_turns_total", agent, 4},
		{"agentik_turn_duration_seconds", agent, 4},
		{"agentik_time_to_first_token_seconds", agent, 3}, // plain, tool (its answer), interrupted
		{"agentik_turns_running", agent, 0},
		{"agentik_model_calls_total", with("model", model, "outcome", "ok"), 3},
		{"agentik_model_calls_total", with("model", model, "outcome", "error"), 1},
		{"agentik_model_calls_total", with("model", model, "outcome", "interrupted"), 1},
		{"agentik_model_call_duration_seconds", with("model", model), 5},
		{"agentik_model_tokens_total", with("model", model, "type", "input"), 30},
		{"agentik_model_tokens_total", with("model", model, "type", "output"), 2 + 5 + 3},
		{"agentik_tool_calls_total", with("tool", "current_time", "outcome", "ok"), 1},
		{"agentik_tool_calls_total", agent, 1},
		{"agentik_tool_call_duration_seconds", with("tool", "current_time"), 1},
		{"agentik_http_requests_total", map[string]string{"route": "POST /agentik/conversations", "status": "201"}, 1},
	}
	for _, c := range checks {
		if d := value(after, c.name, c.labels) - value(before, c.name, c.labels); d != c.delta {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, d, c.delta)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "agentik_http_request_duration_seconds"} {
		if after[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	// The model latency buckets go from 10 ms to 2 min.
	h := after["agentik_model_call_duration_seconds"].Metric[0].Histogram
	if b := h.Bucket; b[0].GetUpperBound() != 0.01 || b[len(b)-2].GetUpperBound() != 120 { // then +Inf
		t.Errorf("buckets %v", b)
	}

	// Cardinality: a scan of random paths adds no series, and no label
	// carries a conversation id or a principal.
	for i := 0; i < 20; i++ {
		statusOf(t, fmt.Sprintf("%s/no/such/path/%d", p.url, i), "tok-bob-secret")
	}
	scanned := scrape(t, metricsURL, "")
	count := func(fams map[string]*dto.MetricFamily) (n int) {
		for name, f := range fams {
			if strings.HasPrefix(name, "agentik_") {
				n += len(f.Metric)
			}
		}
		return n
	}
	if a, b := count(after), count(scanned); b > a+2 { // route "unmatched": one counter (404), one histogram
		t.Errorf("20 random paths added %d series", b-a)
	}
	checkBounded(t, scanned, info.ID, "/no/such", "bob", "root")
	for name, f := range scanned {
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if v := lp.GetValue(); strings.Contains(v, info.ID) || v == "bob" || v == "root" || strings.Contains(v, "/no/such") {
					t.Errorf("%s has an unbounded label %s=%q", name, lp.GetName(), v)
				}
			}
		}
	}
}
