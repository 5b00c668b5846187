package llmtest

import "sync"

// Gate lets a test meet a streaming reply at a Pause step without sleeping:
// the server closes Reached when it gets there, and waits until the test
// calls Release. A Gate is single-use; Release before Reached lets the step
// pass straight through. Safe for concurrent use.
type Gate struct {
	reached, released, abandoned chan struct{}
	reachOnce, relOnce, abOnce   sync.Once
}

// NewGate returns a fresh gate.
func NewGate() *Gate {
	return &Gate{reached: make(chan struct{}), released: make(chan struct{}), abandoned: make(chan struct{})}
}

// Reached is closed once a reply arrives at the gate.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// Release lets the paused reply continue. Idempotent.
func (g *Gate) Release() { g.relOnce.Do(func() { close(g.released) }) }

// Abandoned is closed when the client went away (cancelled the request,
// closed the connection) while the reply waited at the gate.
func (g *Gate) Abandoned() <-chan struct{} { return g.abandoned }

func (g *Gate) reach()   { g.reachOnce.Do(func() { close(g.reached) }) }
func (g *Gate) abandon() { g.abOnce.Do(func() { close(g.abandoned) }) }
