package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/tools"
)

// Tool approval (SPEC §10, docs/approvals.md). A tool call the policy says
// to ask about is journaled with an approval_requested event in the same
// commit; the turn runs the other calls of the model response, then parks:
// it ends its run without an end event and leaves its turn open in the
// store, as a turn waiting for client tool results does. Nothing is held
// while it waits — no goroutine, model stream or tool. The store is the
// state: a pending approval is an approval_requested event without an
// approval_resolved one for its call id, in the first open turn. An answer
// commits approval_resolved (with the denial's tool_result when denied) and
// kicks the conversation's loop, which finds the round in the journal
// (openRound), runs the approved calls and calls the model again once every
// call of the response has a result. The start-up recovery finds a parked
// turn the same way and leaves it parked.

const (
	parkAnnounce = iota
	parkRejoin
	parkSilent
)

// errWaitingForApproval ends a turn's run that parks for approvals.
var errWaitingForApproval = errors.New("waiting for tool approvals")

// parkedTurn is what this process knows of the conversation's turn that
// waits for approvals: the user message it answers and its pending calls'
// approval_requested events by call id.
type parkedTurn struct {
	replyTo string
	asking  map[string]agentik.Event
}

// approvalState is what the store says of a conversation's approvals.
type approvalState struct {
	requested map[string]agentik.Event // by call id
	resolved  map[string]agentik.Event
	order     []string // call ids in request order
}

func (c *conv) readApprovals(ctx context.Context) (approvalState, error) {
	evs, err := c.store.ApprovalEvents(ctx, c.id, 0)
	if err != nil {
		return approvalState{}, c.readErr(err)
	}
	st := approvalState{requested: map[string]agentik.Event{}, resolved: map[string]agentik.Event{}}
	for _, ev := range evs {
		switch ev.Type {
		case agentik.EvApprovalRequested:
			if _, dup := st.requested[ev.CallID]; !dup {
				st.order = append(st.order, ev.CallID)
			}
			st.requested[ev.CallID] = ev
		case agentik.EvApprovalResolved:
			st.resolved[ev.CallID] = ev
		}
	}
	return st, nil
}

// needsApproval reports whether a call of the agent's tool name waits for a
// person's yes.
func (e *Engine) needsApproval(set *tools.Set, name string) bool {
	if _, server := set.Lookup(name); !server {
		return false // client tools answer for themselves
	}
	return e.opts.Approval.Action(name) == agentik.ApprovalAsk
}

// denied reports whether the policy hides the tool name.
func (e *Engine) denied(name string) bool {
	return e.opts.Approval.Action(name) == agentik.ApprovalDeny
}

// approvalRequest is the approval_requested event of a call.
func (r *turnRun) approvalRequest(tc agentik.ToolCall, now agentik.Time) agentik.Event {
	return agentik.Event{ConversationID: r.c.id, Date: now, Type: agentik.EvApprovalRequested,
		CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, ReplyTo: r.t.user.ID,
		ExpiresAt: agentik.ApprovalExpiry(now, r.c.e.opts.ApprovalTimeout)}
}

// park records that the turn answering p.user waits for the approvals
// p.asking names, arms their expiry, and tells subscribers.
//
// How subscribers hear of it: parkAnnounce (the turn parks now: its
// approval_requested events went out with their commit), parkRejoin (found
// so at start: working and the requests again, for subscribers that came
// before), parkSilent (learnt from a store other processes share, whose
// bus carried the events).
func (c *conv) park(p *pendingRound, how int) {
	c.mu.Lock()
	c.parkLocked(p, how)
	c.mu.Unlock()
	c.armAll(p)
}

func (c *conv) armAll(p *pendingRound) {
	for _, ev := range p.asking {
		c.armExpiry(ev)
	}
}

func (c *conv) parkLocked(p *pendingRound, how int) {
	fresh := c.parked == nil || c.parked.replyTo != p.user.ID
	// A copy: Resolve deletes from the parked set under c.mu while the
	// turn arms expiry timers from p.asking outside it.
	c.parked = &parkedTurn{replyTo: p.user.ID, asking: maps.Clone(p.asking)}
	if how == parkRejoin && fresh {
		for _, ev := range parkedJoin(c.id, c.parked) {
			c.publishLocked(ev)
		}
	}
	if how == parkAnnounce || (how == parkRejoin && fresh) {
		c.publishLocked(agentik.Event{Type: agentik.EvAwaitingApproval, ReplyTo: p.user.ID})
	}
}

