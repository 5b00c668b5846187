package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/agentik/agentik"
)

// Branching (SPEC §18, docs/branching.md). The store keeps the message
// tree and the head; this file decides where a turn answers. A message
// sent the ordinary way follows the head, and a turn on the head path
// appends to it. An edit (a send with a parent that is not the head) is
// stored detached, and a regenerate opens its user message's turn again:
// either way the turn, once it starts (placeTurn), first moves the head
// to where it answers and rebuilds working memory for that path, in one
// commit with the head_moved event, so that the model sees exactly the
// head path.

var _ agentik.Brancher = (*handle)(nil)

// messageAt reads the message of seq; ENotFound when there is none.
func (c *conv) messageAt(ctx context.Context, seq int64) (agentik.Message, error) {
	if seq <= 0 {
		return agentik.Message{}, agentik.Errorf(agentik.ENotFound, "message %d not found", seq)
	}
	path, err := c.store.Path(ctx, c.id, seq, seq)
	if err != nil {
		return agentik.Message{}, c.readErr(err)
	}
	if len(path) == 0 {
		return agentik.Message{}, agentik.Errorf(agentik.ENotFound, "message %d not found", seq)
	}
	return path[0], nil
}

// checkParent refuses a parent a new user message cannot follow: no
// message of the conversation (ENotFound), or not the end of a turn — the
// root, an assistant message or an error (EInvalid). It reports whether
// parent is the head (an ordinary send).
func (c *conv) checkParent(ctx context.Context, parent int64) (head bool, err error) {
	if parent < 0 {
		return false, agentik.Errorf(agentik.EInvalid, "parent must not be negative")
	}
	rec, err := c.store.GetConversation(ctx, c.id)
	if err != nil {
		return false, c.readErr(err)
	}
	if parent == rec.Head {
		return true, nil
	}
	if parent == 0 {
		return false, nil
	}
	m, err := c.messageAt(ctx, parent)
	if err != nil {
		return false, err
	}
	if m.Type != agentik.MsgAssistant && m.Type != agentik.MsgError {
		return false, agentik.Errorf(agentik.EInvalid, "a message can only follow the end of an answer (an assistant message or an error), not a %s", m.Type)
	}
	return false, nil
}

// Regenerate answers a user message again on a new branch.
func (h *handle) Regenerate(ctx context.Context, req agentik.RegenerateRequest) (agentik.SendResult, error) {
	c := h.c
	if !agentik.ValidBusyPolicy(req.IfBusy) {
		return agentik.SendResult{}, agentik.Errorf(agentik.EInvalid, "if_busy must be enqueue, interrupt or reject")
	}
	if req.Seq < 0 {
		return agentik.SendResult{}, agentik.Errorf(agentik.EInvalid, "seq must not be negative")
	}
	user, err := c.regenerated(ctx, req.Seq)
	if err != nil {
		return agentik.SendResult{}, err
	}
	if err := c.e.accepting(); err != nil {
		return agentik.SendResult{}, err
	}
	cut := false // the turn ahead is cut once the regenerate is accepted
	if req.IfBusy == agentik.BusyInterrupt {
		closed, err := c.interruptParked(ctx, agentik.ReasonBusyPolicy, agentik.PrincipalFrom(ctx))
		if err != nil {
			return agentik.SendResult{}, err
		}
		cut = !closed
	}
	res, err := c.regenerate(ctx, user, req.IfBusy, cut)
	if err == nil && req.IfBusy == agentik.BusyInterrupt && !c.isWorking() {
		if _, err := c.coord.Interrupt(ctx, agentik.InterruptRequest{ConversationID: c.id, Reason: agentik.ReasonBusyPolicy, Unless: res.MessageID}); err != nil {
			c.e.log.Warn("forward busy-policy interrupt", "conversation", c.id, "err", err)
		}
	}
	return res, err
}

