package main

import (
	"runtime"
	"testing"
)

// The trim gives memory back once a process goes quiet after a burst,
// once per burst, and never while it allocates.
func TestIdleTrimDecides(t *testing.T) {
	const mb = 1 << 20
	tr := &idleTrim{last: heapSample{allocs: 100 * mb}, mark: 100 * mb}
	steps := []struct {
		what string
		now  heapSample
		want bool
	}{
		{"quiet, little allocated", heapSample{allocs: 102 * mb}, false},
		{"busy: allocating", heapSample{allocs: 300 * mb}, false},
		{"quiet after the burst", heapSample{allocs: 301 * mb}, true},
		{"still quiet: trimmed already", heapSample{allocs: 303 * mb}, false},
		{"small allocations since", heapSample{allocs: 320 * mb}, false},
		{"quiet, less than a burst since the trim", heapSample{allocs: 322 * mb}, false},
		{"a new burst", heapSample{allocs: 400 * mb}, false},
		{"quiet after it", heapSample{allocs: 401 * mb}, true},
	}
	for _, st := range steps {
		if got := tr.tick(st.now); got != st.want {
			t.Fatalf("%s: trim %v, want %v", st.what, got, st.want)
		}
	}
}

// readHeap reads every metric it names: a name the runtime does not know
// would read as zero and never trim.
func TestReadHeapKnowsItsMetrics(t *testing.T) {
	runtime.GC()
	h := readHeap()
	if h.allocs == 0 || h.held == 0 || h.live == 0 {
		t.Fatalf("heap sample %+v", h)
	}
	trimSink = make([]byte, 1<<20)
	if readHeap().allocs <= h.allocs {
		t.Fatal("allocations not counted")
	}
}

var trimSink []byte
