package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes the protobuf
// export requests the binary sends to POST /v1/traces.
type otlpReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string // attributes of the last resource seen
	changed  chan struct{}     // closed and replaced at every export
	bad      []string          // requests that were not valid exports
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{changed: make(chan struct{})}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		rc.bad = append(rc.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+errString(err))
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		rc.resource = attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	close(rc.changed)
	rc.changed = make(chan struct{})
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wait returns the spans received once done says they are complete; it
// fails the test if that does not happen within a generous deadline.
func (rc *otlpReceiver) wait(t testing.TB, p *proc, done func([]*tracepb.Span) bool) []*tracepb.Span {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		rc.mu.Lock()
		spans, changed := slices.Clone(rc.spans), rc.changed
		rc.mu.Unlock()
		if done(spans) {
			return spans
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("spans did not arrive; have %d: %v\n%s", len(spans), names(spans), p.log())
		}
	}
}

func (rc *otlpReceiver) received() ([]*tracepb.Span, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans), slices.Clone(rc.bad)
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// attrs flattens OTLP attributes to strings (arrays as JSON-ish lists).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = anyString(kv.Value)
	}
	return out
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return jsonOf(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return jsonOf(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return "?"
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func countPrefix(spans []*tracepb.Span, prefix string) int {
	n := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			n++
		}
	}
	return n
}

// children are the spans whose parent is parent, by start time.
func children(spans []*tracepb.Span, parent *tracepb.Span) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if bytes.Equal(s.ParentSpanId, parent.SpanId) && bytes.Equal(s.TraceId, parent.TraceId) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *tracepb.Span) int { return int(int64(a.StartTimeUnixNano) - int64(b.StartTimeUnixNano)) })
	return out
}

// turnSpan is the invoke_agent span of the turn answering messageID.
func turnSpan(t *testing.T, spans []*tracepb.Span, messageID string) *tracepb.Span {
	t.Helper()
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "invoke_agent ") && attrs(s.Attributes)["agentik.reply_to"] == messageID {
			return s
		}
	}
	t.Fatalf("no invoke_agent span for %s in %v", messageID, names(spans))
	return nil
}

