package openai

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// claimWait bounds how long an early call waits for the turn that takes it
// over: the engine starts one only for a turn that runs right after its
// message commits, and drops it otherwise; this is the safety net.
const claimWait = 30 * time.Second

// early is a call sent by StartEarly. Its request goes out on its own
// goroutine, which ends when the response's headers come (or the request
// fails); the body waits, unread, in the connection for the turn that
// takes the call over, so nothing of it is decoded or delivered before.
type early struct {
	l     *LLM
	body  []byte
	c     *call
	sent  chan struct{} // closed when c.send returned
	claim *time.Timer   // drops the call if nothing took it over in time
	once  sync.Once     // taken over or dropped, whichever comes first
}

var _ agentik.EarlyStarter = (*LLM)(nil)

// StartEarly sends req's call now; see agentik.EarlyStarter.
func (l *LLM) StartEarly(ctx context.Context, req agentik.ModelRequest) agentik.EarlyCall {
	body, err := l.body(req)
	if err != nil {
		return nil // Generate reports it
	}
	e := &early{l: l, body: body, c: l.newCall(ctx), sent: make(chan struct{})}
	e.claim = time.AfterFunc(claimWait, e.Cancel)
	l.early.Go(func() {
		defer close(e.sent)
		e.c.send(l, body)
		if e.c.err == nil {
			// The body waits for the turn: not silence of the endpoint.
			e.c.watchdog.Stop()
		}
	})
	return e
}

// Cancel drops the call unless it was taken over. The ended context makes
// net/http close its connection.
func (e *early) Cancel() {
	e.once.Do(func() {
		e.claim.Stop()
		e.c.close()
	})
}

// Generate takes the call over when req is the request sent; otherwise it
// drops it and calls anew. Either way it is the LLM's Generate.
func (e *early) Generate(ctx context.Context, req agentik.ModelRequest, onDelta func(agentik.ModelDelta)) (agentik.ModelResponse, error) {
	taken := false
	e.once.Do(func() {
		taken = true
		e.claim.Stop()
	})
	// The request is written to be compared with the one sent: into a
	// buffer of the pool, kept only when it is to be sent instead.
	buf := scratchPool.Get().(*[]byte)
	scratch, err := e.l.appendBody((*buf)[:0], req)
	same := err == nil && taken && bytes.Equal(scratch, e.body)
	var body []byte
	if !same && err == nil {
		body = bytes.Clone(scratch)
	}
	if cap(scratch) <= maxScratch {
		*buf = scratch[:0]
		scratchPool.Put(buf)
	}
	switch {
	case err != nil:
		e.c.close() // taken or not: Cancel would do nothing once taken
		return agentik.ModelResponse{}, fmt.Errorf("openai: build request: %w", err)
	case !taken: // dropped already
		return e.l.generate(ctx, body, nil, onDelta)
	case !same:
		e.c.close()
		return e.l.generate(ctx, body, nil, onDelta)
	}
	return e.l.generate(ctx, e.body, e, onDelta)
}

// scratchPool holds the buffers early.Generate writes a request into to
// compare it with the one sent (a turn's second copy of its request, about
// 5 % of the bytes it allocated); maxScratch bounds what it keeps.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 1 << 20

// finish is the taken-over call's attempt: ctx, the turn's, now ends it
// too, and its response is read as attempt reads one.
func (e *early) finish(ctx context.Context, onDelta func(agentik.ModelDelta)) (resp agentik.ModelResponse, started bool, err error) {
	c := e.c
	defer c.close()
	c.unlink = context.AfterFunc(ctx, func() { c.cancel(context.Cause(ctx)) })
	defer c.unlink()
	<-e.sent // ends soon after ctx does: the request's context is cancelled
	c.watchdog.Reset(e.l.opts.Timeout)
	return e.l.stream(ctx, c, onDelta)
}
