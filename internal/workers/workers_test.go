package workers

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// goid identifies the goroutine running it (the first line of its stack).
func goid() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	for i := len("goroutine "); i < len(b); i++ {
		if b[i] == ' ' {
			return string(b[:i])
		}
	}
	return string(b)
}

// parked waits until goroutine id (as goid names it) is parked in a select.
func parked(t *testing.T, id string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.Stack(buf, true)
		if strings.Contains(string(buf[:n]), id+" [select") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never parked in a select", id)
		}
		runtime.Gosched()
	}
}

// TestReuse: a task started once a worker waits runs on that worker.
func TestReuse(t *testing.T) {
	p := New(time.Hour)
	defer p.Close()
	idle := make(chan struct{}, 1)
	p.onIdle = func() { idle <- struct{}{} }
	ids := make(chan string, 1)
	p.Go(func() { ids <- goid() })
	first := <-ids
	<-idle
	// onIdle runs before the worker's select: a Go in between finds no
	// receiver and starts a worker (a flake seen in CI). Wait until the
	// worker is parked in it.
	parked(t, first)
	p.Go(func() { ids <- goid() })
	if second := <-ids; second != first {
		t.Fatalf("the second task ran on %s, not on the idle worker %s", second, first)
	}
}

// TestBusyStartsWorker: tasks given while every worker is busy run at once,
// side by side, on workers of their own.
func TestBusyStartsWorker(t *testing.T) {
	p := New(time.Hour)
	defer p.Close()
	const n = 8
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for range n {
		p.Go(func() { started.Done(); release.Wait() })
	}
	started.Wait() // all n run together: none waited for another
	release.Done()
}

// TestIdleExit: a worker exits once idle for its time, and at Close; then
// no worker takes a task.
func TestIdleExit(t *testing.T) {
	for _, c := range []struct {
		name  string
		idle  time.Duration
		close bool
	}{{"idle time", time.Millisecond, false}, {"close", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			p := New(c.idle)
			exited := make(chan struct{})
			p.onExit = func() { close(exited) }
			ran := make(chan struct{})
			p.Go(func() { close(ran) })
			<-ran
			if c.close {
				p.Close()
				p.Close() // idempotent
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatal("the worker did not exit")
			}
			select {
			case p.work <- func() {}:
				t.Fatal("a worker took a task after the last one exited")
			default:
			}
		})
	}
}

// TestRunsAfterClose: a task given after Close still runs.
func TestRunsAfterClose(t *testing.T) {
	p := New(time.Hour)
	p.Close()
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
}
