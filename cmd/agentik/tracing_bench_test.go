package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// cpuOf is the CPU time (user + system, every thread) the process pid has
// used so far, from /proc/<pid>/stat, in clock ticks of 10 ms.
func cpuOf(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command name (which may hold spaces, in parentheses).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64) // field 14 of proc(5)
	stime, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkTracingCPU measures the CPU the agentik binary spends per tool
// turn (two model calls and a tool call over REST+SSE, on SQLite), with
// tracing off and on (every turn sampled, four spans each, exported over
// OTLP/HTTP to a receiver in the test process), in the same run. The
// figure is cpu-ms/turn of the agentik process alone: the scripted model
// and the receiver run in the test process and are not counted. Run with
// enough turns for the 10 ms ticks: -benchtime=1000x.
func BenchmarkTracingCPU(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run("tracing="+mode, func(b *testing.B) {
			llm := llmtest.NewServer()
			defer llm.Close()
			env := []string{"AGENTIK_DB_PATH=" + filepath.Join(b.TempDir(), "agentik.db"), "OPENAI_BASE_URL=" + llm.URL(), "AGENTIK_MESSAGES_PER_MINUTE=1000000"}
			var rc *otlpReceiver
			if mode == "on" {
				rc = newOTLPReceiver(b)
				env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rc.srv.URL, "OTEL_TRACES_SAMPLER=always_on")
			}
			p := startProc(b, env...)
			ctx := context.Background()
			client := httpapi.NewClient(p.url + "/agentik")
			info, err := client.CreateConversation(ctx, agentik.CreateRequest{})
			if err != nil {
				b.Fatal(err)
			}
			conv, _ := client.Conversation(ctx, info.ID)
			s, err := conv.Events(ctx, agentik.LiveOnly)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			turn := func() {
				llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", "{}")), llmtest.Text("it is now"))
				res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("what time is it?")}})
				if err != nil {
					b.Fatal(err)
				}
				for ev := range s.C() {
					if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
						return
					}
				}
				b.Fatalf("stream ended: %v", s.Err())
			}
			for range 20 { // warm up: connections, caches, the first export
				turn()
			}
			pid := p.cmd.Process.Pid
			before := cpuOf(b, pid)
			n := 0
			for b.Loop() {
				turn()
				n++
			}
			if rc != nil { // every turn was exported: the export's CPU is counted
				rc.wait(b, p, func(s []*tracepb.Span) bool { return countPrefix(s, "invoke_agent ") >= 20+n })
			}
			used := cpuOf(b, pid) - before
			b.ReportMetric(float64(used.Microseconds())/1000/float64(n), "cpu-ms/turn")
		})
	}
}
