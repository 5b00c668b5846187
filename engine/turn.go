package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/tools"
)

var timeNow = time.Now

// finalWriteTimeout bounds the writes that close a cancelled turn: they run
// on a fresh context because the turn's own is already cancelled.
const finalWriteTimeout = 10 * time.Second

// runTurn answers one user message and always closes its turn. It returns
// how the turn ended: its end reason, "approval_pending" (parked) or
// "lease_lost" (fenced).
func (c *conv) runTurn(ctx context.Context, t *turn, q queued) (outcome string) {
	r := &turnRun{c: c, t: t, ctx: ctx, client: q.client, params: t.user.Params, start: time.Now()}
	obs, agent := c.e.opts.Observer, c.e.opts.Info.ID
	obs.TurnStarted(agent)
	var span agentik.Span
	if tr := c.e.opts.Tracer; tr != nil {
		r.ctx, span = tr.StartTurn(ctx, agentik.TurnTrace{ConversationID: c.id, ReplyTo: t.user.ID,
			TraceParent: t.user.TraceParent, Linked: !q.fresh})
	}
	defer func() {
		t.early.drop() // ended before its model call took it
		outcome = r.outcome
		if outcome == "" {
			outcome = "lease_lost" // fenced: another process runs the turn
		}
		obs.TurnEnded(agent, outcome, time.Since(r.start))
		if span != nil {
			span.End(agentik.SpanEnd{Outcome: outcome, Tokens: r.tokens, ErrorType: r.errType, Detail: r.errDetail})
		}
	}()
	err := r.run(q.resume)
	switch {
	case err == nil:
	case c.isFenced(err): // another process took the lease and runs the turn
		r.fenced(err)
	case errors.Is(err, errWaitingForClient):
		r.end(agentik.EndClientTools)
	case errors.Is(err, errWaitingForApproval):
		// Parked: the turn stays open (working) and nothing is held; an
		// answer kicks the loop, which resumes it from the journal.
		c.parkRunning(t, r.parked)
		r.outcome = "approval_pending" // this run ends; an answer resumes the turn
	case ctx.Err() != nil:
		r.closeInterrupted()
	default:
		r.closeFailed(err)
	}
	return "" // set by the deferred function
}

// turnRun is the state of one turn, owned by the turn loop goroutine.
type turnRun struct {
	c      *conv
	t      *turn
	ctx    context.Context
	client []agentik.ToolSpec   // client tools offered in this turn
	params *agentik.ModelParams // the user message's sampling parameters
	tokens agentik.TurnTokens
	// The response text and reasoning of the current model call, as they
	// stream (a builder: an answer of n deltas is copied once, not n times).
	text, reason strings.Builder
	parked       *pendingRound // the round that waits for approvals
	// asking: the calls of the current round that wait for approval, in
	// call order, while the round's other calls run; an interrupt then
	// denies those still unanswered (closeInterrupted).
	asking []agentik.Event
	// cut: the tool round under way when the turn was interrupted, with
	// the results of the calls that ran; closeInterrupted puts it in
	// working memory, so that the model knows what ran.
	cut *pendingRound

	// system is the system context of the current model call: the system
	// prompt with what the context sources add ("": the system prompt).
	system string

	round     int       // the tool round under way, from 0
	start     time.Time // for the observer
	outcome   string    // the end reason, once ended
	firstSeen bool      // the first token was reported

	errType, errDetail string // the code and details of a failed turn (its span)
}

// errWaitingForClient ends a turn that waits for client tool results.
var errWaitingForClient = errors.New("waiting for client tool results")

