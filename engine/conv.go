package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
)

// conv is the one live struct of a conversation. Its state is in parts by
// who may touch it, and under which lock:
//
//   - the fields below, set by newConv and never changed: anyone, no lock;
//   - sharedState: what callers (Send, Interrupt, approvals, subscribers)
//     and the turn loop share, under mu;
//   - commitState: the order of commits and their publication, under
//     writeMu;
//   - loopState: working memory, cached; the turn loop's, no lock.
//
// Lock order: titleMu, then resolveMu, then stateMu, then mu, then writeMu, then
// Engine.agentMu (never held across a store call).
type conv struct {
	e        *Engine
	id       string
	owner    string
	temporal bool
	store    agentik.Store
	coord    agentik.Coordinator // who runs the conversation's turns
	shared   bool                // other processes use the store too

	sharedState
	commitState
	loopState

	// resolveMu serialises approval answers here, and the close of a turn
	// that denies its calls waiting for approval (turnRun.closeInterrupted).
	resolveMu sync.Mutex
	// titleMu serialises the title's changes made here: renames, and the
	// title from the first message, which reads the title before it sets
	// one (title.go).
	titleMu sync.Mutex
	// stateMu serialises the shared state's changes made here (state.go).
	stateMu sync.Mutex
}

// sharedState is what callers and the turn loop share. Whoever touches it
// holds mu (the methods named …Locked expect their caller to).
type sharedState struct {
	mu sync.Mutex

	// The turns, from sent to running.
	queue    []queued      // what the store does not hold of turns sent here and not started
	sent     int           // counts additions to queue, so the loop sees new ones
	handling string        // the user message of the turn the loop has taken and not started (or dropped) yet
	running  *turn         // nil when idle
	pending  *pendingRound // a turn waiting for client tool results
	parked   *parkedTurn   // the turn waiting for approvals, as far as known here
	// early: the model call sent while the message that the next turn
	// answers committed (startEarly), for that turn to take over.
	early     earlyCall
	timers    map[string]*time.Timer // approval expiry by call id
	withdrawn map[string]withdrawal  // turns to withdraw before they start (withdraw.go)
	// stranded: a turn ended without storing its user message's entry (its
	// every write failed) and is still open, to be retried; a message sent
	// meanwhile must not write its own entry ahead of it (send's early
	// entry). Set by dropUnsaved, cleared when a turn stores held entries.
	stranded bool

	// The turn loop and its lease.
	looping bool // a turn loop goroutine owns the queue
	// counted: the limiter counts this conversation as running a turn —
	// from the loop's start until its turn's end is published, and again
	// while a later turn of the same loop runs
	counted bool
	leased  bool // the loop holds the lease (of epoch): this process starts the turns
	epoch   int64

	// Subscribers, and what one joining the running turn gets first.
	phase      string          // agentik.DeltaReasoning or DeltaText of the running turn
	partial    strings.Builder // text of the current phase so far
	streams    map[*stream[agentik.Event]]struct{}
	lastActive time.Time
}

// commitState orders the conversation's writes: each commit and the
// publication of its events happen under writeMu, so subscribers get a
// conversation's durable events in cursor order. Its fields are guarded by
// writeMu.
type commitState struct {
	writeMu       sync.Mutex
	lastPublished int64
	tempBytes     int64 // temporal: what the memory store holds for it (see limits.go)
}

// loopState is the turn loop's cache of working memory. No lock guards it:
// the goroutine of the conversation's turn loop touches it while it takes,
// runs and ends a turn (and the goroutine of a tool round's last result
// while the loop waits for that round: turnRun.startNext). While no turn is
// taken or running, a holder of mu may: send adds the entry of a message
// to an idle conversation (startEarly reads it), dropMemoryIfIdle frees it
// while no loop runs.
type loopState struct {
	memory       []agentik.MemoryEntry
	memoryLoaded bool
	// unsaved counts the entries at the end of memory that the running
	// turn has not stored yet (their Order is 0): the user's message, held
	// until the turn's first write (turnRun.run).
	unsaved int
}

