package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	if o := res.OpenAI; o != nil {
		p("### 1b. Added latency of a streamed turn through the OpenAI-compatible and LangGraph doors\n\n| API | direct p50 | agentik p50 | added p50 | added p99 | over native p50 | n |\n|---|---|---|---|---|---|---|\n")
		for _, r := range []struct {
			name string
			l    DoorLatency
			over float64
		}{{"native REST+SSE", o.Native, 0}, {"/v1/chat/completions", o.Chat, o.ChatOverNativeP50Ms}, {"/v1/responses", o.Responses, o.ResponsesOverNativeP50Ms}, {"/langgraph runs/stream", o.LangGraph, o.LangGraphOverNativeP50Ms}} {
			p("| %s | %.3f ms | %.3f ms | %.3f ms | %.3f ms | **%+.3f ms** | %d |\n", r.name, r.l.Direct.P50Ms, r.l.Agentik.P50Ms, r.l.AddedP50Ms, r.l.AddedP99Ms, r.over, r.l.Agentik.N)
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
	if h := res.Hostile; h != nil {
		hostileMarkdown(p, h)
	}
	if c := res.Cluster; c != nil {
		clusterMarkdown(p, c)
	}
	if f := res.PGFloor; f != nil {
		floorMarkdown(p, f)
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

func mib(kb int64) float64 { return float64(kb) / 1024 }

// hostileMarkdown renders the hostile phase: one table per attempt, with
// the figures docs/reliability.md's hostile-caller table quotes.
func hostileMarkdown(p func(string, ...any), h *Hostile) {
	p("### 8. Hostile callers (issue 44)\n\nEach attempt on a fresh server with its default settings and two principals' tokens. Descriptors: entries of `/proc/<pid>/fd`; peak memory: `VmHWM`.\n\n")
	if s := h.SlowBodies; s != nil {
		p("**Slow bodies**: %d clients send headers with `Content-Length: %d`, %d bytes of the body, then nothing; each watched for %g s. Times from the last byte sent.\n\n",
			s.Clients, s.ContentLength, s.SentBytes, s.WindowSeconds)
		p("| route | clients | answered | status | answer p50 / max | closed by the server | close p50 / max |\n|---|---|---|---|---|---|---|\n")
		for _, r := range s.Routes {
			p("| `%s` (%s) | %d | %d | %s | %s | %d | %s |\n", r.Route, r.What, r.Clients, r.Answered, statuses(r.Statuses), p50Max(r.Answer), r.Closed, p50Max(r.Close))
		}
		p("| **all** | %d | **%d** | | %s | **%d** | %s |\n\n", s.Clients, s.Answered, p50Max(s.Answer), s.Closed, p50Max(s.Close))
		p("Server descriptors: idle **%d**, peak **%d** (every client connected before any sent), when the clients were done (or the window over, clients still connected) **%d**, after the clients hung up %d.\n\n",
			s.FDsIdle, s.FDsPeak, s.FDsEnd, s.FDsAfter)
	}
	if b := h.MCPBomb; b != nil {
		p("**MCP array**: `POST %s`, authenticated, a `tools/call` of `ask` whose arguments hold a %s-element array (%.1f MB body). RSS before: %.1f MiB (peak so far %.1f MiB).\n\n",
			b.Path, thousands(b.Elements), float64(b.BodyBytes)/1e6, mib(b.RSSBeforeKB), mib(b.HWMBeforeKB))
		p("| requests at once | statuses | JSON-RPC error | time | peak RSS after | above the peak before |\n|---|---|---|---|---|---|\n")
		for _, r := range []BombRound{b.One, b.Four} {
			st := map[int]int{}
			for _, s := range r.Statuses {
				st[s]++
			}
			codes := "none"
			if c := slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(r.Codes))), func(c string) bool { return c == "" }); len(c) > 0 {
				codes = strings.Join(c, ", ")
			}
			p("| %d | %s | %s | %.0f ms | %.1f MiB | **+%.1f MiB** |\n", r.Requests, statuses(st), codes, r.Ms, mib(r.HWMKB), mib(r.HWMKB-b.HWMBeforeKB))
		}
		p("\nRSS after both: %.1f MiB. The first answer: `%s`\n\n", mib(b.RSSAfterKB), strings.ReplaceAll(b.One.First, "`", "'"))
	}
	if h.Metadata != nil || h.Approval != nil {
		p("**Large context and arguments** (REST):\n\n| attempt | status | RSS before | peak RSS before → after | RSS after |\n|---|---|---|---|---|\n")
		for _, r := range []struct {
			what string
			b    *BigPayload
		}{{"a message whose `context.metadata` holds %.0f MiB", h.Metadata}, {"an approval whose edited arguments hold %.0f MiB", h.Approval}} {
			if r.b == nil {
				continue
			}
			st := strconv.Itoa(r.b.Status)
			if r.b.Code != "" {
				st += " " + r.b.Code
			}
			p("| "+r.what+" | **%s** | %.1f MiB | %.1f → %.1f MiB | %.1f MiB |\n", float64(r.b.Bytes)/(1<<20), st, mib(r.b.RSSBeforeKB), mib(r.b.HWMBeforeKB), mib(r.b.HWMAfterKB), mib(r.b.RSSAfterKB))
		}
		p("\n")
	}
	if f := h.IRC; f != nil {
		p("**IRC flood**: %s connections from %s that never register (held open), then a login with a token from %s.\n\n", thousands(f.Connections), f.From, f.Other)
		p("| kept open | refused with `ERROR` | closed without a word | descriptors idle / peak / after | login from %s |\n|---|---|---|---|---|\n", f.Other)
		login := "**refused**"
		if f.OtherRegistered {
			login = "**registered**"
		}
		p("| **%d** | %d | %d | %d / **%d** / %d | %s: `%s` |\n", f.Accepted, f.Refused, f.ClosedSilently, f.FDsIdle, f.FDsPeak, f.FDsAfter, login, f.OtherReply)
		for _, r := range slices.Sorted(maps.Keys(f.Reasons)) {
			p("\n`%s`: %d", r, f.Reasons[r])
		}
		p("\n\n")
	}
}

func statuses(m map[int]int) string {
	if len(m) == 0 {
		return "—"
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d ×%d", st, m[st]))
	}
	return strings.Join(parts, ", ")
}

func p50Max(d Dist) string {
	if d.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f / %.1f ms", d.P50Ms, d.MaxMs)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
