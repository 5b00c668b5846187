package engine

import (
	"context"
	"sync"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/tokens"
	"github.com/agentik/agentik/tools"
)

// The early model call (agentik.EarlyStarter). A turn's next model call is
// sent while what it answers commits — the user's message (conv.send), or a
// tool round's results (turnRun.runCalls) — so the request travels during
// the commit instead of after it. The turn takes the call over when its own
// request is the same (the LLM compares them), and every call that no turn
// takes is cancelled, so none is paid for to the end.
//
// Two places hold one: the conversation (conv.early, the call of the turn
// that answers a message just sent, until its loop starts that turn) and a
// running turn (turn.early, the call of its first or next model call).

// earlyCall holds at most one model call sent early, for the turn answering
// user message id. The zero value holds none. It is not safe for concurrent
// use: the conversation's is guarded by conv.mu, a turn's is its loop's.
type earlyCall struct {
	id   string            // the user message whose turn makes the call
	call agentik.EarlyCall // nil: none held
}

// hold keeps next, a call just started, in place of the one held, which is
// cancelled unless it is next's turn's. A zero next changes nothing.
func (ec *earlyCall) hold(next earlyCall) {
	if next.call == nil {
		return
	}
	ec.take(next.id)
	*ec = next
}

// take hands over the call held for the turn answering id and empties ec;
// a call held for another turn is cancelled and the zero earlyCall
// returned.
func (ec *earlyCall) take(id string) earlyCall {
	held := *ec
	*ec = earlyCall{}
	if held.call == nil || held.id == id {
		return held
	}
	held.call.Cancel()
	return earlyCall{}
}

// generateFunc is agentik.LLM's Generate.
type generateFunc = func(context.Context, agentik.ModelRequest, func(agentik.ModelDelta)) (agentik.ModelResponse, error)

// use returns what the model call about to be made generates with: the
// held call's Generate, once (ec is emptied), or generate when none is held.
func (ec *earlyCall) use(generate generateFunc) generateFunc {
	if ec.call == nil {
		return generate
	}
	call := ec.call
	*ec = earlyCall{}
	return call.Generate
}

// drop cancels the call held, if any, and empties ec.
func (ec *earlyCall) drop() {
	if ec.call != nil {
		ec.call.Cancel()
	}
	*ec = earlyCall{}
}

// dropFor is drop when the call held is the one of the turn answering id.
func (ec *earlyCall) dropFor(id string) {
	if ec.id == id {
		ec.drop()
	}
}

// startEarly sends the model call that the turn answering entry (the entry
// of user message id) will make, as it will make it, so the request travels
// while the message commits; the turn takes the call over if its request is
// the same (the LLM compares them). Only for an idle conversation whose
// working memory is loaded, not while tracing (the call's span and trace
// context belong to the turn), not while a tool source is still starting
// (the turn waits for its tools, and an early request without them would
// be a model call paid for nothing), and not when the turn would compact
// first. It returns the call started, not held yet (the zero earlyCall when
// none is). Caller holds mu.
func (c *conv) startEarly(id string, entry agentik.MemoryEntry, client []agentik.ToolSpec, params *agentik.ModelParams) earlyCall {
	es, ok := c.e.opts.LLM.(agentik.EarlyStarter)
	if !ok || !c.memoryLoaded || c.e.opts.Tracer != nil || len(c.e.opts.Context) > 0 || c.e.opts.Tools.Starting() {
		return earlyCall{}
	}
	r := &turnRun{c: c, ctx: c.e.baseCtx, client: client, params: params}
	n := len(c.memory)
	c.memory = append(c.memory, entry)
	// The tools known now (no source is starting): a source whose list
	// changes meanwhile makes the turn's request differ, and the turn
	// sends its own.
	// StartEarly keeps nothing of req: its messages are written into a
	// slice of a pool (a turn's second copy of its context).
	scratch := earlyMessages.Get().(*[]agentik.ModelMessage)
	defer func() {
		clear(*scratch) // no references to working memory kept
		if cap(*scratch) <= maxEarlyMessages {
			*scratch = (*scratch)[:0]
			earlyMessages.Put(scratch)
		}
	}()
	req := agentik.ModelRequest{System: c.e.SystemPrompt(), Tools: r.offered(c.e.opts.Tools.Snapshot(noWait)),
		Messages: c.appendModelMessages((*scratch)[:0]), Params: params}
	*scratch = req.Messages
	c.memory = c.memory[:n]
	if trigger, _ := c.e.compactLimits(); tokens.Request(req, c.e.opts.SendReasoning) > trigger {
		return earlyCall{} // fit compacts: the turn's request will differ
	}
	return earlyCall{id: id, call: es.StartEarly(c.e.baseCtx, req)}
}

// earlyMessages holds the message slices of early requests (startEarly);
// maxEarlyMessages bounds the slices it keeps.
var earlyMessages = sync.Pool{New: func() any { return new([]agentik.ModelMessage) }}

const maxEarlyMessages = 1024

// noWait is an ended context: what is asked with it does not wait.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// startNext sends the model call of the next round while the round's
// working memory (entries) commits with its last result, as callModel will
// make it, so the request travels during the commit; the turn takes it
// over when its request is the same. Not in the last round allowed, while
// tracing (the call's span belongs to the turn), or when the call would
// compact first. The turn loop waits for the round meanwhile, so memory is
// this goroutine's. It returns the call started (the zero earlyCall when
// none is).
func (r *turnRun) startNext(set *tools.Set, entries []agentik.MemoryEntry) earlyCall {
	c := r.c
	es, ok := c.e.opts.LLM.(agentik.EarlyStarter)
	if !ok || c.e.opts.Tracer != nil || len(c.e.opts.Context) > 0 || r.round+1 >= c.e.opts.MaxToolRounds {
		return earlyCall{}
	}
	n := len(c.memory)
	c.memory = append(c.memory, entries...)
	req := r.request(r.offered(set))
	c.memory = c.memory[:n]
	if trigger, _ := c.e.compactLimits(); tokens.Request(req, c.e.opts.SendReasoning) > trigger {
		return earlyCall{} // fit compacts: the next request will differ
	}
	return earlyCall{id: r.t.user.ID, call: es.StartEarly(r.ctx, req)}
}
