package main

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The idle trim: a burst (a long answer streamed to many subscribers, a
// large import) leaves the Go heap holding memory nothing uses any more.
// The runtime gives it back slowly — it collects at least every 2 minutes
// and its scavenger returns freed pages a little at a time — so a server
// that went quiet after a burst keeps its peak for minutes. Once the
// process is quiet (it allocated less than trimQuiet in a trimEvery) after
// allocating at least trimBurst since its last trim, it collects and
// returns the free pages at once (debug.FreeOSMemory): once per burst, two
// collections where the runtime would have made one or more anyway for
// that much allocation.
// A busy process is never trimmed. AGENTIK_IDLE_TRIM=off turns it off (an
// operator who tunes GOGC or GOMEMLIMIT may want to).
const (
	trimEvery = 10 * time.Second
	trimQuiet = 4 << 20
	trimBurst = 24 << 20
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
	last heapSample
	mark uint64 // allocs at the last trim (or the start)
}

// tick takes a new sample and reports whether to trim now.
func (t *idleTrim) tick(now heapSample) bool {
	quiet := now.allocs-t.last.allocs < trimQuiet
	t.last = now
	if !quiet || now.allocs-t.mark < trimBurst {
		return false
	}
	t.mark = now.allocs
	return true
}

// runIdleTrim trims the heap of a quiet process until ctx ends.
func runIdleTrim(ctx context.Context, log *slog.Logger) {
	start := readHeap()
	t := &idleTrim{last: start, mark: start.allocs}
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
			// Two collections: what a pool kept (sync.Pool keeps its
			// objects one collection more) and goroutine stacks the burst
			// grew (shrunk at each collection) go too.
			runtime.GC()
			debug.FreeOSMemory()
			log.Debug("idle: the heap's free memory given back", "held_before", now.held, "live", now.live, "held_after", readHeap().held)
		}
	}
}