func (r *turnRun) run(resume *pendingRound) error {
	c := r.c
	if err := c.ensureMemory(r.ctx); err != nil {
		return err
	}
	if resume != nil {
		if len(resume.approved) > 0 {
			if err := r.runApproved(c.e.opts.Tools.Snapshot(r.ctx), resume); err != nil {
				return err
			}
		}
		results := make([]agentik.ToolResult, len(resume.calls))
		for i, tc := range resume.calls {
			if args := resume.approved[tc.ID]; len(args) > 0 {
				resume.calls[i].Arguments = args // the model sees what ran
			}
			results[i] = resume.results[tc.ID]
		}
		if err := c.appendMemory(r.ctx, agentik.Write{Memory: roundMemory(r.t.user.ID, resume.text, resume.reasoning, resume.calls, results)}); err != nil {
			return r.storeErr(err)
		}
	} else if !c.hasUserEntry(r.t.user.ID) {
		entry := agentik.MemoryEntry{SourceID: r.t.user.ID, ReplyTo: r.t.user.ID,
			Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: r.t.user.Content}}
		if c.e.opts.OnRestart == RestartResume {
			// Stored with the turn's first write (turnWrite): every way a
			// turn ends writes something, and a turn cut short before that
			// is answered again (resume) whether or not its message was in
			// working memory — one commit fewer per turn.
			c.memory = append(c.memory, entry)
			c.unsaved++
		} else {
			// With OnRestart interrupt the entry says the turn started (a
			// turn cut short is closed, and its message stays in the
			// context). Written even if an interrupt arrives now: the
			// user's message must be in the context of later turns.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), finalWriteTimeout)
			err := c.appendMemory(wctx, agentik.Write{Memory: []agentik.MemoryEntry{entry}})
			cancel()
			if err != nil {
				return &turnError{code: agentik.CodeStoreError, details: "the turn could not be stored", err: err}
			}
		}
	}
	for round := 0; round < c.e.opts.MaxToolRounds; round++ {
		r.round = round
		if err := r.loadSystem(); err != nil {
			return err
		}
		set := c.e.opts.Tools.Snapshot(r.ctx)
		resp, err := r.callModel(set)
		if err != nil {
			return err
		}
		if len(resp.ToolCalls) == 0 {
			return r.answer(resp)
		}
		if err := r.runTools(set, resp); err != nil {
			return err
		}
	}
	return &turnError{code: agentik.CodeToolRoundsExceeded, details: fmt.Sprintf("the model asked for tools %d times without answering", c.e.opts.MaxToolRounds)}
}

// cutShort remembers the round p, interrupted while calls ran: results are
// in calls' order, zero for a call that did not run.
func (r *turnRun) cutShort(p *pendingRound, calls []agentik.ToolCall, results []agentik.ToolResult) {
	for i, tc := range calls {
		if i < len(results) && len(results[i].Content) > 0 {
			p.results[tc.ID] = results[i]
		}
	}
	r.cut = p
}

// turnError is a failure recorded as an error message with its own code.
type turnError struct {
	code, details string
	err           error
}

// Error is for the log: with the cause, which callers never see.
func (e *turnError) Error() string {
	if e.err != nil {
		return e.code + ": " + e.details + ": " + e.err.Error()
	}
	return e.code + ": " + e.details
}
func (e *turnError) Unwrap() error { return e.err }

// loadSystem reads the system context of the next model call from the
// context sources (Options.Context), with the conversation and its owner
// in the context they are asked with.
func (r *turnRun) loadSystem() error {
	srcs := r.c.e.opts.Context
	if len(srcs) == 0 {
		return nil
	}
	ctx := agentik.WithPrincipal(agentik.WithConversation(r.ctx, r.c.id), r.c.owner)
	ctx = agentik.WithSharedState(ctx, agentSharer{&handle{r.c}})
	var b strings.Builder
	b.WriteString(r.c.e.SystemPrompt())
	for _, src := range srcs {
		text, err := src.SystemContext(ctx)
		if err != nil {
			return &turnError{code: agentik.CodeStoreError, details: "the conversation's context could not be read", err: err}
		}
		if text != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(text)
		}
	}
	r.system = b.String()
	return nil
}

func (r *turnRun) callModel(set *tools.Set) (agentik.ModelResponse, error) {
	c := r.c
	offered := r.offered(set)
	if _, err := r.fit(offered, false); err != nil {
		return agentik.ModelResponse{}, err
	}
	for attempt := 0; ; attempt++ {
		req := r.request(offered)
		r.text.Reset()
		r.reason.Reset()
		// The LLM bounds its own waiting (connect, retries, silence between
		// chunks); the turn's context adds interrupts and shutdown.
		began := time.Now()
		gctx, span := r.ctx, agentik.Span(nil)
		if tr := c.e.opts.Tracer; tr != nil {
			gctx, span = r.startModelSpan(tr, req)
		}
		generate := r.t.early.use(c.e.opts.LLM.Generate) // the call sent early: this attempt only
		resp, err := generate(gctx, req, r.onDelta)
		outcome := modelOutcome(r.ctx, err)
		c.e.opts.Observer.ModelCall(c.e.opts.Info.ID, c.e.opts.LLM.Info().Name, outcome, time.Since(began), resp.Tokens)
		if span != nil {
			endModelSpan(span, outcome, resp, err)
		}
		if err == nil {
			r.tokens = r.tokens.Add(resp.Tokens)
			return resp, nil
		}
		if r.ctx.Err() != nil {
			return resp, r.ctx.Err()
		}
		switch {
		case errors.Is(err, agentik.ErrContextOverflow):
			// The estimate was wrong for this model: compact harder and
			// retry once. An overflow is refused before anything streams.
			if attempt == 0 && r.text.Len() == 0 && r.reason.Len() == 0 {
				compacted, ferr := r.fit(offered, true)
				if ferr != nil {
					return resp, ferr
				}
				if compacted {
					continue
				}
			}
			return resp, &turnError{code: agentik.CodeContextOverflow, details: "the conversation is too long for the model", err: err}
		case errors.Is(err, context.DeadlineExceeded):
			return resp, &turnError{code: agentik.CodeLLMTimeout, details: "the model stopped answering", err: err}
		}
		return resp, &turnError{code: agentik.CodeLLMError, details: "the model call failed", err: err}
	}
}