// regenerated is the user message a regenerate of seq answers again (0:
// the head path's last user message), refused unless its turn is closed.
func (c *conv) regenerated(ctx context.Context, seq int64) (agentik.Message, error) {
	var user agentik.Message
	if seq == 0 {
		path, err := c.store.Path(ctx, c.id, -1, 0)
		if err != nil {
			return user, c.readErr(err)
		}
		for i := len(path) - 1; i >= 0 && user.ID == ""; i-- {
			if path[i].Type == agentik.MsgUser {
				user = path[i]
			}
		}
		if user.ID == "" {
			return user, agentik.Errorf(agentik.EInvalid, "the conversation has no user message to answer again")
		}
	} else {
		m, err := c.messageAt(ctx, seq)
		if err != nil {
			return user, err
		}
		if m.Type != agentik.MsgUser {
			return user, agentik.Errorf(agentik.EInvalid, "only a user message can be answered again, not a %s", m.Type)
		}
		user = m
	}
	open, err := c.store.OpenTurnsOf(ctx, c.id)
	if err != nil {
		return user, c.readErr(err)
	}
	for _, m := range open {
		if m.ID == user.ID {
			return user, agentik.Errorf(agentik.EInvalid, "message %d is still being answered", user.Seq)
		}
	}
	return user, nil
}

// regenerate opens user's turn again, durably, and queues it per the busy
// policy, as send does with a new message.
func (c *conv) regenerate(ctx context.Context, user agentik.Message, ifBusy string, cut bool) (agentik.SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	busy := c.running != nil || c.handling != "" || c.parked != nil || len(c.queue) > 0 || c.runsElsewhere()
	ahead := ""
	if cut && busy {
		ahead = c.aheadLocked()
	}
	if busy && ifBusy == agentik.BusyReject {
		return agentik.SendResult{}, agentik.Errorf(agentik.EBusy, "a turn is running")
	}
	if err := c.e.limits.admit(c.owner, c.counted || c.runsElsewhere()); err != nil {
		return agentik.SendResult{}, err
	}
	w := agentik.Write{Reopen: user.ID, Touch: agentik.Now()}
	if abandoned := c.pending; abandoned != nil {
		w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: w.Touch, Type: agentik.EvInterrupted,
			ReplyTo: abandoned.user.ID, Reason: agentik.ReasonBusyPolicy})
	}
	if _, err := c.commit(ctx, w); err != nil {
		return agentik.SendResult{}, err
	}
	c.pending = nil
	c.lastActive = time.Now()
	c.queue = append(c.queue, queued{user: user, client: user.ClientTools, fresh: !busy})
	c.sent++
	if busy && ifBusy == agentik.BusyInterrupt {
		c.cutForBusyLocked(ctx, ahead)
	}
	c.kickLocked()
	return agentik.SendResult{MessageID: user.ID, Seq: user.Seq}, nil
}

// SetHead makes seq the head, while no turn runs or waits.
func (h *handle) SetHead(ctx context.Context, seq int64) (agentik.ConversationInfo, error) {
	c := h.c
	if seq <= 0 {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.EInvalid, "seq must be a message's seq")
	}
	if _, err := c.messageAt(ctx, seq); err != nil {
		return agentik.ConversationInfo{}, err
	}
	if rec, err := c.store.GetConversation(ctx, c.id); err != nil {
		return agentik.ConversationInfo{}, c.readErr(err)
	} else if rec.Head == seq {
		return c.info(rec), nil // already there: nothing moves, no event
	}
	open, err := c.store.OpenTurnsOf(ctx, c.id)
	if err != nil {
		return agentik.ConversationInfo{}, c.readErr(err)
	}
	c.mu.Lock()
	busy := c.running != nil || c.handling != "" || c.parked != nil || c.pending != nil || len(c.queue) > 0 ||
		c.runsElsewhere() || len(open) > 0
	if busy {
		c.mu.Unlock()
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.EBusy, "a turn is running or waiting: the head moves once it is over")
	}
	// Holding mu, no turn starts here meanwhile; the loop is not running,
	// so working memory is this goroutine's to rebuild.
	err = c.moveHead(ctx, seq, "")
	c.mu.Unlock()
	if err != nil {
		return agentik.ConversationInfo{}, err
	}
	return c.snapshot(ctx)
}