// queued is what a turn sent here carries besides its stored user message:
// the client tools it was sent with, or the continuation of its client tool
// round whose results arrived.
type queued struct {
	user   agentik.Message
	client []agentik.ToolSpec // client tools offered in this turn
	resume *pendingRound      // non-nil: continue this round instead of starting

	recovered bool // left open by a previous process, found at start
	// fresh: sent to an idle conversation, so its turn starts on its
	// request (its span is a child of the request's, not linked to it).
	fresh bool
}

// pendingRound is a tool round cut short by client tool calls: the model's
// message and the server tools' results, waiting for the client's results.
type pendingRound struct {
	user      agentik.Message
	client    []agentik.ToolSpec
	text      string
	reasoning string
	calls     []agentik.ToolCall
	results   map[string]agentik.ToolResult // by call id; client ones filled on arrival
	waiting   map[string]bool               // client call ids without a result
	asking    map[string]agentik.Event      // calls waiting for approval: their approval_requested
	approved  map[string]agentik.RawJSON    // approved calls without a result: edited arguments or nil
}

// turn is the state of the running turn shared with Send and Interrupt:
// user and cancel are set when it starts, reason and by are guarded by
// conv.mu.
type turn struct {
	user   agentik.Message
	cancel context.CancelFunc
	reason string // interrupt reason, set before cancel
	by     string // who interrupted, when known (approval_resolved.by)
	// early is the turn's next model call, sent while what it answers
	// committed (the message, or a tool round's results); only the turn
	// loop touches it.
	early earlyCall
}

func (e *Engine) newConv(rec agentik.ConversationRecord) *conv {
	coord := e.coord
	if rec.Temporal {
		coord = e.tempCoord
	}
	return &conv{
		e:        e,
		id:       rec.ID,
		owner:    rec.Owner,
		temporal: rec.Temporal,
		store:    e.storeFor(rec.Temporal),
		coord:    coord,
		shared:   e.opts.Cluster != nil && !rec.Temporal,
		sharedState: sharedState{
			lastActive: time.Now(),
			streams:    make(map[*stream[agentik.Event]]struct{}),
			withdrawn:  make(map[string]withdrawal),
		},
	}
}

// runsElsewhere reports whether another process runs a turn of the
// conversation (a message to it adds no concurrent turn).
func (c *conv) runsElsewhere() bool {
	if !c.shared {
		return false
	}
	_, ok := c.coord.Running(c.id)
	return ok
}

func (c *conv) hasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending != nil
}

// busyHere reports whether a turn runs, waits or is queued in this
// process (read at once: a turn moving from the queue to running is seen
// in one or the other).
func (c *conv) busyHere() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running != nil || c.parked != nil || c.takenLocked() != "" || len(c.queue) > 0
}

// takenLocked is the turn the loop has taken and not started yet, unless
// it was withdrawn meanwhile: that turn is over the moment its end is
// published, though the loop still holds it until it sees the withdrawal.
// The caller holds mu.
func (c *conv) takenLocked() string {
	if c.handling == "" || c.withdrawn[c.handling] == closedHere {
		return ""
	}
	return c.handling
}

func (c *conv) isWorking() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running != nil || c.parked != nil
}

func (c *conv) idleSince(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil || c.parked != nil || len(c.queue) > 0 || len(c.streams) > 0 {
		return 0
	}
	return now.Sub(c.lastActive)
}

// dropMemoryIfIdle frees the cached working memory of a conversation idle
// for longer than d; the next turn reads it from the store again. The turn
// loop only touches the cache while looping, which mu guards.
func (c *conv) dropMemoryIfIdle(now time.Time, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.looping || c.running != nil || len(c.queue) > 0 || c.pending != nil || now.Sub(c.lastActive) <= d {
		return
	}
	c.memory, c.memoryLoaded = nil, false
}

func (c *conv) info(rec agentik.ConversationRecord) agentik.ConversationInfo {
	info := infoOf(rec, c.e.opts.ImageInput)
	// A turn sent here that its loop has not started yet counts: a reader
	// that sees the message stored and working false would take the turn
	// for one that ended without an answer.
	info.Working = c.busyHere()
	if !info.Working {
		_, info.Working = c.coord.Running(c.id)
	}
	return info
}

func (c *conv) snapshot(ctx context.Context) (agentik.ConversationInfo, error) {
	rec, err := c.store.GetConversation(ctx, c.id)
	if err != nil {
		if agentik.IsNotFound(err) {
			return agentik.ConversationInfo{}, agentik.Errorf(agentik.ENotFound, "conversation not found")
		}
		return agentik.ConversationInfo{}, fmt.Errorf("get conversation: %w", err)
	}
	return c.info(rec), nil
}