// startModelSpan opens the span of a model call (tracing on only: req is
// copied to the heap for the tracer).
func (r *turnRun) startModelSpan(tr agentik.Tracer, req agentik.ModelRequest) (context.Context, agentik.Span) {
	return tr.StartModelCall(r.ctx, agentik.ModelTrace{ConversationID: r.c.id, Model: r.c.e.opts.LLM.Info().Name, Request: &req})
}

// endModelSpan closes the span of a model call that ended with outcome.
func endModelSpan(span agentik.Span, outcome string, resp agentik.ModelResponse, err error) {
	end := agentik.SpanEnd{Outcome: outcome}
	switch outcome {
	case "ok":
		end.Response = &resp
	case "interrupted": // not a failure of the call
	default:
		end.ErrorType, end.Detail = modelErrorCode(outcome), err.Error()
	}
	span.End(end)
}

// modelErrorCode is the error code a model call's outcome fails a turn with.
func modelErrorCode(outcome string) string {
	switch outcome {
	case "timeout":
		return agentik.CodeLLMTimeout
	case "context_overflow":
		return agentik.CodeContextOverflow
	}
	return agentik.CodeLLMError
}

// modelOutcome is the bounded outcome label of a model call.
func modelOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil:
		return "interrupted"
	case errors.Is(err, agentik.ErrContextOverflow):
		return "context_overflow"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// onDelta publishes one streamed piece; the model adapter calls it in order.
func (r *turnRun) onDelta(d agentik.ModelDelta) {
	if d.Text == "" {
		return
	}
	if !r.firstSeen {
		r.firstSeen = true
		r.c.e.opts.Observer.FirstToken(r.c.e.opts.Info.ID, time.Since(r.start))
	}
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase != d.Kind {
		c.phase = d.Kind
		c.partial.Reset()
		start := agentik.EvStartResponse
		if d.Kind == agentik.DeltaReasoning {
			start = agentik.EvStartReasoning
		}
		c.publishLocked(agentik.Event{Type: start, ReplyTo: r.t.user.ID})
	}
	c.partial.WriteString(d.Text)
	if d.Kind == agentik.DeltaReasoning {
		r.reason.WriteString(d.Text)
	} else {
		r.text.WriteString(d.Text)
	}
	c.publishLocked(agentik.Event{Type: agentik.EvAppendText, Text: d.Text})
}

// answer stores the final assistant message and ends the turn.
func (r *turnRun) answer(resp agentik.ModelResponse) error {
	c := r.c
	now := agentik.Now()
	msg := agentik.Message{
		ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgAssistant,
		Content: textContent(resp.Text), Reasoning: resp.Reasoning, ReplyTo: r.t.user.ID,
	}
	if r.tokens != (agentik.TurnTokens{}) {
		tok := r.tokens
		msg.Tokens = &tok
	}
	entry := agentik.MemoryEntry{SourceID: msg.ID, ReplyTo: r.t.user.ID, Message: agentik.ModelMessage{
		Role: agentik.RoleAssistant, Content: msg.Content, Reasoning: resp.Reasoning}}
	w := agentik.Write{Events: []agentik.Event{agentik.MessageEvent(&msg)}, Memory: []agentik.MemoryEntry{entry}, Touch: now, Tokens: r.tokens}
	// The answer is final once committed: write it even if an interrupt
	// arrives now, so a complete answer is never turned into a partial one.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), finalWriteTimeout)
	defer cancel()
	if err := c.appendMemory(wctx, w); err != nil {
		return &turnError{code: agentik.CodeStoreError, details: "the answer could not be stored", err: err}
	}
	r.end(agentik.EndCompleted)
	return nil
}