// placeTurn moves the head to where the turn answering user answers,
// before it starts: to user itself when it is not on the head path (an
// edit, or a message sent before the head moved away), or, when the head
// path already holds an answer to it (a regenerate), to the message that
// answer follows. A turn on the head path with no answer on it yet
// (an ordinary turn, or one resumed after a crash) changes nothing.
//
// head is the conversation's head as read with the queue (0: not read).
// When it is user itself, the head path ends at user and holds no answer
// to it: nothing moves, and the path is not read (a round trip per turn
// on a shared store). The head cannot move away from an open turn's
// message meanwhile (SetHead waits for open turns); a message appended
// after it is no answer to it.
func (c *conv) placeTurn(ctx context.Context, user agentik.Message, head int64) error {
	if head != 0 && head == user.Seq {
		return nil
	}
	path, err := c.store.Path(ctx, c.id, -1, user.Seq)
	if err != nil {
		return err
	}
	if len(path) == 0 || path[0].ID != user.ID {
		return c.moveHead(ctx, user.Seq, user.ID)
	}
	for _, m := range path[1:] {
		if m.ReplyTo == user.ID && answered(&m) {
			// The first reply to user on the path starts the old answer.
			for _, first := range path[1:] {
				if first.ReplyTo == user.ID {
					return c.moveHead(ctx, first.Parent, user.ID)
				}
			}
		}
	}
	return nil
}

// answered reports whether m, a reply on the head path, belongs to an
// answer that ended: a closing message, or an interrupted answer.
func answered(m *agentik.Message) bool {
	return m.ClosesTurn() || (m.Type == agentik.MsgAssistant && m.Interrupted)
}

// moveHead moves the head to seq and rebuilds working memory for the path
// up to it in the same commit (head_moved). The caller owns working memory
// (the turn loop, or SetHead while no loop runs). starting, when set, is
// the user message whose turn starts on the new path: its entry is part of
// the rebuilt memory.
func (c *conv) moveHead(ctx context.Context, seq int64, starting string) error {
	path, err := c.store.Path(ctx, c.id, seq, 0)
	if err != nil {
		return err
	}
	if err := c.ensureMemory(ctx); err != nil {
		return err
	}
	mem := rebuildMemory(c.memory, path, starting)
	for i := range mem {
		mem[i].Order = 0
	}
	w := agentik.Write{
		Events:        []agentik.Event{{ConversationID: c.id, Date: agentik.Now(), Type: agentik.EvHeadMoved, To: seq}},
		Memory:        mem,
		ReplaceMemory: true,
	}
	if _, err := c.commit(ctx, w); err != nil {
		return fmt.Errorf("move head: %w", err)
	}
	c.memory, c.memoryLoaded, c.unsaved = w.Memory, true, 0
	if starting != "" {
		c.mu.Lock()
		c.early.dropFor(starting) // its context was the old path's
		c.mu.Unlock()
	}
	return nil
}

// rebuildMemory is working memory for path (the journal from the root to
// the new head, ascending), made from old, the working memory of the path
// before: the longest prefix of old whose entries all come from messages
// on path is kept as it is — with its compaction summaries, which
// summarise the ancestors of what follows them — and the path's messages
// after it are added. When the kept part does not end where the path's
// remaining messages begin (the branch starts before a summary, or inside
// the kept part), working memory is rebuilt from the whole path, and the
// context budget compacts it again if needed. starting is the user
// message whose turn is about to start: its entry is included even though
// it has no answer yet.
func rebuildMemory(old []agentik.MemoryEntry, path []agentik.Message, starting string) []agentik.MemoryEntry {
	seqOf := make(map[string]int64, len(path)) // message ids and tool call ids on path
	for _, m := range path {
		seqOf[m.ID] = m.Seq
		if m.CallID != "" && (m.Type == agentik.MsgToolCall || m.Type == agentik.MsgToolResult) {
			seqOf["call:"+m.CallID] = m.Seq
		}
	}
	kept, covered := keptPrefix(old, seqOf)
	lo, hi := int64(0), int64(0) // seqs of the messages the kept entries come from
	for seq := range covered {
		if lo == 0 || seq < lo {
			lo = seq
		}
		hi = max(hi, seq)
	}
	var rest []agentik.Message
	for _, m := range path {
		switch {
		case covered[m.Seq]:
		case lo > 0 && m.Seq < lo: // summarised, or dropped by compaction
		case lo > 0 && m.Seq < hi && m.Type != agentik.MsgError:
			return journalMemory(path, starting) // the kept part is not this path's
		default:
			rest = append(rest, m)
		}
	}
	if lo == 0 {
		return journalMemory(path, starting)
	}
	return append(kept, journalMemory(rest, starting)...)
}

