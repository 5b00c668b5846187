package main

import (
	"fmt"
	"strings"
)

// markdown renders the results as the tables of docs/benchmarks.md, so the
// published figures are copied by the tool, not by hand.
func markdown(res *Results) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := res.Machine
	p("Run %s (%s mode, %s server, %s): %d CPUs (%s), %.1f GiB RAM, Linux %s, %s; load average (1 min) %.2f at the start, %.2f at the end.\n\n",
		res.Started, res.Mode, res.Server, res.Store, m.CPUs, m.CPUModel, float64(m.MemTotalKB)/(1<<20), m.Kernel, m.GoVersion, m.LoadStart, m.LoadEnd)
	p("Model: scripted (llmtest), time to first token %g ms, %g ms between chunks, answers of %d deltas.\n\n", res.Model.TTFTMs, res.Model.ChunkDelayMs, res.Model.AnswerDeltas)

	if res.Latency != nil {
		p("### 1. Added latency per turn\n\n| turn | direct p50 | direct p99 | agentik p50 | agentik p99 | added p50 | added p99 | 202 ack p50 | server CPU per turn | n |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range []struct {
			name string
			l    LatencyPair
		}{{"plain", res.Latency.Plain}, {"one tool call", res.Latency.Tool}} {
			p("| %s | %.3f ms | %.3f ms | %.3f ms | %.3f ms | **%.3f ms** | %.3f ms | %.3f ms | %.3f ms | %d |\n", r.name, r.l.Direct.P50Ms, r.l.Direct.P99Ms, r.l.Agentik.P50Ms, r.l.Agentik.P99Ms, r.l.AddedP50Ms, r.l.AddedP99Ms, r.l.Ack.P50Ms, r.l.ServerCPUPerTurnMs, r.l.Agentik.N)
		}
		p("\n")
	}
	if len(res.Concurrency) > 0 {
		p("### 2. Throughput and latency under concurrency\n\n| conversations | turns/s | p50 | p99 | turns | window | errors | server CPU per turn | direct (floor) | of the floor |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, l := range res.Concurrency {
			direct, of := "—", "—"
			if l.DirectTurnsPerSec > 0 {
				direct, of = fmt.Sprintf("%.0f/s", l.DirectTurnsPerSec), fmt.Sprintf("%.0f %%", 100*l.OfDirect)
			}
			p("| %d | **%.0f** | %.1f ms | %.1f ms | %d | %.1f s | %d | %.3f ms | %s | %s |\n", l.Conversations, l.TurnsPerSec, l.Latency.P50Ms, l.Latency.P99Ms, l.Turns, l.Seconds, l.Errors, l.ServerCPUPerTurnMs, direct, of)
		}
		p("\n![latency vs concurrency](bench-concurrency.svg)\n\n")
	}
	if len(res.Relay) > 0 {
		p("### 3. Token relay\n\n| SSE clients | deltas in the answer | delivered (min per client) | deltas/s, all clients | deltas/s, one client | model alone |\n|---|---|---|---|---|---|\n")
		for _, r := range res.Relay {
			model := "—"
			if r.ModelDeltasPerSec > 0 {
				model = fmt.Sprintf("%.0f/s", r.ModelDeltasPerSec)
			}
			p("| %d | %d | %d | **%.0f** | %.0f | %s |\n", r.Clients, r.DeltasSent, r.DeliveredMin, r.DeltasPerSec, r.PerClientDeltasPerSec, model)
		}
		p("\n")
	}
	if len(res.Length) > 0 {
		p("### 4. Turn latency vs conversation length\n\n| journal messages | p50 | p99 | first turn (loads the conversation) | server start-up |\n|---|---|---|---|---|\n")
		for _, l := range res.Length {
			p("| %d | **%.3f ms** | %.3f ms | %.3f ms | %.1f ms |\n", l.Messages, l.Latency.P50Ms, l.Latency.P99Ms, l.FirstTurnMs, l.StartupMs)
		}
		p("\n![latency vs conversation length](bench-length.svg)\n\n")
	}
	if res.Replay != nil {
		d := res.Replay.Dist
		p("### 5. Replay to a reconnecting client\n\n%d durable events, `after=0`, request to last event: p50 **%.1f ms**, min %.1f ms, p99 %.1f ms (%d runs); server CPU %.1f ms per replay.\n\n", res.Replay.Events, d.P50Ms, d.MinMs, d.P99Ms, d.N, res.Replay.ServerCPUMs)
	}
	if mem := res.Memory; mem != nil {
		p("### 6. Memory (VmRSS of the server process)\n\n| state | RSS | per item |\n|---|---|---|\n")
		p("| idle, just started | **%.1f MiB** | |\n", float64(mem.IdleRSSKB)/1024)
		if mem.IdleAnonKB > 0 {
			p("| of which anonymous (heap, stacks) / file-backed (the binary) | %.1f / %.1f MiB | |\n", float64(mem.IdleAnonKB)/1024, float64(mem.IdleFileKB)/1024)
		}
		p("| after 30 warm-up turns | %.1f MiB | |\n", float64(mem.WarmRSSKB)/1024)
		p("| + %d idle conversations (one answered turn each) | %.1f MiB | **%.1f KiB** per conversation |\n", mem.IdleConversations, float64(mem.RSSWithConvsKB)/1024, mem.PerConversationKB)
		p("| + %d SSE clients on one conversation | %.1f MiB | %.1f KiB per client |\n", mem.SSEClients, float64(mem.RSSWithClientsKB)/1024, mem.PerSSEClientKB)
		if mem.WSClients > 0 {
			p("| + %d WebSocket clients on that conversation (SSE clients still open) | %.1f MiB | %.1f KiB per client |\n", mem.WSClients, float64(mem.RSSWithWSClientsKB)/1024, mem.PerWSClientKB)
		}

		p("\n")
	}
	if s := res.Subscribers; s != nil {
		p("### 6b. Idle SSE subscribers after traffic (fresh server)\n\n| state | RSS |\n|---|---|\n")
		p("| idle | %.1f MiB |\n| + %d SSE clients on one conversation | %.1f MiB |\n", float64(s.IdleRSSKB)/1024, s.Clients, float64(s.ConnectedRSSKB)/1024)
		p("| the same clients idle, %.0f s after a %d-delta answer reached each | %.1f MiB: **%.1f MiB above idle** |\n\n", s.SettleSeconds, s.Deltas, float64(s.AfterRSSKB)/1024, s.AboveIdleMiB)
	}
	if res.Startup != nil || res.Binary != nil {
		p("### 7. Start-up and binary\n\n")
		if res.Startup != nil {
			p("Start-up to a healthy server on a fresh database: p50 **%.1f ms** (min %.1f, max %.1f, %d runs).\n", res.Startup.Dist.P50Ms, res.Startup.Dist.MinMs, res.Startup.Dist.MaxMs, res.Startup.Dist.N)
		}
		if res.Binary != nil {
			p("Binary (`go build`, pure Go): **%.1f MiB**.\n", float64(res.Binary.SizeBytes)/(1<<20))
		}
		p("\n")
	}
	p("### Targets\n\n| issue | target | goal | this run | |\n|---|---|---|---|---|\n")
	for _, t := range res.Targets {
		state := "met"
		switch {
		case t.Missing:
			state = "not measured"
		case !t.Met:
			state = "**missed**"
		}
		p("| %s | %s | %s | %v %s | %s |\n", t.Issue, t.Name, t.Goal, t.Value, t.Unit, state)
	}
	for _, n := range res.Notes {
		p("\nNote: %s\n", n)
	}
	return b.String()
}