// runTools records the model's tool calls, runs them concurrently, records
// each result as it arrives, then adds the round to working memory.
func (r *turnRun) runTools(set *tools.Set, resp agentik.ModelResponse) error {
	c := r.c
	var evs []agentik.Event
	if resp.Text != "" {
		m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: agentik.Now(), Type: agentik.MsgAssistant,
			Content: textContent(resp.Text), Reasoning: resp.Reasoning, ReplyTo: r.t.user.ID, Continued: true}
		evs = append(evs, agentik.MessageEvent(&m))
	}
	calls := make([]agentik.ToolCall, len(resp.ToolCalls))
	asking := map[string]agentik.Event{}
	for i, tc := range resp.ToolCalls {
		tc.Arguments = normalizeArgs(tc.Arguments)
		calls[i] = tc
		now := agentik.Now()
		m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgToolCall,
			CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, ReplyTo: r.t.user.ID}
		evs = append(evs, agentik.MessageEvent(&m))
		if c.e.needsApproval(set, tc.Name) {
			// Committed with its tool_call: the call is pending from the
			// moment it exists.
			ev := r.approvalRequest(tc, now)
			asking[tc.ID] = ev
			evs = append(evs, ev)
		}
	}
	committed, err := c.turnWrite(r.ctx, agentik.Write{Events: evs})
	if err != nil {
		return r.storeErr(err)
	}
	for _, ev := range committed {
		if ev.Type == agentik.EvApprovalRequested {
			asking[ev.CallID] = ev // with its cursor
		}
	}
	// The text is journaled: an interrupt from here on must not keep it
	// again as a partial answer.
	r.text.Reset()
	r.reason.Reset()
	// A new model call starts a new response phase for joiners.
	c.mu.Lock()
	c.phase = ""
	c.partial.Reset()
	c.mu.Unlock()

	waiting := map[string]bool{}
	for _, tc := range calls {
		if r.isClientTool(set, tc.Name) {
			waiting[tc.ID] = true
		}
	}
	for _, tc := range calls {
		if ev, ok := asking[tc.ID]; ok {
			r.asking = append(r.asking, ev)
		}
	}
	// A round that runs here whole goes to working memory with its last
	// result, in one commit.
	var round *roundWrite
	if len(asking) == 0 && len(waiting) == 0 {
		round = &roundWrite{text: resp.Text, reasoning: resp.Reasoning}
	}
	results, err := r.runCalls(set, calls, func(tc agentik.ToolCall) bool {
		_, ask := asking[tc.ID]
		return !waiting[tc.ID] && !ask
	}, round)
	if round != nil && round.written != nil {
		c.memory = append(c.memory, round.written...) // committed, even if the turn ends now
		r.t.early.hold(round.next)                    // the next round's call; cancelled with the turn if not made
	} else if err != nil && r.ctx.Err() != nil {
		r.cutShort(&pendingRound{text: resp.Text, reasoning: resp.Reasoning, calls: calls, results: map[string]agentik.ToolResult{}}, calls, results)
	}
	if err != nil {
		return err
	}
	r.asking = nil
	if len(asking) > 0 {
		// Parked. Answers that came while the other calls ran are found
		// when the loop reads the journal again, right after.
		p := &pendingRound{user: r.t.user, client: r.client, text: resp.Text, reasoning: resp.Reasoning,
			calls: calls, results: map[string]agentik.ToolResult{}, asking: asking}
		r.parked = p
		return errWaitingForApproval
	}
	if len(waiting) > 0 {
		p := &pendingRound{user: r.t.user, client: r.client, text: resp.Text, reasoning: resp.Reasoning,
			calls: calls, results: map[string]agentik.ToolResult{}, waiting: waiting}
		for i, tc := range calls {
			if !waiting[tc.ID] {
				p.results[tc.ID] = results[i]
			}
		}
		c.mu.Lock()
		c.pending = p
		c.mu.Unlock()
		return errWaitingForClient
	}
	if round.written == nil { // not expected: the last result commits the round
		if err := c.appendMemory(r.ctx, agentik.Write{Memory: roundMemory(r.t.user.ID, resp.Text, resp.Reasoning, calls, results)}); err != nil {
			return r.storeErr(err)
		}
	}
	return nil
}

// roundWrite asks runCalls to commit the round's working memory with the
// last result: the model's text and reasoning of the round, and, once
// committed, the entries written.
type roundWrite struct {
	text, reasoning string
	written         []agentik.MemoryEntry
	next            earlyCall // the next round's model call, sent during that commit
}

