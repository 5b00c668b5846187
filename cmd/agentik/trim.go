package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The idle trim: a burst (a long answer streamed to many subscribers, a
// large import) leaves the Go heap holding memory nothing uses any more.
// The runtime gives it back slowly — it collects at least every 2 minutes
// and its scavenger returns freed pages a little at a time — so a server
// that went quiet after a burst keeps its peak for minutes. Once the
// process is quiet (it allocated less than trimQuiet in a trimEvery) and
// the heap holds at least trimSpare more than what was live at the last
// collection, it collects and returns the free pages at once
// (debug.FreeOSMemory), then not again before the next burst. A busy
// process is never trimmed: its heap is in use. AGENTIK_IDLE_TRIM=off
// turns it off (an operator who tunes GOGC or GOMEMLIMIT may want to).
const (
	trimEvery = 10 * time.Second
	trimQuiet = 4 << 20
	trimSpare = 24 << 20
)

// heapSample is what the trim reads of the runtime.
type heapSample struct {
	allocs uint64 // bytes allocated since the start, cumulative
	held   uint64 // heap bytes held: objects, unused span space, free pages not returned
	live   uint64 // bytes live at the last collection
}

var heapMetrics = []string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/gc/heap/live:bytes",
}

func readHeap() heapSample {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return heapSample{allocs: v(0), held: v(1) + v(2) + v(3), live: v(4)}
}

// idleTrim decides, at each tick, whether to give the heap back.
type idleTrim struct {
	last    heapSample
	trimmed bool   // since the last burst
	mark    uint64 // allocs at the last trim
}

// tick takes a new sample and reports whether to trim now.
func (t *idleTrim) tick(now heapSample) bool {
	quiet := now.allocs-t.last.allocs < trimQuiet
	t.last = now
	if t.trimmed && now.allocs-t.mark >= trimSpare {
		t.trimmed = false // a burst since the last trim
	}
	if t.trimmed || !quiet || now.held < now.live+trimSpare {
		return false
	}
	t.trimmed, t.mark = true, now.allocs
	return true
}

// runIdleTrim trims the heap of a quiet process until ctx ends.
func runIdleTrim(ctx context.Context, log *slog.Logger) {
	t := &idleTrim{last: readHeap()}
	tk := time.NewTicker(trimEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		now := readHeap()
		if t.tick(now) {
			debug.FreeOSMemory()
			log.Debug("idle: the heap's free memory given back", "held_before", now.held, "live", now.live, "held_after", readHeap().held)
		}
	}
}
