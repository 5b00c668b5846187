package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
)

// loadConfig is the shape of a load run. CI runs the short default; the
// full run is documented in docs/reliability.md:
//
//	AGENTIK_LOAD=60s AGENTIK_LOAD_SUBSCRIBERS=1000 AGENTIK_LOAD_CONVERSATIONS=100 \
//	  go test -run TestLoad -v -timeout 10m ./reliability/
type loadConfig struct {
	duration      time.Duration
	subscribers   int
	conversations int
}

func loadFromEnv(t *testing.T) loadConfig {
	c := loadConfig{duration: 3 * time.Second, subscribers: 100, conversations: 10}
	if v := os.Getenv("AGENTIK_LOAD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("AGENTIK_LOAD: %v", err)
		}
		c.duration = d
	}
	for _, e := range []struct {
		name string
		v    *int
	}{{"AGENTIK_LOAD_SUBSCRIBERS", &c.subscribers}, {"AGENTIK_LOAD_CONVERSATIONS", &c.conversations}} {
		if v := os.Getenv(e.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s: %q", e.name, v)
			}
			*e.v = n
		}
	}
	if c.subscribers < c.conversations {
		c.subscribers = c.conversations
	}
	return c
}

// TestLoad runs turns in every conversation as fast as the machine answers
// them (one driver per conversation: send, wait for the end, send again)
// while subscribers follow every conversation over SSE. Every subscriber
// must receive its conversation's durable events complete and gap-free, no
// request may fail, and goroutines and heap must return to their baseline
// once everything is closed. It reports the turn rate, p50/p99 latency from
// the 202 to the end event, and peak RSS of the test process.
func TestLoad(t *testing.T) {
	cfg := loadFromEnv(t)
	model := llmtest.NewServer()
	defer func() {
		if model != nil {
			model.Close()
		}
	}()
	s := newServer(t, serverOptions{llm: model})
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Stream().Role().Content("the ", "answer ", "to ", r.LastUserText()).Finish("stop").Usage(10, 4).Done()
	})
	convs := make([]string, cfg.conversations)
	for i := range convs {
		convs[i] = s.createConversation(t)
	}
	plainClient.CloseIdleConnections()
	goroutines0, heap0 := settle()

	ctx, cancel := context.WithTimeout(context.Background(), cfg.duration+2*time.Minute)
	defer cancel()
	lasts := make([]atomic.Value, len(convs)) // never set: subscribers follow until stopped
	for i := range lasts {
		lasts[i].Store("")
	}
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	subs := make([]*subscriber, cfg.subscribers)
	var subsWG sync.WaitGroup
	for i := range subs {
		subs[i] = &subscriber{}
		ci := i % len(convs)
		subsWG.Add(1)
		go func() { defer subsWG.Done(); subs[i].follow(subCtx, s.url, convs[ci], 0, &lasts[ci]) }()
	}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
	)
	lastIDs := make([]string, len(convs)) // each driver's last message
	stop := time.Now().Add(cfg.duration)
	var drivers sync.WaitGroup
	for ci, conv := range convs {
		drivers.Add(1)
		go func() {
			defer drivers.Done()
			watch, err := dialSSE(ctx, s.url, "/agentik/conversations/"+conv+"/events", -1)
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			defer watch.close()
			for n := 0; time.Now().Before(stop); n++ {
				start := time.Now()
				r := do(t, "POST", s.url+"/agentik/conversations/"+conv+"/messages", []byte(fmt.Sprintf(`{"content":[{"type":"text","text":"c%d m%d"}]}`, ci, n)))
				if r.status != 202 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("send: %d %s", r.status, r.body))
					mu.Unlock()
					return
				}
				id := string(r.body[strings.Index(string(r.body), `"message_id":"`)+14:][:36])
				for {
					ev, err := watch.next()
					if err != nil {
						mu.Lock()
						failures = append(failures, "driver stream: "+err.Error())
						mu.Unlock()
						return
					}
					if endOf(id)(ev) {
						if endReason(ev) != "completed" {
							mu.Lock()
							failures = append(failures, "turn ended "+endReason(ev))
							mu.Unlock()
						}
						break
					}
				}
				mu.Lock()
				latencies = append(latencies, time.Since(start))
				mu.Unlock()
				lastIDs[ci] = id
			}
		}()
	}
	drivers.Wait()
	elapsed := cfg.duration
	// Every turn has ended: the subscribers are done once each has received
	// its conversation's latest cursor (or do not get there: reported below).
	want := make([][]int64, len(convs))
	for ci, conv := range convs {
		want[ci] = s.storedCursors(t, conv, 0)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < len(subs) && time.Now().Before(deadline); {
		w := want[i%len(convs)]
		if len(w) == 0 || subs[i].latest.Load() >= w[len(w)-1] {
			i++
			continue
		}
		time.Sleep(10 * time.Millisecond) // polling the subscribers' progress
	}
	stopSubs()
	subsWG.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	var incomplete int
	for i, sub := range subs {
		if errors.Is(sub.err, context.Canceled) {
			sub.err = nil // stopped by stopSubs
		}
		if err := sub.check(want[i%len(convs)]); err != nil {
			if incomplete++; incomplete <= 5 {
				t.Errorf("subscriber %d: %v", i, err)
			}
		}
	}
	if incomplete > 0 {
		t.Fatalf("%d of %d subscribers missed or repeated durable events", incomplete, len(subs))
	}
	var resumed int
	for _, sub := range subs {
		resumed += sub.reconnects
	}
	peak := peakRSS()
	cancel()
	plainClient.CloseIdleConnections() // the test's own keep-alive connections
	// The scripted model keeps every request it was sent; it is no part of
	// the server whose heap is measured.
	model.Close()
	model, s.llm = nil, nil
	goroutines1, heap1 := settleTo(goroutines0)
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		return latencies[int(p*float64(len(latencies)-1))].Round(100 * time.Microsecond)
	}
	if len(latencies) == 0 {
		t.Fatal("no turn completed")
	}
	t.Logf("load: %d conversations, %d SSE subscribers, %v: %d turns = %.1f turns/s; latency 202→end p50 %v p99 %v max %v; %d subscriber resumes; peak RSS %.0f MiB (test process: server and clients)",
		len(convs), len(subs), elapsed, len(latencies), float64(len(latencies))/elapsed.Seconds(), pct(0.50), pct(0.99), latencies[len(latencies)-1].Round(time.Millisecond), resumed, float64(peak)/(1<<20))
	t.Logf("baseline: goroutines %d → %d after; heap %.1f MiB → %.1f MiB after", goroutines0, goroutines1, float64(heap0)/(1<<20), float64(heap1)/(1<<20))
	for _, c := range convs {
		if n := s.bus.Subscribers(c); n > 0 {
			t.Errorf("conversation %s: %d bus subscribers left", c, n)
			break
		}
	}
	if goroutines1 > goroutines0+5 {
		t.Errorf("goroutines did not return to baseline: %d → %d\n%s", goroutines0, goroutines1, stacks())
	}
	if p := os.Getenv("AGENTIK_LOAD_HEAP_PROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	if heap1 > heap0+32<<20 {
		t.Errorf("heap did not return to baseline: %.1f MiB → %.1f MiB", float64(heap0)/(1<<20), float64(heap1)/(1<<20))
	}
}

// settle collects garbage and returns the goroutine count and live heap.
func settle() (int, uint64) {
	// Twice: what sync.Pools hold survives one collection in their victim
	// caches.
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m.HeapAlloc
}

// settleTo waits (up to 10 s) for goroutines to wind down to the baseline:
// closed connections and streams end asynchronously.
func settleTo(baseline int) (int, uint64) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, h := settle()
		if g <= baseline || time.Now().After(deadline) {
			return g, h
		}
		time.Sleep(50 * time.Millisecond) // polling: there is nothing to wait on for "all goroutines ended"
	}
}

// peakRSS is VmHWM of this process in bytes (0 where /proc is missing).
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