// runCalls runs the calls run says to (all when run is nil) concurrently
// and records each result as it arrives; results are in call order. With
// round, the result that arrives last waits for the others' commits and, if
// they all succeeded, commits the round's working memory with itself.
func (r *turnRun) runCalls(set *tools.Set, calls []agentik.ToolCall, run func(agentik.ToolCall) bool, round *roundWrite) ([]agentik.ToolResult, error) {
	c := r.c
	results := make([]agentik.ToolResult, len(calls))
	var wg sync.WaitGroup
	var commitErr error
	var commitMu sync.Mutex
	n := 0
	for _, tc := range calls {
		if run == nil || run(tc) {
			n++
		}
	}
	if n < len(calls) {
		round = nil // the round is not whole here
	}
	var remaining atomic.Int32
	remaining.Store(int32(n))
	others := make(chan struct{}, n) // a non-last call's commit is done
	for i, tc := range calls {
		if run != nil && !run(tc) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.callTool(set, tc)
			results[i] = res
			last := remaining.Add(-1) == 0
			if !last {
				defer func() { others <- struct{}{} }()
			}
			// What ran is journaled whatever happens to the turn (its
			// result, or that an interrupt cut it short): the commit runs
			// on a bounded context of its own that keeps the turn's fence,
			// so that an interrupt can neither stop it halfway nor leave
			// it unknown whether the round's memory went in with it.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), finalWriteTimeout)
			defer cancel()
			m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: agentik.Now(), Type: agentik.MsgToolResult,
				CallID: tc.ID, Name: tc.Name, Content: res.Content, IsError: res.IsError, ReplyTo: r.t.user.ID}
			w := agentik.Write{Events: []agentik.Event{agentik.MessageEvent(&m)}}
			if last && round != nil {
				for range n - 1 {
					<-others
				}
				commitMu.Lock()
				ok := commitErr == nil
				commitMu.Unlock()
				if ok && r.ctx.Err() == nil {
					// Every result is in and journaled.
					w.Memory = roundMemory(r.t.user.ID, round.text, round.reasoning, calls, results)
				}
			}
			var next earlyCall
			if w.Memory != nil {
				next = r.startNext(set, w.Memory)
			}
			if _, err := c.commit(cctx, w); err != nil {
				next.drop() // the round is not stored: no next round
				commitMu.Lock()
				commitErr = err
				commitMu.Unlock()
			} else if w.Memory != nil {
				round.written, round.next = w.Memory, next // read after wg.Wait
			}
		}()
	}
	wg.Wait()
	if r.ctx.Err() != nil {
		if commitErr != nil && !c.isFenced(commitErr) { // fenced: the new lease holder answers the turn
			c.e.log.Error("record the result of an interrupted tool call", "conversation", c.id, "reply_to", r.t.user.ID, "err", commitErr)
		}
		return results, r.ctx.Err() // the results of the calls that ran
	}
	if commitErr != nil {
		return nil, r.storeErr(commitErr)
	}
	return results, nil
}

// roundMemory is a tool round as working memory: the model's message with
// its calls, then one result per call in call order.
func roundMemory(replyTo, text, reasoning string, calls []agentik.ToolCall, results []agentik.ToolResult) []agentik.MemoryEntry {
	mem := make([]agentik.MemoryEntry, 0, 1+len(calls))
	mem = append(mem, agentik.MemoryEntry{ReplyTo: replyTo, Message: agentik.ModelMessage{
		Role: agentik.RoleAssistant, Content: textContent(text), Reasoning: reasoning, ToolCalls: calls}})
	for i, tc := range calls {
		mem = append(mem, agentik.MemoryEntry{ReplyTo: replyTo, Message: agentik.ModelMessage{
			Role: agentik.RoleTool, CallID: tc.ID, Name: tc.Name, Content: results[i].Content, IsError: results[i].IsError}})
	}
	return mem
}

// offered lists the tools for a model call: the agent's own, then the
// client's tools whose names do not clash with them.
func (r *turnRun) offered(set *tools.Set) []agentik.ToolSpec {
	specs := set.Specs()
	if len(r.c.e.opts.Approval) > 0 {
		kept := make([]agentik.ToolSpec, 0, len(specs))
		for _, s := range specs {
			if !r.c.e.denied(s.Name) { // deny hides the tool (SPEC §10)
				kept = append(kept, s)
			}
		}
		specs = kept
	}
	if len(r.client) == 0 {
		return specs
	}
	out := append(make([]agentik.ToolSpec, 0, len(specs)+len(r.client)), specs...)
	for _, ct := range r.client {
		if _, clash := set.Lookup(ct.Name); clash {
			continue
		}
		ct.Source = "client"
		out = append(out, ct)
	}
	return out
}

