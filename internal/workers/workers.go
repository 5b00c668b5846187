// Package workers runs tasks on goroutines that outlive them.
//
// A task started on a fresh goroutine begins on a small stack and, when it
// goes deep (a turn loop through the model client, the HTTP transport and
// SQLite), grows it by copying it at every doubling. A server that starts
// such a task per turn pays that again every turn: 2 % of its CPU at 20
// conversations for the turn loops alone. A Pool's worker that finished a
// task waits a while for the next one, with the stack it has.
package workers

import (
	"sync"
	"time"
)

// Pool hands tasks to idle workers, starting one when none waits.
type Pool struct {
	idle time.Duration // how long a worker waits for a task before it exits
	work chan func()   // unbuffered: a send succeeds only into a waiting worker
	done chan struct{} // closed by Close: idle workers exit
	once sync.Once

	// Test hooks: a worker is about to wait for a task; a worker exits.
	onIdle, onExit func()
}

// Idle is how long a worker waits for its next task: enough to carry a
// busy server from one turn to the next, short enough that a quiet one
// keeps no goroutine around.
const Idle = time.Second

// New returns a Pool whose workers exit after idle without a task.
func New(idle time.Duration) *Pool {
	return &Pool{idle: idle, work: make(chan func()), done: make(chan struct{})}
}

// Go runs f on an idle worker, or on a new one when none waits. It never
// blocks, and f runs even after Close (its worker then exits with it).
func (p *Pool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

// Close makes the idle workers exit now, and the busy ones when their task
// ends. Idempotent.
func (p *Pool) Close() {
	p.once.Do(func() { close(p.done) })
}

func (p *Pool) worker(f func()) {
	t := time.NewTimer(p.idle)
	defer t.Stop()
	if p.onExit != nil {
		defer p.onExit()
	}
	for {
		f()
		f = nil // not kept alive while idle
		t.Reset(p.idle)
		if p.onIdle != nil {
			p.onIdle()
		}
		select {
		case f = <-p.work:
		case <-t.C:
			return
		case <-p.done:
			return
		}
	}
}