// parkRunning parks the running turn t at round p: from the moment it is
// announced, the turn is parked and no longer running, so an interrupt or
// an answer finds it parked.
func (c *conv) parkRunning(t *turn, p *pendingRound) {
	c.mu.Lock()
	if c.running == t {
		c.running = nil
		c.partial.Reset()
	}
	c.parkLocked(p, parkAnnounce)
	c.mu.Unlock()
	c.armAll(p)
}

// armExpiry answers the call as denied with reason expired when its
// approval times out. A timer, not a goroutine, waits; whichever process's
// timer fires first answers (the store refuses the second answer).
func (c *conv) armExpiry(ev agentik.Event) {
	if ev.ExpiresAt.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timers == nil {
		c.timers = map[string]*time.Timer{}
	}
	if _, armed := c.timers[ev.CallID]; armed {
		return
	}
	callID := ev.CallID
	c.timers[callID] = time.AfterFunc(max(time.Until(ev.ExpiresAt.Time), 0), func() {
		if c.e.baseCtx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(c.e.baseCtx, finalWriteTimeout)
		defer cancel()
		err := c.resolve(ctx, callID, agentik.Resolution{Reason: agentik.ApprovalExpired}, "")
		if err != nil && !agentik.IsNotFound(err) && !(agentik.ErrorCode(err) == agentik.EConflict) {
			c.e.log.Warn("expire approval", "conversation", c.id, "call_id", callID, "err", err)
		}
	})
}

// pendingApprovals reads the approvals waiting in the conversation's first
// open turn, expiring those past their time.
func (c *conv) pendingApprovals(ctx context.Context) ([]agentik.PendingApproval, error) {
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil {
		return nil, c.readErr(err)
	}
	st, err := c.readApprovals(ctx)
	if err != nil {
		return nil, err
	}
	out := []agentik.PendingApproval{}
	if len(q.Open) == 0 {
		return out, nil
	}
	first := q.Open[0].ID
	results := map[string]bool{}
	for _, m := range q.Turn {
		if m.Type == agentik.MsgToolResult {
			results[m.CallID] = true
		}
	}
	set := c.e.opts.Tools.Snapshot(ctx)
	expired := false
	for _, id := range st.order {
		ev := st.requested[id]
		if _, done := st.resolved[id]; done || ev.ReplyTo != first || results[id] {
			continue
		}
		if !ev.ExpiresAt.IsZero() && !time.Now().Before(ev.ExpiresAt.Time) {
			if err := c.resolve(ctx, id, agentik.Resolution{Reason: agentik.ApprovalExpired}, ""); err == nil {
				expired = true
				continue
			}
		}
		out = append(out, pendingOf(ev, set, c.owner))
	}
	if expired {
		return c.pendingApprovals(ctx)
	}
	return out, nil
}

func pendingOf(ev agentik.Event, set *tools.Set, owner string) agentik.PendingApproval {
	p := agentik.PendingApproval{ConversationID: ev.ConversationID, CallID: ev.CallID, Name: ev.Name,
		Arguments: ev.Arguments, ReplyTo: ev.ReplyTo, RequestedAt: ev.Date, ExpiresAt: ev.ExpiresAt,
		Cursor: ev.Cursor, Owner: owner}
	if set != nil {
		if t, ok := set.Lookup(ev.Name); ok {
			p.Schema = t.Spec().Parameters
		}
	}
	return p
}