// isClientTool reports whether name is a client tool of this turn.
func (r *turnRun) isClientTool(set *tools.Set, name string) bool {
	if _, server := set.Lookup(name); server {
		return false
	}
	for _, ct := range r.client {
		if ct.Name == name {
			return true
		}
	}
	return false
}

// callTool runs one tool with the tool timeout; every failure is a result.
func (r *turnRun) callTool(set *tools.Set, tc agentik.ToolCall) (res agentik.ToolResult) {
	began := time.Now()
	base, span := r.ctx, agentik.Span(nil)
	if tr := r.c.e.opts.Tracer; tr != nil {
		base, span = r.startToolSpan(tr, set, tc)
	}
	defer func() {
		outcome, name := "ok", tc.Name
		if res.IsError {
			outcome = "error"
		}
		if _, known := set.Lookup(name); !known {
			name = "unknown" // the model's invention: not a label
		}
		r.c.e.opts.Observer.ToolCall(r.c.e.opts.Info.ID, name, outcome, time.Since(began))
		if span != nil {
			endToolSpan(span, res)
		}
	}()
	tool, ok := set.Lookup(tc.Name)
	if !ok || r.c.e.denied(tc.Name) {
		return agentik.ErrorResult(fmt.Sprintf("unknown tool %q", tc.Name))
	}
	if !json.Valid(tc.Arguments) || len(tc.Arguments) == 0 || tc.Arguments[0] != '{' {
		return agentik.ErrorResult("tool arguments must be a JSON object")
	}
	timeout := r.c.e.opts.ToolTimeout
	if tt, ok := tool.(agentik.TimeoutTool); ok && tt.Timeout() > 0 {
		timeout = tt.Timeout()
	}
	base = agentik.WithSharedState(agentik.WithConversationState(base, convState{r.c}), agentSharer{&handle{r.c}})
	ctx, cancel := context.WithTimeout(agentik.WithPrincipal(base, r.c.owner), timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.c.e.log.Error("tool panicked", "tool", tc.Name, "panic", p)
			res = agentik.ErrorResult("the tool failed unexpectedly")
		}
	}()
	res, err := tool.Call(ctx, tc.Arguments)
	switch {
	case err == nil:
		if len(res.Content) == 0 {
			res.Content = []agentik.Content{agentik.Text("")}
		}
		res.Content = agentik.CanonicalImages(res.Content)
		return res
	case ctx.Err() == context.DeadlineExceeded && r.ctx.Err() == nil:
		return agentik.ErrorResult(fmt.Sprintf("the tool did not answer within %s", timeout))
	case r.ctx.Err() != nil:
		return agentik.ErrorResult(agentik.ToolInterruptedText)
	default:
		return agentik.ErrorResult("the tool failed: " + err.Error())
	}
}

// startToolSpan opens the span of a tool call (tracing on only).
func (r *turnRun) startToolSpan(tr agentik.Tracer, set *tools.Set, tc agentik.ToolCall) (context.Context, agentik.Span) {
	t := agentik.ToolTrace{ConversationID: r.c.id, Call: tc}
	if tool, ok := set.Lookup(tc.Name); ok && !r.c.e.denied(tc.Name) {
		spec := tool.Spec()
		t.Description, t.Source = spec.Description, spec.Source
	}
	return tr.StartToolCall(r.ctx, t)
}

// endToolSpan closes the span of a tool call with its result; a result
// the model sees as an error is the span's error.
func endToolSpan(span agentik.Span, res agentik.ToolResult) {
	end := agentik.SpanEnd{Result: &res}
	if res.IsError {
		end.ErrorType, end.Detail = "tool_error", agentik.JoinText(res.Content)
	}
	span.End(end)
}

func (r *turnRun) storeErr(err error) error {
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	return &turnError{code: agentik.CodeStoreError, details: "the turn could not be stored", err: err}
}

// closeInterrupted keeps the partial answer and closes the turn.
func (r *turnRun) closeInterrupted() {
	c := r.c
	c.mu.Lock()
	reason := r.t.reason
	c.mu.Unlock()
	if reason == "" {
		reason = agentik.ReasonShutdown // the engine's base context ended
	}
	if reason == reasonLeaseLost { // left open for the next lease holder
		r.end(agentik.EndInterrupted)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), finalWriteTimeout) // keeps the turn's fence
	defer cancel()
	if len(r.asking) > 0 {
		// Interrupted while the round's allowed calls ran: the calls that
		// wait for approval are denied with the close, like a parked turn's.
		c.resolveMu.Lock()
		defer c.resolveMu.Unlock()
	}
	for try := 0; ; try++ {
		w, err := r.interruptedWrite(ctx, reason)
		if err == nil {
			err = c.appendMemory(ctx, w)
		}
		if err == nil {
			break
		}
		if agentik.ErrorCode(err) == agentik.EConflict && len(r.asking) > 0 && try < 3 {
			continue // a call was answered meanwhile (another process): read again
		}
		c.e.log.Error("close interrupted turn", "conversation", c.id, "reply_to", r.t.user.ID, "err", err)
		break
	}
	r.end(agentik.EndInterrupted)
}