// postMessage sends a user message over the REST API, with a traceparent
// header when tp is set, and returns its id.
func postMessage(t *testing.T, base, convID, text, tp string) string {
	t.Helper()
	body, _ := json.Marshal(agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
	req, _ := http.NewRequest(http.MethodPost, base+"/agentik/conversations/"+convID+"/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tp != "" {
		req.Header.Set("traceparent", tp)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res agentik.SendResult
	if resp.StatusCode/100 != 2 || json.NewDecoder(resp.Body).Decode(&res) != nil {
		t.Fatalf("send: %d", resp.StatusCode)
	}
	return res.MessageID
}

// waitEnd reads s until the turn answering id ends and returns its reason.
func waitEnd(t *testing.T, s agentik.Stream[agentik.Event], id string, p *proc) string {
	t.Helper()
	for ev := range s.C() {
		if ev.Type == agentik.EvEnd && ev.ReplyTo == id {
			return ev.Reason
		}
	}
	t.Fatalf("stream ended: %v\n%s", s.Err(), p.log())
	return ""
}

// waitClosed waits for the turn answering id to be over: its end event, or,
// for a turn that may have ended before s subscribed, its durable answer
// (completed) or error message.
func waitClosed(t *testing.T, s agentik.Stream[agentik.Event], id string, p *proc) string {
	t.Helper()
	for ev := range s.C() {
		switch {
		case ev.Type == agentik.EvEnd && ev.ReplyTo == id:
			return ev.Reason
		case ev.Message != nil && ev.Message.ReplyTo == id && ev.Message.Type == agentik.MsgAssistant && !ev.Message.Interrupted:
			return agentik.EndCompleted
		case ev.Message != nil && ev.Message.ReplyTo == id && ev.Message.Type == agentik.MsgError:
			return agentik.EndError
		}
	}
	t.Fatalf("stream ended: %v\n%s", s.Err(), p.log())
	return ""
}

const (
	incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan  = "00f067aa0ba902b7"
)

// TestTracesThroughBinary runs a tool turn (with an incoming traceparent)
// and a turn whose model call fails through the binary, exporting to a
// real OTLP/HTTP receiver, and checks the span tree and the GenAI
// attributes.
func TestTracesThroughBinary(t *testing.T) {
	rc := newOTLPReceiver(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "AGENTIK_LLM_MAX_RETRIES=0",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+rc.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=20",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test", "AGENTIK_LOG_LEVEL=debug") // debug: the request log in text mode
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
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

	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", "{}")), llmtest.Text("it is now"))
	toolTurn := postMessage(t, p.url, info.ID, "what time is it?", "00-"+incomingTrace+"-"+incomingSpan+"-01")
	if r := waitEnd(t, s, toolTurn, p); r != agentik.EndCompleted {
		t.Fatalf("tool turn: %s", r)
	}
	llm.Enqueue(llmtest.ServerError())
	failed := postMessage(t, p.url, info.ID, "fail", "")
	if r := waitEnd(t, s, failed, p); r != agentik.EndError {
		t.Fatalf("failed turn: %s", r)
	}

	spans := rc.wait(t, p, func(s []*tracepb.Span) bool { return countPrefix(s, "invoke_agent ") >= 2 })
	// The request log names the trace the edge read from the header.
	if !strings.Contains(p.log(), "trace_id="+incomingTrace) {
		t.Errorf("no request log line with the incoming trace id\n%s", p.log())
	}

	// The tool turn: a child of the incoming traceparent, with a model
	// call, the tool call and the model call that answers.
	turn := turnSpan(t, spans, toolTurn)
	if hex.EncodeToString(turn.TraceId) != incomingTrace || hex.EncodeToString(turn.ParentSpanId) != incomingSpan {
		t.Fatalf("turn span not parented by the incoming traceparent: trace %x parent %x", turn.TraceId, turn.ParentSpanId)
	}
	if turn.Name != "invoke_agent Agentik" || turn.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("turn span %q kind %v", turn.Name, turn.Kind)
	}
	ta := attrs(turn.Attributes)
	for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "agentik", "gen_ai.agent.name": "Agentik",
		"gen_ai.conversation.id": info.ID, "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": "20", "gen_ai.usage.output_tokens": "8",
		"agentik.turn.outcome": "completed"} {
		if ta[k] != v {
			t.Errorf("turn span %s = %q, want %q (%v)", k, ta[k], v, ta)
		}
	}
	kids := children(spans, turn)
	if got := names(kids); !slices.Equal(got, []string{"chat gpt-4o-mini", "execute_tool current_time", "chat gpt-4o-mini"}) {
		t.Fatalf("children of the turn span: %v", got)
	}
	first, tool, answer := attrs(kids[0].Attributes), attrs(kids[1].Attributes), attrs(kids[2].Attributes)
	for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
		"gen_ai.response.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": "10", "gen_ai.usage.output_tokens": "5",
		"gen_ai.response.finish_reasons": "[tool_calls]", "gen_ai.conversation.id": info.ID} {
		if first[k] != v {
			t.Errorf("first chat span %s = %q, want %q (%v)", k, first[k], v, first)
		}
	}
	if kids[0].Kind != tracepb.Span_SPAN_KIND_CLIENT || answer["gen_ai.response.finish_reasons"] != "[stop]" || !strings.HasPrefix(answer["gen_ai.response.id"], "chatcmpl-") {
		t.Errorf("answering chat span: kind %v, %v", kids[0].Kind, answer)
	}
	if tool["gen_ai.operation.name"] != "execute_tool" || tool["gen_ai.tool.name"] != "current_time" || tool["gen_ai.tool.call.id"] == "" ||
		tool["gen_ai.tool.type"] != "function" {
		t.Errorf("tool span: %v", tool)
	}
	for _, s := range append(kids, turn) {
		if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("%s has an error status", s.Name)
		}
		for k := range attrs(s.Attributes) {
			if k == "gen_ai.input.messages" || k == "gen_ai.output.messages" || k == "gen_ai.tool.call.arguments" || k == "gen_ai.tool.call.result" {
				t.Errorf("%s records content (%s) though capture is off", s.Name, k)
			}
		}
	}

	// The failed turn: a trace of its own, error.type on the model call
	// and on the turn.
	ft := turnSpan(t, spans, failed)
	if len(ft.ParentSpanId) != 0 || bytes.Equal(ft.TraceId, turn.TraceId) {
		t.Errorf("a turn without traceparent has a parent %x or the other trace", ft.ParentSpanId)
	}
	fk := children(spans, ft)
	if len(fk) != 1 || fk[0].Name != "chat gpt-4o-mini" {
		t.Fatalf("children of the failed turn: %v", names(fk))
	}
	for _, s := range []*tracepb.Span{fk[0], ft} {
		if a := attrs(s.Attributes); a["error.type"] != agentik.CodeLLMError || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("%s: error.type %q status %v", s.Name, a["error.type"], s.Status)
		}
	}
	rc.mu.Lock()
	res := rc.resource
	rc.mu.Unlock()
	if res["service.name"] != "agentik" || res["deployment.environment.name"] != "test" || res["service.version"] == "" {
		t.Errorf("resource: %v", res)
	}
	if _, bad := rc.received(); len(bad) > 0 {
		t.Errorf("invalid exports: %v", bad)
	}
}

