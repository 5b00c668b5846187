package main

import "fmt"

// evaluate compares the results with the targets of issues 11, 2, 24 and 23. A
// target whose phase did not run is reported as missing, never as met.
func evaluate(res *Results) []Target {
	var ts []Target
	add := func(issue, name, goal, unit string, value float64, ok, have bool) {
		ts = append(ts, Target{Issue: issue, Name: name, Goal: goal, Value: round3(value), Unit: unit, Met: have && ok, Missing: !have})
	}
	var added float64
	haveLat := res.Latency != nil
	if haveLat {
		added = res.Latency.Plain.AddedP50Ms
	}
	add("11", "added latency per turn, p50", "≤ 1 ms", "ms", added, added <= 1, haveLat)
	add("2", "added latency per turn, p50", "≤ 2 ms", "ms", added, added <= 2, haveLat)

	level := func(n int) (ConcurrencyLevel, bool) {
		for _, l := range res.Concurrency {
			if l.Conversations == n {
				return l, true
			}
		}
		return ConcurrencyLevel{}, false
	}
	l100, ok100 := level(100)
	add("11", "turns/s at 100 concurrent conversations (SQLite)", "≥ 1000", "turns/s", l100.TurnsPerSec, l100.TurnsPerSec >= 1000 && l100.Errors == 0, ok100 && res.Store == "sqlite")
	l20, ok20 := level(20)
	add("2", "turns/s at 20 concurrent conversations", "≥ 500", "turns/s", l20.TurnsPerSec, l20.TurnsPerSec >= 500 && l20.Errors == 0, ok20)

	point := func(n int) (LengthPoint, bool) {
		for _, p := range res.Length {
			if p.Messages == n {
				return p, true
			}
		}
		return LengthPoint{}, false
	}
	p10, ok10 := point(10)
	p100k, ok100k := point(100_000)
	var ratio float64
	if ok10 && ok100k && p10.Latency.P50Ms > 0 {
		ratio = p100k.Latency.P50Ms / p10.Latency.P50Ms
	}
	add("11", "turn latency p50 at 100,000 messages ÷ at 10 messages", "≤ 1.2", "×", ratio, ratio <= 1.2, ok10 && ok100k)

	var replay float64
	if res.Replay != nil {
		replay = res.Replay.Dist.P50Ms
	}
	add("11", fmt.Sprintf("replay of %s durable events, p50", "10,000"), "≤ 100 ms", "ms", replay, replay <= 100, res.Replay != nil && res.Replay.Events == 10_000)

	idleOK := res.Memory != nil && res.Server == "binary"
	var idle, perConv float64
	if res.Memory != nil {
		idle = float64(res.Memory.IdleRSSKB) / 1024
		perConv = res.Memory.PerConversationKB
	}
	add("11", "idle RSS", "≤ 30 MB", "MiB", idle, idle <= 30, idleOK)
	add("2", "idle RSS", "≤ 30 MB", "MiB", idle, idle <= 30, idleOK)
	add("11", "RSS per idle conversation", "≤ 20 KB", "KiB", perConv, perConv <= 20, idleOK)
	var idleSSE float64
	if res.Subscribers != nil {
		idleSSE = res.Subscribers.AboveIdleMiB
	}
	add("24", "1,000 idle SSE subscribers after an answer went through them, above idle", "≤ 40 MiB", "MiB", idleSSE, idleSSE <= 40,
		res.Subscribers != nil && res.Subscribers.Clients == 1000 && res.Server == "binary")

	// Issue 23: against the floor measured in the same run.
	var addedP99, addedTool float64
	if haveLat {
		addedP99, addedTool = res.Latency.Plain.AddedP99Ms, res.Latency.Tool.AddedP50Ms
	}
	add("23", "added latency per plain turn, p50", "≤ 0.8 ms", "ms", added, added <= 0.8, haveLat)
	add("23", "added latency per plain turn, p99", "≤ 3 ms", "ms", addedP99, addedP99 <= 3, haveLat)
	add("23", "added latency per turn with one tool call, p50", "≤ 1.5 ms", "ms", addedTool, addedTool <= 1.5, haveLat && res.Latency.Tool.Agentik.N > 0)
	for _, n := range []int{20, 100} {
		l, ok := level(n)
		add("23", fmt.Sprintf("turns/s at %d conversations ÷ the direct floor", n), "≥ 0.8", "×", l.OfDirect,
			l.OfDirect >= 0.8 && l.Errors == 0, ok && l.DirectTurnsPerSec > 0)
	}
	add("23", "server CPU per turn at 20 conversations", "≤ 0.6 ms", "ms", l20.ServerCPUPerTurnMs, l20.ServerCPUPerTurnMs <= 0.6, ok20)
	add("23", "replay of 10,000 durable events, p50", "≤ 60 ms", "ms", replay, replay <= 60, res.Replay != nil && res.Replay.Events == 10_000)
	add("23", "turn latency p50 at 100,000 messages ÷ at 10 messages", "≤ 1.1", "×", ratio, ratio <= 1.1, ok10 && ok100k)
	return ts
}