// interruptedWrite is the write that closes the interrupted turn: the
// partial answer, a denial (reason interrupted) for each call of the round
// that still waits for approval, and the interrupted event.
func (r *turnRun) interruptedWrite(ctx context.Context, reason string) (agentik.Write, error) {
	c := r.c
	now := agentik.Now()
	var w agentik.Write
	if len(r.asking) > 0 {
		st, err := c.readApprovals(ctx)
		if err != nil {
			return w, err
		}
		c.mu.Lock()
		by := r.t.by
		c.mu.Unlock()
		no := false
		for _, req := range r.asking {
			if res, done := st.resolved[req.CallID]; done {
				// Answered already (here or, read on a retry, by another
				// process): the model sees that answer, not a denial of
				// this close's.
				if r.cut != nil {
					if res.Approved != nil && *res.Approved {
						delete(r.cut.results, req.CallID) // approved, not run
					} else {
						r.cut.results[req.CallID] = agentik.ErrorResult(agentik.DeniedText(res.Reason))
					}
				}
				continue
			}
			if r.cut != nil {
				r.cut.results[req.CallID] = agentik.ErrorResult(agentik.DeniedText(agentik.ApprovalInterrupted))
			}
			w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: now, Type: agentik.EvApprovalResolved,
				CallID: req.CallID, Name: req.Name, Approved: &no, Reason: agentik.ApprovalInterrupted, By: by, ReplyTo: r.t.user.ID})
			m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgToolResult,
				CallID: req.CallID, Name: req.Name, Content: []agentik.Content{agentik.Text(agentik.DeniedText(agentik.ApprovalInterrupted))},
				IsError: true, ReplyTo: r.t.user.ID}
			w.Events = append(w.Events, agentik.MessageEvent(&m))
		}
	}
	if p := r.cut; p != nil {
		// The model of a later turn sees the round: every call with what
		// ran, or that it did not run.
		results := make([]agentik.ToolResult, len(p.calls))
		for i, tc := range p.calls {
			res, ok := p.results[tc.ID]
			if !ok {
				res = agentik.ErrorResult(agentik.ToolNotRunText)
			}
			results[i] = res
		}
		w.Memory = append(w.Memory, roundMemory(r.t.user.ID, p.text, p.reasoning, p.calls, results)...)
	}
	if r.text.Len() > 0 {
		m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgAssistant,
			Content: textContent(r.text.String()), Reasoning: r.reason.String(), Interrupted: true, InterruptReason: reason, ReplyTo: r.t.user.ID}
		if r.tokens != (agentik.TurnTokens{}) {
			tok := r.tokens
			m.Tokens = &tok
		}
		w.Events = append(w.Events, agentik.MessageEvent(&m))
		w.Memory = append(w.Memory, agentik.MemoryEntry{SourceID: m.ID, ReplyTo: r.t.user.ID,
			Message: agentik.ModelMessage{Role: agentik.RoleAssistant, Content: m.Content}})
	}
	w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: now, Type: agentik.EvInterrupted, ReplyTo: r.t.user.ID, Reason: reason})
	w.Touch = now
	w.Tokens = r.tokens
	return w, nil
}

// closeFailed records the failure and ends the turn; the conversation stays usable.
func (r *turnRun) closeFailed(err error) {
	c := r.c
	code, details := agentik.CodeLLMError, "the turn failed"
	var te *turnError
	if errors.As(err, &te) {
		code, details = te.code, te.details
	}
	c.e.log.Warn("turn failed", "conversation", c.id, "reply_to", r.t.user.ID, "code", code, "err", err)
	r.errType, r.errDetail = code, details
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), finalWriteTimeout) // keeps the turn's fence
	defer cancel()
	now := agentik.Now()
	m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgError,
		Code: code, Details: details, ReplyTo: r.t.user.ID}
	if _, err := c.turnWrite(ctx, agentik.Write{Events: []agentik.Event{agentik.MessageEvent(&m)}, Touch: now, Tokens: r.tokens}); err != nil {
		c.e.log.Error("record failed turn", "conversation", c.id, "reply_to", r.t.user.ID, "err", err)
	}
	r.end(agentik.EndError)
}