func (c *conv) rename(ctx context.Context, title string) (agentik.ConversationInfo, error) {
	if err := validTitle(title); err != nil {
		return agentik.ConversationInfo{}, err
	}
	c.titleMu.Lock()
	defer c.titleMu.Unlock()
	return c.setTitle(ctx, title)
}

// setTitle stores title and publishes its renamed agent event. The caller
// holds titleMu.
func (c *conv) setTitle(ctx context.Context, title string) (agentik.ConversationInfo, error) {
	rec, err := c.storeTitle(ctx, title)
	if err != nil {
		return agentik.ConversationInfo{}, err
	}
	return c.info(rec), nil
}

// storeTitle stores title and publishes its renamed agent event; the
// caller holds titleMu.
func (c *conv) storeTitle(ctx context.Context, title string) (agentik.ConversationRecord, error) {
	aw := c.e.beginAgentWrite(c.temporal)
	rec, ev, err := c.store.RenameConversation(ctx, c.id, title, agentik.Now())
	if err == nil {
		aw.done(&ev)
	} else {
		aw.done(nil)
	}
	if err != nil {
		if agentik.IsNotFound(err) {
			return rec, agentik.Errorf(agentik.ENotFound, "conversation not found")
		}
		return rec, fmt.Errorf("rename conversation: %w", err)
	}
	return rec, nil
}

// send stores a user message and schedules its turn per the busy policy.
func (c *conv) send(ctx context.Context, req agentik.SendRequest, cut bool) (agentik.SendResult, error) {
	if len(req.ToolResults) > 0 {
		return c.sendToolResults(ctx, req)
	}
	if err := c.checkSend(req); err != nil {
		return agentik.SendResult{}, err
	}
	req.Content = agentik.CanonicalImages(req.Content) // equal images, equal text: stored once
	if c.temporal {
		if err := c.e.limits.AdmitTemporal(c.owner, messageBytes(&agentik.Message{Content: req.Content, Context: req.Context})); err != nil {
			return agentik.SendResult{}, err
		}
	}
	if err := c.e.accepting(); err != nil {
		return agentik.SendResult{}, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	busy := c.running != nil || c.handling != "" || c.parked != nil || len(c.queue) > 0
	ahead := ""
	if cut && busy {
		ahead = c.aheadLocked()
	}
	if busy && req.IfBusy == agentik.BusyReject {
		return agentik.SendResult{}, agentik.Errorf(agentik.EBusy, "a turn is running")
	}
	if err := c.e.limits.admit(c.owner, c.counted || c.runsElsewhere()); err != nil {
		return agentik.SendResult{}, err
	}
	msg := agentik.Message{
		ID:             agentik.NewID(),
		ConversationID: c.id,
		Date:           agentik.Now(),
		Type:           agentik.MsgUser,
		Content:        req.Content,
		Context:        req.Context,
		ClientTools:    req.ClientTools, // stored: any process, or a restart, offers them again
	}
	if !req.Params.Empty() {
		msg.Params = req.Params // stored, like the client tools
	}
	if tr := c.e.opts.Tracer; tr != nil {
		msg.TraceParent = tr.TraceParent(ctx) // stored: the turn is tied to the request wherever it runs
	}
	w := agentik.Write{Events: []agentik.Event{agentik.MessageEvent(&msg)}, Touch: msg.Date, Keys: req.Keys}
	if req.Parent != nil {
		// An edit: stored on its own branch; its turn moves the head there.
		w.Detached, w.Parent = true, *req.Parent
	}
	abandoned := c.pending
	if abandoned != nil {
		// A new message instead of tool results: the waiting turn is closed.
		w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: msg.Date, Type: agentik.EvInterrupted,
			ReplyTo: abandoned.user.ID, Reason: agentik.ReasonBusyPolicy})
	}
	// An idle conversation answers this message next: its working-memory
	// entry goes in the same commit, saving the turn a write. Idle: no turn
	// runs or is being started, and alone on the store every other open turn
	// not started is queued here (busy) or stranded. (Not when sharing the
	// store, where only the lease holder writes working memory.)
	withEntry := !busy && !c.shared && !c.stranded && !w.Detached
	var ec earlyCall
	if withEntry {
		w.Memory = []agentik.MemoryEntry{{SourceID: msg.ID, ReplyTo: msg.ID,
			Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: msg.Content}}}
		ec = c.startEarly(msg.ID, w.Memory[0], req.ClientTools, msg.Params)
	}
	if _, err := c.commit(ctx, w); err != nil {
		ec.drop() // the message does not exist: neither does its turn
		return agentik.SendResult{}, err
	}
	c.early.hold(ec) // for its turn to take over (runPending)
	if withEntry && c.memoryLoaded {
		c.memory = append(c.memory, w.Memory...) // the store wrote Order into w.Memory
	}
	c.pending = nil
	c.lastActive = time.Now()
	c.queue = append(c.queue, queued{user: msg, client: req.ClientTools, fresh: !busy})
	c.sent++
	if busy && req.IfBusy == agentik.BusyInterrupt {
		c.cutForBusyLocked(ctx, ahead)
	}
	c.kickLocked()
	return agentik.SendResult{MessageID: msg.ID, Seq: msg.Seq}, nil
}