// keptPrefix is the longest prefix of old whose entries come from messages
// of seqOf (summaries, which come from none, included), and the seqs of
// those messages.
func keptPrefix(old []agentik.MemoryEntry, seqOf map[string]int64) ([]agentik.MemoryEntry, map[int64]bool) {
	covered := map[int64]bool{}
	var kept []agentik.MemoryEntry
	for _, e := range old {
		var seqs []int64
		ok := true
		on := func(key string) {
			seq, found := seqOf[key]
			ok = ok && found
			seqs = append(seqs, seq)
		}
		switch {
		case e.Message.Role == agentik.RoleSummary:
			// Kept while what follows it is: it summarises their ancestors.
		case e.SourceID != "":
			on(e.SourceID)
		case e.Message.Role == agentik.RoleTool:
			on("call:" + e.Message.CallID)
		case len(e.Message.ToolCalls) > 0:
			for _, tc := range e.Message.ToolCalls {
				on("call:" + tc.ID)
			}
		case e.ReplyTo != "":
			ok = false // a round's text without calls: not made by this engine
		}
		if !ok {
			break
		}
		for _, s := range seqs {
			covered[s] = true
		}
		kept = append(kept, e)
	}
	return kept, covered
}

// journalMemory is working memory made from journal messages (ascending),
// in turn order: each user message with the answer to it that msgs hold.
// A user message with no answer in msgs is left out (it was answered on
// another branch), unless it is starting's.
func journalMemory(msgs []agentik.Message, starting string) []agentik.MemoryEntry {
	var order []string
	turns := map[string][]agentik.Message{}
	users := map[string]agentik.Message{}
	for _, m := range msgs {
		if m.Type == agentik.MsgUser {
			order = append(order, m.ID)
			users[m.ID] = m
			continue
		}
		if m.ReplyTo != "" {
			if _, ok := users[m.ReplyTo]; !ok {
				order = append(order, m.ReplyTo) // its user message came before msgs
			}
			turns[m.ReplyTo] = append(turns[m.ReplyTo], m)
		}
	}
	var mem []agentik.MemoryEntry
	seen := map[string]bool{}
	for _, id := range order {
		if seen[id] {
			continue
		}
		seen[id] = true
		if u, ok := users[id]; ok && (len(turns[id]) > 0 || id == starting) {
			mem = append(mem, agentik.MemoryEntry{SourceID: u.ID, ReplyTo: u.ID,
				Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: u.Content}})
		}
		mem = append(mem, answerMemory(id, turns[id])...)
	}
	return mem
}

// answerMemory is the working memory of one turn's journal: its tool
// rounds (a round missing a result is left out: it was cut short) and its
// answer.
func answerMemory(replyTo string, msgs []agentik.Message) []agentik.MemoryEntry {
	var mem []agentik.MemoryEntry
	var held *agentik.Message // the last assistant message: a round's text, or the answer
	var r round
	emitHeld := func() {
		if held != nil && len(held.Content) > 0 {
			mem = append(mem, agentik.MemoryEntry{SourceID: held.ID, ReplyTo: replyTo,
				Message: agentik.ModelMessage{Role: agentik.RoleAssistant, Content: held.Content, Reasoning: held.Reasoning}})
		}
		held = nil
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Type {
		case agentik.MsgAssistant:
			mem = r.flush(mem, replyTo)
			emitHeld()
			held = m
		case agentik.MsgToolCall:
			if len(r.calls) == 0 || r.resulted {
				mem = r.flush(mem, replyTo)
				if held != nil { // the text that came with the calls
					r.text, r.reasoning, held = agentik.JoinText(held.Content), held.Reasoning, nil
				}
			}
			r.calls = append(r.calls, agentik.ToolCall{ID: m.CallID, Name: m.Name, Arguments: normalizeArgs(m.Arguments)})
		case agentik.MsgToolResult:
			r.resulted = true
			if r.results == nil {
				r.results = map[string]agentik.ToolResult{}
			}
			r.results[m.CallID] = agentik.ToolResult{Content: m.Content, IsError: m.IsError}
		}
	}
	mem = r.flush(mem, replyTo)
	emitHeld()
	return mem
}

// round is a tool round read back from the journal.
type round struct {
	text, reasoning string
	calls           []agentik.ToolCall
	results         map[string]agentik.ToolResult
	resulted        bool
}