// resolve answers the pending approval of callID for principal by. It is
// serialised per conversation here and by the store across processes (one
// approval_resolved per call id).
func (c *conv) resolve(ctx context.Context, callID string, res agentik.Resolution, by string) error {
	if len(res.Arguments) > c.e.opts.MaxTextBytes {
		// Edited arguments are bounded like a message's text: they are
		// stored and sent to the model.
		return agentik.Errorf(agentik.ETooLarge, "approval: the arguments are longer than %d bytes", c.e.opts.MaxTextBytes)
	}
	if err := res.Validate(); err != nil {
		return err
	}
	c.resolveMu.Lock()
	defer c.resolveMu.Unlock()
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil {
		return c.readErr(err)
	}
	st, err := c.readApprovals(ctx)
	if err != nil {
		return err
	}
	req, ok := st.requested[callID]
	if !ok {
		return agentik.Errorf(agentik.ENotFound, "no tool call %q waits for approval in this conversation", callID)
	}
	if _, done := st.resolved[callID]; done {
		return agentik.Errorf(agentik.EConflict, "tool call %q was already answered", callID)
	}
	if len(q.Open) == 0 || q.Open[0].ID != req.ReplyTo {
		return agentik.Errorf(agentik.EConflict, "the turn of tool call %q is over", callID)
	}
	for _, m := range q.Turn {
		if m.Type == agentik.MsgToolResult && m.CallID == callID {
			return agentik.Errorf(agentik.EConflict, "tool call %q was already answered", callID)
		}
	}
	if len(res.Arguments) > 0 {
		if err := c.checkArguments(ctx, req.Name, res.Arguments); err != nil {
			return err
		}
	}
	now := agentik.Now()
	approved := res.Approved
	ev := agentik.Event{ConversationID: c.id, Date: now, Type: agentik.EvApprovalResolved, CallID: callID,
		Name: req.Name, Approved: &approved, Reason: res.Reason, By: by, ReplyTo: req.ReplyTo, Arguments: res.Arguments}
	w := agentik.Write{Events: []agentik.Event{ev}}
	if !approved {
		m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgToolResult,
			CallID: callID, Name: req.Name, Content: []agentik.Content{agentik.Text(agentik.DeniedText(res.Reason))},
			IsError: true, ReplyTo: req.ReplyTo}
		w.Events = append(w.Events, agentik.MessageEvent(&m))
	}
	if _, err := c.commit(ctx, w); err != nil {
		if agentik.ErrorCode(err) == agentik.EConflict {
			return agentik.Errorf(agentik.EConflict, "tool call %q was already answered", callID)
		}
		return err
	}
	c.mu.Lock()
	if t := c.timers[callID]; t != nil {
		t.Stop()
		delete(c.timers, callID)
	}
	if c.parked != nil {
		delete(c.parked.asking, callID)
	}
	// The loop reads the store again: it resumes the turn once every call
	// has an answer (or finds it still waiting).
	c.sent++
	c.kickLocked()
	c.mu.Unlock()
	return nil
}

// checkArguments validates edited arguments against the tool's schema.
func (c *conv) checkArguments(ctx context.Context, name string, args agentik.RawJSON) error {
	if err := agentik.CheckJSON(args); err != nil {
		return agentik.Errorf(agentik.EInvalid, "approval: arguments: %s", agentik.ErrorMessage(err))
	}
	var inst map[string]any
	if err := json.Unmarshal(args, &inst); err != nil {
		return agentik.Errorf(agentik.EInvalid, "approval: arguments must be a JSON object")
	}
	tool, ok := c.e.opts.Tools.Snapshot(ctx).Lookup(name)
	if !ok {
		return agentik.Errorf(agentik.EConflict, "the tool %q is no longer available", name)
	}
	params := tool.Spec().Parameters
	if len(params) == 0 {
		return nil
	}
	rs, err := compileSchema(params)
	if err != nil {
		return nil // a schema this validator cannot read: the tool itself judges
	}
	if err := rs.Validate(inst); err != nil {
		return agentik.Errorf(agentik.EInvalid, "approval: arguments do not match the tool's schema: %v", err)
	}
	return nil
}

var schemaCache sync.Map // string(schema) → *jsonschema.Resolved

func compileSchema(raw agentik.RawJSON) (*jsonschema.Resolved, error) {
	if rs, ok := schemaCache.Load(string(raw)); ok {
		return rs.(*jsonschema.Resolved), nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	schemaCache.Store(string(raw), rs)
	return rs, nil
}

// interruptParked closes the conversation's turn that waits for approvals:
// every pending call is denied (reason interrupted, by the principal), then
// the turn is closed with interrupted{reason}. False when no turn waits.
func (c *conv) interruptParked(ctx context.Context, reason, by string) (bool, error) {
	c.mu.Lock()
	known := c.parked != nil
	c.mu.Unlock()
	if !known && !c.shared {
		return false, nil
	}
	c.resolveMu.Lock()
	defer c.resolveMu.Unlock()
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil || len(q.Open) == 0 {
		return false, err
	}
	round, err := c.openRound(ctx, q.Open[0], q.Turn)
	if err != nil || round == nil || len(round.asking) == 0 {
		return false, err
	}
	if c.shared {
		if rt, running := c.coord.Running(c.id); running && rt.ReplyTo == round.user.ID {
			return false, nil // another process runs its other calls: interrupt it there
		}
	}
	now := agentik.Now()
	var w agentik.Write
	no := false
	for _, tc := range round.calls {
		req, ok := round.asking[tc.ID]
		if !ok {
			continue
		}
		w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: now, Type: agentik.EvApprovalResolved,
			CallID: tc.ID, Name: req.Name, Approved: &no, Reason: agentik.ApprovalInterrupted, By: by, ReplyTo: round.user.ID})
		m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgToolResult,
			CallID: tc.ID, Name: req.Name, Content: []agentik.Content{agentik.Text(agentik.DeniedText(agentik.ApprovalInterrupted))},
			IsError: true, ReplyTo: round.user.ID}
		w.Events = append(w.Events, agentik.MessageEvent(&m))
	}
	w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: now, Type: agentik.EvInterrupted, ReplyTo: round.user.ID, Reason: reason})
	w.Touch = now
	if _, err := c.commit(ctx, w); err != nil {
		if agentik.ErrorCode(err) == agentik.EConflict {
			return false, nil // answered meanwhile
		}
		return false, err
	}
	c.mu.Lock()
	for id := range round.asking {
		if t := c.timers[id]; t != nil {
			t.Stop()
			delete(c.timers, id)
		}
	}
	if c.parked != nil && c.parked.replyTo == round.user.ID {
		c.parked = nil
	}
	c.publishLocked(agentik.Event{Type: agentik.EvEnd, ReplyTo: round.user.ID, Reason: agentik.EndInterrupted})
	c.sent++
	c.kickLocked()
	c.mu.Unlock()
	return true, nil
}