// checkSend validates a message sent without tool results.
func (c *conv) checkSend(req agentik.SendRequest) error {
	if err := agentik.ValidateContent(req.Content); err != nil {
		return err
	}
	if !agentik.ValidBusyPolicy(req.IfBusy) {
		return agentik.Errorf(agentik.EInvalid, "if_busy must be enqueue, interrupt or reject")
	}
	if err := c.checkInput(req.Content); err != nil {
		return err
	}
	return req.Context.Validate()
}

// checkInput validates what a message's valid content asks of the model
// and the limits: images the model takes, their headers and sizes, and the
// length of its text.
func (c *conv) checkInput(content []agentik.Content) error {
	if agentik.HasImage(content) && !c.e.opts.ImageInput {
		return agentik.Errorf(agentik.EInvalid, "the model does not take image input")
	}
	if err := agentik.ValidateInput(content, c.e.opts.MaxImageBytes); err != nil { // image headers and size
		return err
	}
	return checkText(content, c.e.opts.MaxTextBytes)
}

// sendToolResults feeds client tool results to the waiting turn and
// continues it; a message in the same request is answered after it.
func (c *conv) sendToolResults(ctx context.Context, req agentik.SendRequest) (agentik.SendResult, error) {
	if len(req.Content) > 0 {
		if err := agentik.ValidateContent(req.Content); err != nil {
			return agentik.SendResult{}, err
		}
		if err := c.checkInput(req.Content); err != nil {
			return agentik.SendResult{}, err
		}
	}
	if err := req.Context.Validate(); err != nil {
		return agentik.SendResult{}, err
	}
	for _, r := range req.ToolResults {
		for _, part := range r.Content {
			if part.Type == agentik.ContentText && part.Text == "" {
				continue // an empty result is a valid answer
			}
			if err := part.Validate(); err != nil {
				return agentik.SendResult{}, err
			}
			if part.Type == agentik.ContentImage {
				if err := part.ValidateImage(c.e.opts.MaxImageBytes); err != nil { // header and size
					return agentik.SendResult{}, err
				}
			}
		}
	}
	if err := c.e.accepting(); err != nil {
		return agentik.SendResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending
	if p == nil {
		return agentik.SendResult{}, agentik.Errorf(agentik.EInvalid, "no tool calls are waiting for results")
	}
	seen := map[string]bool{}
	for _, r := range req.ToolResults {
		if !p.waiting[r.CallID] || seen[r.CallID] {
			return agentik.SendResult{}, agentik.Errorf(agentik.EInvalid, "tool call %q is not waiting for a result", r.CallID)
		}
		seen[r.CallID] = true
	}
	if len(seen) != len(p.waiting) {
		return agentik.SendResult{}, agentik.Errorf(agentik.EInvalid, "results for %d of %d waiting tool calls", len(seen), len(p.waiting))
	}
	now := agentik.Now()
	var w agentik.Write
	names := map[string]string{}
	for _, tc := range p.calls {
		names[tc.ID] = tc.Name
	}
	for _, r := range req.ToolResults {
		content := agentik.CanonicalImages(r.Content)
		if len(content) == 0 {
			content = []agentik.Content{agentik.Text("")}
		}
		m := agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgToolResult,
			CallID: r.CallID, Name: names[r.CallID], Content: content, IsError: r.IsError, ReplyTo: p.user.ID}
		w.Events = append(w.Events, agentik.MessageEvent(&m))
	}
	var msg *agentik.Message
	if len(req.Content) > 0 {
		msg = &agentik.Message{ID: agentik.NewID(), ConversationID: c.id, Date: now, Type: agentik.MsgUser,
			Content: agentik.CanonicalImages(req.Content), Context: req.Context, ClientTools: req.ClientTools}
		if !req.Params.Empty() {
			msg.Params = req.Params
		}
		if tr := c.e.opts.Tracer; tr != nil {
			msg.TraceParent = tr.TraceParent(ctx)
		}
		w.Events = append(w.Events, agentik.MessageEvent(msg))
		w.Touch = now
	}
	if _, err := c.commit(ctx, w); err != nil {
		return agentik.SendResult{}, err
	}
	for i, r := range req.ToolResults {
		content := w.Events[i].Message.Content
		p.results[r.CallID] = agentik.ToolResult{Content: content, IsError: r.IsError}
	}
	if len(req.ClientTools) > 0 {
		p.client = req.ClientTools
	}
	c.pending = nil
	c.lastActive = time.Now()
	// The continuation goes first: the conversation was idle while it waited.
	c.queue = append([]queued{{user: p.user, client: p.client, resume: p}}, c.queue...)
	res := agentik.SendResult{MessageID: p.user.ID, Seq: p.user.Seq}
	if msg != nil {
		c.queue = append(c.queue, queued{user: *msg, client: req.ClientTools})
		res = agentik.SendResult{MessageID: msg.ID, Seq: msg.Seq}
	}
	c.sent++
	c.kickLocked()
	return res, nil
}