// flush appends the round to mem, if it has calls and a result for each,
// and empties it.
func (r *round) flush(mem []agentik.MemoryEntry, replyTo string) []agentik.MemoryEntry {
	if len(r.calls) > 0 {
		res := make([]agentik.ToolResult, len(r.calls))
		complete := true
		for i, tc := range r.calls {
			got, ok := r.results[tc.ID]
			complete = complete && ok
			res[i] = got
		}
		if complete {
			mem = append(mem, roundMemory(replyTo, r.text, r.reasoning, r.calls, res)...)
		}
	}
	*r = round{}
	return mem
}

// Fork copies the path up to req.Seq (0: the head) into a new
// conversation of the same owner.
func (h *handle) Fork(ctx context.Context, req agentik.ForkRequest) (agentik.ConversationInfo, error) {
	c, e := h.c, h.c.e
	if c.temporal {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.EInvalid, "a temporal conversation cannot be forked")
	}
	if req.Seq < 0 {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.EInvalid, "seq must not be negative")
	}
	if err := e.accepting(); err != nil {
		return agentik.ConversationInfo{}, err
	}
	rec, err := c.store.GetConversation(ctx, c.id)
	if err != nil {
		return agentik.ConversationInfo{}, c.readErr(err)
	}
	to := rec.Head
	if req.Seq > 0 {
		to = req.Seq
	}
	path, err := c.store.Path(ctx, c.id, to, 0)
	if err != nil {
		return agentik.ConversationInfo{}, c.readErr(err)
	}
	if req.Seq > 0 && len(path) == 0 {
		return agentik.ConversationInfo{}, agentik.Errorf(agentik.ENotFound, "message %d not found", req.Seq)
	}
	if err := e.limits.AdmitConversation(c.owner); err != nil {
		return agentik.ConversationInfo{}, err
	}
	now := agentik.Now()
	fork, err := e.create(ctx, agentik.ConversationRecord{ID: agentik.NewID(), Owner: c.owner, Title: rec.Title,
		CreatedAt: now, UpdatedAt: now, ForkedFrom: &agentik.ForkedFrom{ConversationID: c.id, Seq: to}})
	if err != nil {
		return agentik.ConversationInfo{}, err
	}
	if len(path) > 0 {
		if err := fork.copyPath(ctx, path, now); err != nil {
			return agentik.ConversationInfo{}, err
		}
	}
	return fork.snapshot(ctx)
}

// copyPath appends copies of path (new ids, one path) to the new
// conversation c with their working memory, in one commit, and answers a
// turn the copy leaves open.
func (c *conv) copyPath(ctx context.Context, path []agentik.Message, now agentik.Time) error {
	ids := make(map[string]string, len(path))
	copies := make([]agentik.Message, len(path))
	w := agentik.Write{Events: make([]agentik.Event, len(path)), Touch: now}
	for i, m := range path {
		m.ID, m.ConversationID, m.Seq, m.Parent, m.Siblings = agentik.NewID(), c.id, 0, 0, nil
		ids[path[i].ID] = m.ID
		if m.ReplyTo != "" {
			m.ReplyTo = ids[m.ReplyTo]
		}
		copies[i] = m
	}
	for i := range copies {
		w.Events[i] = agentik.MessageEvent(&copies[i])
	}
	last := copies[len(copies)-1]
	starting := ""
	if last.Type == agentik.MsgUser {
		starting = last.ID
	}
	w.Memory = journalMemory(copies, starting)
	// A turn the copy holds no end of (it ended with an interrupted event,
	// not copied) is closed, not answered again; only a last user message
	// is answered.
	closed := map[string]bool{}
	for i := range copies {
		if copies[i].ClosesTurn() {
			closed[copies[i].ReplyTo] = true
		}
	}
	for _, m := range copies {
		if m.Type == agentik.MsgUser && !closed[m.ID] && m.ID != starting {
			w.Events = append(w.Events, agentik.Event{ConversationID: c.id, Date: now, Type: agentik.EvInterrupted,
				ReplyTo: m.ID, Reason: agentik.ReasonUser})
		}
	}
	if _, err := c.commit(ctx, w); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	c.memory = w.Memory
	open, err := c.store.OpenTurnsOf(ctx, c.id)
	if err != nil || len(open) == 0 {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range open {
		c.queue = append(c.queue, queued{user: m, client: m.ClientTools, recovered: true})
		c.sent++
	}
	c.kickLocked()
	return nil
}