func (r *turnRun) end(reason string) {
	r.c.dropUnsaved() // before the conversation is idle: a Send may then write the cache
	r.outcome = reason
	ev := agentik.Event{Type: agentik.EvEnd, ReplyTo: r.t.user.ID, Reason: reason}
	if r.tokens != (agentik.TurnTokens{}) {
		tok := r.tokens
		ev.Tokens = &tok
	}
	// The turn is over for everyone at the moment its end is published: a
	// message sent right after it, or a subscriber joining, sees an idle
	// conversation.
	r.c.mu.Lock()
	r.c.uncountLocked() // before the end is seen: the next message is admitted
	r.c.publishLocked(ev)
	if r.c.running == r.t {
		r.c.running = nil
		r.c.partial.Reset()
	}
	r.c.mu.Unlock()
}

// ensureMemory loads working memory once per live conversation.
func (c *conv) ensureMemory(ctx context.Context) error {
	if c.memoryLoaded {
		return nil
	}
	mem, err := c.store.Memory(ctx, c.id)
	if err != nil {
		return &turnError{code: agentik.CodeStoreError, details: "working memory could not be read", err: err}
	}
	c.memory, c.memoryLoaded = mem, true
	return nil
}

func (c *conv) hasUserEntry(id string) bool {
	for i := len(c.memory) - 1; i >= 0; i-- {
		if c.memory[i].SourceID == id {
			return true
		}
	}
	return false
}

// appendMemory is turnWrite without the committed events.
func (c *conv) appendMemory(ctx context.Context, w agentik.Write) error {
	_, err := c.turnWrite(ctx, w)
	return err
}

// turnWrite commits a write of the running turn, from the turn loop, and
// mirrors its memory entries in the cache. The entries the turn holds
// unsaved go first in its memory. The store assigns Order, so the cache is
// reloaded lazily when it is unknown.
func (c *conv) turnWrite(ctx context.Context, w agentik.Write) ([]agentik.Event, error) {
	n := c.unsaved
	if n > 0 {
		w.Memory = append(slices.Clone(c.memory[len(c.memory)-n:]), w.Memory...)
	}
	evs, err := c.commit(ctx, w)
	if err != nil {
		return nil, err
	}
	// The unsaved entries come back with their orders in w.Memory.
	c.memory, c.unsaved = c.memory[:len(c.memory)-n], 0
	if n > 0 {
		c.mu.Lock()
		c.stranded = false
		c.mu.Unlock()
	}
	if w.DropMemoryThrough > 0 {
		kept := c.memory[:0]
		for _, m := range c.memory {
			if m.Order > w.DropMemoryThrough {
				kept = append(kept, m)
			}
		}
		c.memory = kept
	}
	c.memory = append(c.memory, w.Memory...)
	return evs, nil
}

// dropUnsaved forgets the entries a turn that ends without writing held
// unsaved: they are not in the store, and the turn is answered again.
func (c *conv) dropUnsaved() {
	if c.unsaved > 0 {
		c.memory, c.unsaved = c.memory[:len(c.memory)-c.unsaved], 0
		c.mu.Lock()
		c.stranded = true
		c.mu.Unlock()
	}
}

func textContent(s string) []agentik.Content {
	if s == "" {
		return nil
	}
	return []agentik.Content{agentik.Text(s)}
}

// normalizeArgs makes the model's arguments a JSON value the journal can hold:
// empty becomes {}, invalid JSON is kept as a JSON string (the call then
// fails with a tool error the model sees).
func normalizeArgs(a agentik.RawJSON) agentik.RawJSON {
	if len(a) == 0 {
		return agentik.RawJSON("{}")
	}
	if json.Valid(a) {
		return a
	}
	b, _ := json.Marshal(string(a))
	return b
}

// convState is the ConversationState of a conversation, given to its tool
// calls. Its writes go through commit: fenced by the turn's lease.
type convState struct{ c *conv }

func (s convState) State(ctx context.Context, key string) (agentik.RawJSON, error) {
	v, err := s.c.store.State(ctx, s.c.id, key)
	if err != nil {
		return nil, s.c.readErr(err)
	}
	return v, nil
}

func (s convState) SetState(ctx context.Context, key string, value agentik.RawJSON) error {
	_, err := s.c.commit(ctx, agentik.Write{State: map[string]agentik.RawJSON{key: value}})
	return err
}