// interrupt cancels the running turn with reason; false when idle.
func (c *conv) interrupt(reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interruptLocked(reason)
}

// interruptBy is interrupt on behalf of principal by.
func (c *conv) interruptBy(reason, by string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil && c.running.reason == "" {
		c.running.by = by
	}
	return c.interruptLocked(reason)
}

// aheadLocked is the turn a busy-policy interrupt cuts when none runs
// here: the one this process's loop took and has not started yet (its
// model call, sent early, may be answering already), or, alone on the
// store, the first of its queue. "" for none (a turn that waits is closed
// by interruptParked; one another process runs is asked through the
// Coordinator). Sharing the store, this process's queue is not the
// store's: only a turn its loop took counts. The caller holds mu and has
// not queued the new message yet.
func (c *conv) aheadLocked() string {
	switch {
	case c.running != nil || c.parked != nil:
		return ""
	case c.takenLocked() != "":
		return c.handling
	case c.shared || c.pending != nil || c.stranded:
		return ""
	case len(c.queue) > 0:
		return c.queue[0].user.ID
	}
	return ""
}

// cutForBusyLocked is the busy-policy interrupt once the new message is
// accepted: the running turn is cancelled, or the turn ahead (aheadLocked,
// read before the message was queued) is withdrawn before it starts, as
// Interrupt does. The caller holds mu.
func (c *conv) cutForBusyLocked(ctx context.Context, ahead string) {
	if c.interruptLocked(agentik.ReasonBusyPolicy) || ahead == "" {
		return
	}
	if err := c.withdrawLocked(context.WithoutCancel(ctx), ahead, agentik.ReasonBusyPolicy); err != nil {
		c.e.log.Warn("busy policy: withdraw the turn about to start", "conversation", c.id, "reply_to", ahead, "err", err)
	}
}

// starting returns the user message whose turn this process starts next
// and has not started yet — taken by its loop, or first in its queue — or
// "" when a turn runs, waits (for approvals or client tool results), or is
// not this process's to start.
func (c *conv) starting() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.running != nil || c.parked != nil:
		return ""
	case c.takenLocked() != "": // taken from the store's queue: it starts next
		return c.handling
	case c.pending != nil || c.stranded || (c.shared && !c.leased):
		return "" // the store's first open turn is not the queue's
	case len(c.queue) > 0:
		return c.queue[0].user.ID
	}
	return ""
}

