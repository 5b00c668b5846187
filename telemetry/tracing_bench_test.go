package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/telemetry"
)

// cpuTime is the CPU (user + system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurnSpans is the tracing work of one tool turn as the engine
// does it — invoke_agent, chat, execute_tool, chat, every span sampled —
// exported over OTLP/HTTP to a receiver that reads and drops the
// requests. cpu-us/turn is the CPU of the whole process per turn, the
// batch export included (the receiver's reading too, so an upper bound).
func BenchmarkTurnSpans(b *testing.B) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	b.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	b.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "10000000") // no span dropped: every export is counted
	ctx := context.Background()
	tr, err := telemetry.NewTracing(ctx, func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}[k] }, "bench")
	if err != nil || tr == nil {
		b.Fatal(err)
	}
	t := tr.Agent(agentik.AgentInfo{ID: "agentik", Name: "Agentik", Version: "bench"}, telemetry.ProviderOpenAI)
	req := &agentik.ModelRequest{System: "be brief", Messages: []agentik.ModelMessage{{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text("what time is it?")}}}}
	call := agentik.ToolCall{ID: "call_1", Name: "current_time", Arguments: agentik.RawJSON("{}")}
	resp := &agentik.ModelResponse{Text: "it is now", Tokens: agentik.TurnTokens{Input: 10, Output: 3}, FinishReason: "stop", ID: "chatcmpl-1", Model: "gpt-4o-mini"}
	res := &agentik.ToolResult{Content: []agentik.Content{agentik.Text("12:00")}}
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	before := cpuTime(b)
	n := 0
	for b.Loop() {
		tctx, turn := t.StartTurn(ctx, agentik.TurnTrace{ConversationID: "conv", ReplyTo: "msg", TraceParent: tp})
		_, chat := t.StartModelCall(tctx, agentik.ModelTrace{ConversationID: "conv", Model: "gpt-4o-mini", Request: req})
		chat.End(agentik.SpanEnd{Outcome: "ok", Response: resp})
		_, tool := t.StartToolCall(tctx, agentik.ToolTrace{ConversationID: "conv", Call: call, Source: "builtin"})
		tool.End(agentik.SpanEnd{Result: res})
		_, chat = t.StartModelCall(tctx, agentik.ModelTrace{ConversationID: "conv", Model: "gpt-4o-mini", Request: req})
		chat.End(agentik.SpanEnd{Outcome: "ok", Response: resp})
		turn.End(agentik.SpanEnd{Outcome: "completed", Tokens: agentik.TurnTokens{Input: 20, Output: 8}})
		n++
	}
	if err := tr.Shutdown(ctx); err != nil { // exports the rest: counted
		b.Fatal(err)
	}
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(n), "cpu-us/turn")
	if got.Load() == 0 {
		b.Fatal("nothing exported")
	}
}