// TestTracesCaptureContent: message contents are on the spans only with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; the last spans
// are exported when the process stops (SIGTERM).
func TestTracesCaptureContent(t *testing.T) {
	rc := newOTLPReceiver(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	db := filepath.Join(t.TempDir(), "agentik.db")
	p := startProc(t, "AGENTIK_DB_PATH="+db, "OPENAI_BASE_URL="+llm.URL(), "OTEL_SERVICE_NAME=agentik-test",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rc.srv.URL+"/v1/traces", "OTEL_BSP_SCHEDULE_DELAY=3600000", // only the shutdown exports
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
	info, _ := client.CreateConversation(ctx, agentik.CreateRequest{})
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{"zone":"UTC"}`)), llmtest.Text("noon sharp"))
	id := postMessage(t, p.url, info.ID, "tell me the secret time", "")
	if r := waitEnd(t, s, id, p); r != agentik.EndCompleted {
		t.Fatalf("turn: %s", r)
	}
	if spans, _ := rc.received(); len(spans) != 0 {
		t.Fatalf("exported before the schedule delay: %v", names(spans))
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after SIGTERM\n%s", p.log())
	}
	spans, bad := rc.received()
	if len(bad) > 0 || countPrefix(spans, "invoke_agent ") != 1 || countPrefix(spans, "chat ") != 2 || countPrefix(spans, "execute_tool ") != 1 {
		t.Fatalf("after shutdown: %v (bad %v)\n%s", names(spans), bad, p.log())
	}
	kids := children(spans, turnSpan(t, spans, id))
	in, out := attrs(kids[2].Attributes)["gen_ai.input.messages"], attrs(kids[2].Attributes)["gen_ai.output.messages"]
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(in), &msgs); err != nil || len(msgs) != 3 || !strings.Contains(in, "tell me the secret time") ||
		!strings.Contains(in, `"tool_call_response"`) {
		t.Errorf("input messages of the answering call (%v): %s", err, in)
	}
	if !strings.Contains(out, `"noon sharp"`) || !strings.Contains(out, `"finish_reason":"stop"`) {
		t.Errorf("output messages: %s", out)
	}
	if a := attrs(kids[1].Attributes); a["gen_ai.tool.call.arguments"] != `{"zone":"UTC"}` || !strings.Contains(a["gen_ai.tool.call.result"], `"type":"text"`) {
		t.Errorf("tool content: %v", a)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.resource["service.name"] != "agentik-test" {
		t.Errorf("OTEL_SERVICE_NAME not honoured: %v", rc.resource)
	}
}

// TestTracesOff: without an endpoint (or with OTEL_SDK_DISABLED=true beside
// one) nothing is exported and tracing says it is off.
func TestTracesOff(t *testing.T) {
	rc := newOTLPReceiver(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	for _, env := range [][]string{
		{"OTEL_SERVICE_NAME=agentik-off", "OTEL_TRACES_SAMPLER=always_on"}, // no endpoint
		{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL, "OTEL_SDK_DISABLED=true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL, "OTEL_TRACES_EXPORTER=none"},
	} {
		db := filepath.Join(t.TempDir(), "agentik.db")
		p := startProc(t, append([]string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "OTEL_BSP_SCHEDULE_DELAY=1"}, env...)...)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		client := httpapi.NewClient(p.url + "/agentik")
		info, _ := client.CreateConversation(ctx, agentik.CreateRequest{})
		conv, _ := client.Conversation(ctx, info.ID)
		s, err := conv.Events(ctx, agentik.LiveOnly)
		if err != nil {
			t.Fatal(err)
		}
		llm.Enqueue(llmtest.Text("hello"))
		id := postMessage(t, p.url, info.ID, "hi", "00-"+incomingTrace+"-"+incomingSpan+"-01")
		if r := waitEnd(t, s, id, p); r != agentik.EndCompleted {
			t.Fatalf("turn: %s", r)
		}
		s.Close()
		cancel()
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("no exit after SIGTERM\n%s", p.log())
		}
		if strings.Contains(p.log(), "tracing on") {
			t.Errorf("%v: tracing on\n%s", env, p.log())
		}
	}
	if spans, bad := rc.received(); len(spans) != 0 || len(bad) != 0 {
		t.Errorf("exported while off: %v %v", names(spans), bad)
	}
}

// TestTracesBadExporterVariable: an OTLP variable that cannot be used stops
// start-up, naming the variable and not its value (headers hold API keys).
func TestTracesBadExporterVariable(t *testing.T) {
	for _, bad := range []string{
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization: Bearer s3cret",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=5s",
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
	} {
		name, _, _ := strings.Cut(bad, "=")
		env := []string{"AGENTIK_PORT=0", "AGENTIK_HOST=127.0.0.1", "AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "a.db"),
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", bad}
		_, stderr, code := runCLI(t, env, "serve")
		if code == 0 || !strings.Contains(stderr, name) || strings.Contains(stderr, "s3cret") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant a failed start naming %s and not the value", bad, code, stderr, name)
		}
	}
}

// headerServer serves a go-sdk MCP server over Streamable HTTP with one
// tool, echo, and records the traceparent of each tools/call request.
func headerServer(t *testing.T) (url string, seen func() []string) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1.0"}, nil)
	type in struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echoes"},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var mu sync.Mutex
	var tps []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				mu.Lock()
				tps = append(tps, r.Header.Get("traceparent"))
				mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(tps)
	}
}

// traceparentOf is the W3C traceparent naming span s.
func traceparentOf(s *tracepb.Span) string {
	return "00-" + hex.EncodeToString(s.TraceId) + "-" + hex.EncodeToString(s.SpanId) + "-01"
}

// TestTracesPropagate: a turn's MCP HTTP call, its A2A call and its model
// calls carry the trace on; the remote agentik's turn is a child of the
// execute_tool span that called it (its A2A request's traceparent, read by
// the edge).
func TestTracesPropagate(t *testing.T) {
	rc := newOTLPReceiver(t)
	mcpURL, mcpSeen := headerServer(t)
	cfg := writeMCPConfig(t, `{"mcpServers":{"echo":{"type":"http","url":"`+mcpURL+`"}}}`)
	llmA := llmtest.NewServer()
	defer llmA.Close()
	llmB := llmtest.NewServer()
	defer llmB.Close()
	dir := t.TempDir()
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=20"}
	a := startProc(t, append(otel, "AGENTIK_DB_PATH="+filepath.Join(dir, "a.db"), "OPENAI_BASE_URL="+llmA.URL(),
		"AGENTIK_A2A_NAME=helper", "OTEL_SERVICE_NAME=helper")...)
	b := startProc(t, append(otel, "AGENTIK_DB_PATH="+filepath.Join(dir, "b.db"), "OPENAI_BASE_URL="+llmB.URL(),
		"AGENTIK_A2A_AGENTS="+a.url, "AGENTIK_MCP_CONFIG="+cfg, "AGENTIK_MCP_STARTUP_WAIT=20s")...)

	llmA.Enqueue(llmtest.Text("four"))
	llmB.Enqueue(llmtest.ToolCalls(llmtest.Call("echo", `{"text":"hi"}`), llmtest.Call("helper", `{"message":"2+2?"}`)), llmtest.Text("done"))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	client := httpapi.NewClient(b.url + "/agentik")
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
	id := postMessage(t, b.url, info.ID, "use both", "00-"+incomingTrace+"-"+incomingSpan+"-01")
	if r := waitEnd(t, s, id, b); r != agentik.EndCompleted {
		t.Fatalf("turn: %s\n%s", r, b.log())
	}
	spans := rc.wait(t, b, func(s []*tracepb.Span) bool { return countPrefix(s, "invoke_agent ") >= 2 })
	turn := turnSpan(t, spans, id)
	var echo, helper, remote *tracepb.Span
	for _, s := range children(spans, turn) {
		switch s.Name {
		case "execute_tool echo":
			echo = s
		case "execute_tool helper":
			helper = s
		}
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "invoke_agent ") && s != turn {
			remote = s
		}
	}
	if echo == nil || helper == nil || remote == nil {
		t.Fatalf("spans %v", names(spans))
	}
	if a := attrs(echo.Attributes); a["gen_ai.tool.type"] != "extension" {
		t.Errorf("MCP tool span: %v", a)
	}
	if got := mcpSeen(); len(got) != 1 || got[0] != traceparentOf(echo) {
		t.Errorf("MCP tools/call traceparent %q, want %q", got, traceparentOf(echo))
	}
	if !bytes.Equal(remote.TraceId, turn.TraceId) || !bytes.Equal(remote.ParentSpanId, helper.SpanId) {
		t.Errorf("remote turn: trace %x parent %x, want %x %x", remote.TraceId, remote.ParentSpanId, turn.TraceId, helper.SpanId)
	}
	var chats []*tracepb.Span
	for _, s := range children(spans, turn) {
		if strings.HasPrefix(s.Name, "chat ") {
			chats = append(chats, s)
		}
	}
	reqs := llmB.Requests()
	if len(reqs) != 2 || len(chats) != 2 {
		t.Fatalf("%d model requests, %d chat spans", len(reqs), len(chats))
	}
	for i, r := range reqs {
		if got := r.Header.Get("traceparent"); got != traceparentOf(chats[i]) {
			t.Errorf("model request %d traceparent %q, want %q", i, got, traceparentOf(chats[i]))
		}
	}
}

// TestTracesQueuedAndRestarted: a turn that waited behind another one, and
// a turn resumed after the process was killed, each start a trace of their
// own linked to the request that sent their message.
func TestTracesQueuedAndRestarted(t *testing.T) {
	rc := newOTLPReceiver(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	db := filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=20"}
	p := startProc(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
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
	tp := func(n int) string {
		return "00-" + incomingTrace + "-" + strings.Repeat("0", 15) + string(rune('0'+n)) + "-01"
	}

	gate := llmtest.NewGate()
	defer gate.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("first").Pause(gate).Finish("stop").Done(), llmtest.Text("second"))
	first := postMessage(t, p.url, info.ID, "one", tp(1))
	<-gate.Reached()
	second := postMessage(t, p.url, info.ID, "two", tp(2)) // queued behind the first
	gate.Release()
	waitEnd(t, s, first, p)
	waitEnd(t, s, second, p)
	rc.wait(t, p, func(s []*tracepb.Span) bool { return countPrefix(s, "invoke_agent ") >= 2 }) // before the kill

	cut := llmtest.NewGate()
	defer cut.Release()
	llm.Enqueue(llmtest.Stream().Role().Content("never").Pause(cut).Finish("stop").Done())
	third := postMessage(t, p.url, info.ID, "three", tp(3))
	<-cut.Reached()
	p.cmd.Process.Kill()
	<-p.done
	s.Close()

	llm.Enqueue(llmtest.Text("third, again"))
	p2 := startProc(t, env...)
	client2 := httpapi.NewClient(p2.url + "/agentik")
	conv2, _ := client2.Conversation(ctx, info.ID)
	s2, err := conv2.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	// The resumed turn starts before p2 serves, so it may be over before s2
	// subscribes: its end (live only) is then never seen, its answer is.
	if r := waitClosed(t, s2, third, p2); r != agentik.EndCompleted {
		t.Fatalf("resumed turn: %s", r)
	}

	spans := rc.wait(t, p2, func(s []*tracepb.Span) bool { return countPrefix(s, "invoke_agent ") >= 3 })
	if one := turnSpan(t, spans, first); hex.EncodeToString(one.ParentSpanId) != tp(1)[36:52] || len(one.Links) != 0 {
		t.Errorf("the first turn is not a child of its request: parent %x, links %v", one.ParentSpanId, one.Links)
	}
	for _, c := range []struct {
		id string
		n  int
	}{{second, 2}, {third, 3}} {
		sp := turnSpan(t, spans, c.id)
		if len(sp.ParentSpanId) != 0 || hex.EncodeToString(sp.TraceId) == incomingTrace {
			t.Errorf("turn %d: parent %x in trace %x, want a trace of its own", c.n, sp.ParentSpanId, sp.TraceId)
		}
		if len(sp.Links) != 1 || "00-"+hex.EncodeToString(sp.Links[0].TraceId)+"-"+hex.EncodeToString(sp.Links[0].SpanId)+"-01" != tp(c.n) {
			t.Errorf("turn %d links %v, want %s", c.n, sp.Links, tp(c.n))
		}
	}
}