// interruptLocked cancels the running turn with reason (the first reason
// given counts); false when none runs. The caller holds mu.
func (s *sharedState) interruptLocked(reason string) bool {
	if s.running == nil {
		return false
	}
	if s.running.reason == "" {
		s.running.reason = reason
	}
	s.running.cancel()
	return true
}

// commit writes w and publishes its events in order. Writes that touch the
// conversation also produce an agent event, ordered under agentMu.
func (c *conv) commit(ctx context.Context, w agentik.Write) ([]agentik.Event, error) {
	w.ConversationID = c.id
	if w.Fence == 0 {
		w.Fence = fenceOf(ctx) // a turn's writes are fenced by its lease
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	// A touch appends an agent event: published in cursor order without a
	// lock held across the commit (agentorder.go).
	var aw agentWrite
	touch := !w.Touch.IsZero()
	if touch {
		aw = c.e.beginAgentWrite(c.temporal)
	}
	evs, agentEv, err := c.store.Commit(ctx, w)
	if err != nil {
		if touch {
			aw.done(nil)
		}
		if agentik.IsNotFound(err) {
			return nil, agentik.Errorf(agentik.ENotFound, "conversation not found")
		}
		return nil, fmt.Errorf("commit: %w", err)
	}
	if c.temporal {
		var n int64
		for _, ev := range evs {
			if ev.Message != nil {
				n += messageBytes(ev.Message)
			}
		}
		c.tempBytes += n
		c.e.limits.AddTemporal(c.owner, n)
	}
	for _, ev := range evs {
		if ev.Cursor > c.lastPublished {
			c.lastPublished = ev.Cursor
		}
		c.e.opts.Bus.Publish(ev)
	}
	if touch { // only a touch appends an agent event
		aw.done(agentEv)
	}
	return evs, nil
}

// publish sends an online event. Caller holds mu, which keeps the partial
// text snapshot of new subscribers consistent with the deltas they receive.
func (c *conv) publishLocked(ev agentik.Event) {
	ev.ConversationID = c.id
	if ev.Date.IsZero() {
		ev.Date = agentik.Now()
	}
	c.e.opts.Bus.Publish(ev)
}

// releaseTemporal frees what a deleted or closed temporal conversation held.
func (c *conv) releaseTemporal() {
	c.writeMu.Lock()
	n := c.tempBytes
	c.tempBytes = 0
	c.writeMu.Unlock()
	if n != 0 {
		c.e.limits.AddTemporal(c.owner, -n)
	}
}

// checkText refuses a message whose text is longer than limit bytes.
func checkText(parts []agentik.Content, limit int) error {
	n := 0
	for _, p := range parts {
		n += len(p.Text)
	}
	if n > limit {
		return agentik.Errorf(agentik.ETooLarge, "the message's text is longer than %d bytes", limit)
	}
	return nil
}

// closeInterrupted closes the turn of user message id without running it.
func (c *conv) closeInterrupted(ctx context.Context, id, reason string) error {
	_, err := c.commit(ctx, agentik.Write{Events: []agentik.Event{{
		ConversationID: c.id, Date: agentik.Now(), Type: agentik.EvInterrupted, ReplyTo: id, Reason: reason,
	}}})
	return err
}

// closeStreams tells subscribers the conversation is closing (deleted or
// idle) and ends their streams with ENotFound once they have it.
func (c *conv) closeStreams() {
	c.mu.Lock()
	c.publishLocked(agentik.Event{Type: agentik.EvConversationClosing})
	streams := make([]*stream[agentik.Event], 0, len(c.streams))
	for s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	for _, s := range streams {
		s.end(agentik.Errorf(agentik.ENotFound, "conversation closed"))
	}
}

// handle implements agentik.Conversation over a live conv.
type handle struct{ c *conv }

var _ agentik.Conversation = (*handle)(nil)

func (h *handle) ID() string { return h.c.id }

func (h *handle) Info(ctx context.Context) (agentik.ConversationInfo, error) {
	return h.c.snapshot(ctx)
}

// Send stores a user message (or client tool results) and schedules its
// turn. The busy policy applies to a turn running anywhere: sharing the
// store, reject refuses while the conversation has an open turn, and
// interrupt also cancels a turn another process runs (not the one
// answering this message).
func (h *handle) Send(ctx context.Context, req agentik.SendRequest) (agentik.SendResult, error) {
	c := h.c
	// Sharing the store, the state of the turns is in the store; alone,
	// results may come before the start-up recovery has found the round
	// they answer (a restart): it is read from the store too.
	switch {
	case c.shared && len(req.ToolResults) == 0 && (req.IfBusy == "" || req.IfBusy == agentik.BusyEnqueue):
		// Queued whatever the turns' state, so nothing is read: a turn
		// waiting for client results with this message behind it is
		// abandoned by the lease holder's loop (recoverTurn), as this send
		// would have abandoned it — what this process knows of such a turn
		// may be out of date.
		c.forgetPending()
	case c.shared || (len(req.ToolResults) > 0 && !c.hasPending()):
		if err := c.syncShared(ctx, req); err != nil {
			return agentik.SendResult{}, err
		}
	}
	cut := false // the turn ahead is cut once the message is accepted
	if req.IfBusy == agentik.BusyInterrupt && len(req.ToolResults) == 0 {
		// A turn waiting for approvals is interrupted: its pending calls
		// are denied and it is closed, then this message is answered.
		closed, err := c.interruptParked(ctx, agentik.ReasonBusyPolicy, agentik.PrincipalFrom(ctx))
		if err != nil {
			return agentik.SendResult{}, err
		}
		cut = !closed // else the turn it closed was the one to cut
	}
	if req.Parent != nil && len(req.ToolResults) == 0 {
		head, err := c.checkParent(ctx, *req.Parent)
		if err != nil {
			return agentik.SendResult{}, err
		}
		if head {
			req.Parent = nil // follows the head: an ordinary send
		}
	}
	res, err := c.send(ctx, req, cut)
	if err == nil && res.Seq == 1 && len(req.ToolResults) == 0 {
		c.titleFromFirst(ctx, req.Content) // before Send returns: whoever reads the conversation next sees it
	}
	if err == nil && req.IfBusy == agentik.BusyInterrupt && !c.isWorking() {
		if _, err := c.coord.Interrupt(ctx, agentik.InterruptRequest{ConversationID: c.id, Reason: agentik.ReasonBusyPolicy, Unless: res.MessageID}); err != nil {
			c.e.log.Warn("forward busy-policy interrupt", "conversation", c.id, "err", err)
		}
	}
	return res, err
}

// forgetPending drops the round this process knew to wait for client
// results, unless a turn runs here.
func (c *conv) forgetPending() {
	c.mu.Lock()
	if c.running == nil {
		c.pending = nil
	}
	c.mu.Unlock()
}

// syncShared prepares a send to a conversation whose turns other processes
// may run: reject refuses while it has an open turn, wherever it runs, and
// a turn waiting for client tool results is found in the store, whichever
// process ran it, so results — or a new message, which abandons it — may be
// posted to any process.
func (c *conv) syncShared(ctx context.Context, req agentik.SendRequest) error {
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil {
		return c.readErr(err)
	}
	var round, parked *pendingRound
	if len(q.Open) > 0 {
		p, err := c.openRound(ctx, q.Open[0], q.Turn)
		if err != nil {
			return err
		}
		switch {
		case p != nil && len(p.asking) > 0:
			parked = p
		case p != nil && len(p.waiting) > 0:
			round = p
		}
	}
	if parked != nil {
		c.park(parked, parkSilent) // another process parked it: known here now
	} else {
		c.mu.Lock()
		if c.running == nil {
			c.parked = nil // resumed or closed through another process
		}
		c.mu.Unlock()
	}
	if req.IfBusy == agentik.BusyReject && len(req.ToolResults) == 0 && len(q.Open) > 0 && (round == nil || len(q.Open) > 1) {
		return agentik.Errorf(agentik.EBusy, "a turn is running")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case round != nil:
		if c.pending != nil && c.pending.user.ID == round.user.ID && len(round.client) == 0 {
			round.client = c.pending.client
		}
		c.pending = round
	case c.running == nil:
		c.pending = nil // answered or abandoned through another process
	}
	return nil
}

// Interrupt cancels the turn here, or asks the process running it.
func (h *handle) Interrupt(ctx context.Context) (bool, error) {
	if h.c.interruptBy(agentik.ReasonUser, agentik.PrincipalFrom(ctx)) {
		return true, nil
	}
	if ok, err := h.c.interruptParked(ctx, agentik.ReasonUser, agentik.PrincipalFrom(ctx)); ok || err != nil {
		return ok, err
	}
	if id := h.c.starting(); id != "" {
		// Sent and about to start here (its model call may already be on
		// its way): the current turn, withdrawn before it starts.
		return h.c.interruptTurn(ctx, id, agentik.ReasonUser)
	}
	ok, err := h.c.coord.Interrupt(ctx, agentik.InterruptRequest{ConversationID: h.c.id, Reason: agentik.ReasonUser})
	if err != nil {
		return false, h.c.readErr(err)
	}
	if ok || !h.c.shared {
		return ok, nil
	}
	// Sharing the store, no process runs a turn of it: its first open turn
	// may be one stored and not started yet, by whichever process takes
	// the lease next.
	return h.c.interruptUnstarted(ctx)
}

// interruptUnstarted withdraws the conversation's first open turn unless it
// waits (for client tool results or approvals): a turn no process has
// started yet. It reports false when there is none.
func (c *conv) interruptUnstarted(ctx context.Context) (bool, error) {
	q, err := c.coord.Pending(ctx, c.id)
	if err != nil {
		return false, c.readErr(err)
	}
	if len(q.Open) == 0 {
		return false, nil
	}
	round, err := c.openRound(ctx, q.Open[0], q.Turn)
	if err != nil {
		return false, err
	}
	if round != nil && (len(round.waiting) > 0 || len(round.asking) > 0) {
		return false, nil
	}
	return c.interruptOpen(ctx, q, q.Open[0].ID, agentik.ReasonUser)
}

var _ agentik.TurnInterrupter = (*handle)(nil)

// InterruptTurn interrupts the turn answering replyTo wherever it is: see
// withdraw.go.
func (h *handle) InterruptTurn(ctx context.Context, replyTo string) (bool, error) {
	return h.c.interruptTurn(ctx, replyTo, agentik.ReasonUser)
}

func (h *handle) Messages(ctx context.Context, req agentik.MessagesRequest) (agentik.MessagePage, error) {
	if req.Limit <= 0 {
		req.Limit = agentik.DefaultMessagesLimit
	}
	if req.Limit > agentik.MaxMessagesLimit {
		req.Limit = agentik.MaxMessagesLimit
	}
	if req.After < 0 || req.Before < 0 || req.Offset < 0 {
		return agentik.MessagePage{}, agentik.Errorf(agentik.EInvalid, "after, before and offset must not be negative")
	}
	// Read the cursor first: subscribing from it may repeat an event of the
	// page, never miss one.
	cursor, err := h.c.store.LastCursor(ctx, h.c.id)
	if err != nil {
		return agentik.MessagePage{}, h.c.readErr(err)
	}
	msgs, more, err := h.c.store.Messages(ctx, h.c.id, req)
	if err != nil {
		return agentik.MessagePage{}, h.c.readErr(err)
	}
	if msgs == nil {
		msgs = []agentik.Message{}
	}
	return agentik.MessagePage{Messages: msgs, HasMore: more, Cursor: cursor}, nil
}

// Message reads one journal message by id (agentik.MessageReader).
func (h *handle) Message(ctx context.Context, id string) (agentik.Message, error) {
	m, err := h.c.store.Message(ctx, h.c.id, id)
	if agentik.IsNotFound(err) {
		return agentik.Message{}, agentik.Errorf(agentik.ENotFound, "message not found")
	}
	if err != nil {
		return agentik.Message{}, h.c.readErr(err)
	}
	return m, nil
}

func (h *handle) Events(ctx context.Context, after int64) (agentik.Stream[agentik.Event], error) {
	return h.c.subscribe(ctx, after)
}

func (h *handle) Rename(ctx context.Context, title string) (agentik.ConversationInfo, error) {
	return h.c.rename(ctx, title)
}

func (h *handle) Close() error { return nil }

func (c *conv) readErr(err error) error {
	if agentik.IsNotFound(err) {
		return agentik.Errorf(agentik.ENotFound, "conversation not found")
	}
	return fmt.Errorf("read conversation %s: %w", c.id, err)
}