// runApproved runs the approved calls of a resumed round (with their edited
// arguments) and records their results.
func (r *turnRun) runApproved(set *tools.Set, p *pendingRound) error {
	var calls []agentik.ToolCall
	for _, tc := range p.calls {
		args, ok := p.approved[tc.ID]
		if !ok {
			continue
		}
		if len(args) > 0 {
			tc.Arguments = args
		}
		calls = append(calls, tc)
	}
	results, err := r.runCalls(set, calls, nil, nil)
	if err != nil {
		if r.ctx.Err() != nil {
			// Interrupted while approved calls ran: the round, with what
			// ran and the answers it had, goes to working memory with the
			// close.
			cut := &pendingRound{text: p.text, reasoning: p.reasoning, calls: make([]agentik.ToolCall, len(p.calls)), results: maps.Clone(p.results)}
			for i, tc := range p.calls {
				if args := p.approved[tc.ID]; len(args) > 0 {
					tc.Arguments = args // the model sees what ran
				}
				cut.calls[i] = tc
			}
			r.cutShort(cut, calls, results)
		}
		return err
	}
	for i, tc := range calls {
		p.results[tc.ID] = results[i]
	}
	return nil
}

// Approvals lists the conversation's pending approvals (agentik.Approver).
func (h *handle) Approvals(ctx context.Context) ([]agentik.PendingApproval, error) {
	if h.c.shared {
		return h.c.pendingApprovalsShared(ctx)
	}
	return h.c.pendingApprovals(ctx)
}

// Resolve answers a pending approval for the principal in ctx.
func (h *handle) Resolve(ctx context.Context, callID string, res agentik.Resolution) error {
	if err := h.c.e.accepting(); err != nil {
		return err
	}
	return h.c.resolve(ctx, callID, res, agentik.PrincipalFrom(ctx))
}

var _ agentik.Approver = (*handle)(nil)
var _ agentik.ApprovalLister = (*Engine)(nil)

// PendingApprovals lists the approvals pending in the conversations this
// process knows to wait (parked here, or found so at start), for every
// principal: for administration (GET /admin/turns) and metrics. A turn
// parked by another process sharing the store is listed once this process
// has read it (a Send, an Approvals call or a kick).
func (e *Engine) PendingApprovals() []agentik.PendingApproval {
	e.mu.Lock()
	convs := make([]*conv, 0, len(e.live))
	for _, c := range e.live {
		convs = append(convs, c)
	}
	e.mu.Unlock()
	set := e.opts.Tools.Snapshot(e.baseCtx)
	var out []agentik.PendingApproval
	for _, c := range convs {
		c.mu.Lock()
		if p := c.parked; p != nil {
			for _, ev := range p.asking {
				out = append(out, pendingOf(ev, set, c.owner))
			}
		}
		c.mu.Unlock()
	}
	return out
}

// pendingApprovalsShared refreshes what this process knows of a turn
// parked in a shared store (by any process): parked is set or cleared.
func (c *conv) pendingApprovalsShared(ctx context.Context) ([]agentik.PendingApproval, error) {
	pend, err := c.pendingApprovals(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	switch {
	case len(pend) > 0 && c.running == nil:
		p := &parkedTurn{replyTo: pend[0].ReplyTo, asking: map[string]agentik.Event{}}
		for _, a := range pend {
			p.asking[a.CallID] = agentik.Event{ConversationID: c.id, Date: a.RequestedAt, Type: agentik.EvApprovalRequested,
				CallID: a.CallID, Name: a.Name, Arguments: a.Arguments, ReplyTo: a.ReplyTo, ExpiresAt: a.ExpiresAt, Cursor: a.Cursor}
		}
		c.parked = p
	case len(pend) == 0:
		c.parked = nil
	}
	c.mu.Unlock()
	return pend, nil
}
