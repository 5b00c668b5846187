package openaiapi

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/history"
)

// Metadata keys of the messages this door stores.
const (
	// MetaContextParts counts the trailing text parts of a user message
	// that are the request's system/developer messages or instructions
	// (the turn's context), not what the user wrote.
	MetaContextParts = "openai.context_parts"
)

// chatCall is one chat completion: what the request asks, and what the
// execution found and sent.
type chatCall struct {
	req    ChatRequest
	model  Model
	scope  string     // principal and model: what the index keys are made under
	hist   []view     // the history without system/developer messages
	keys   [][32]byte // digests of hist: keys[k] of hist[:k]
	msgs   []ChatMessage
	system []string // texts of the system/developer messages

	conv   agentik.Conversation
	cursor int64
	turn   string // the user message whose turn the completion follows
	// branchAt is the seq of the last message of the recorded history the
	// request continues (0: none): when the conversation has moved on
	// since, the request's new message branches there (SPEC §18).
	branchAt int64
	client   map[string]bool // client tool names
	usage    *agentik.TurnTokens
	lastSeq  int64
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req, err := DecodeChat(body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(req.Messages) > h.opts.MaxMessages {
		h.fail(w, r, param(agentik.ETooLarge, "messages", "messages: at most %d messages are taken", h.opts.MaxMessages))
		return
	}
	m, err := h.model(ctx, req.Model)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c := &chatCall{req: req, model: m, scope: agentik.PrincipalFrom(ctx) + "\x00" + m.ID, client: map[string]bool{}}
	for _, t := range req.Tools {
		c.client[t.Function.Name] = true
	}
	c.split()
	events, reply, err := h.executeChat(ctx, r.Header.Get(ConversationHeader), c)
	if c.conv != nil {
		defer c.conv.Close()
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if reply != "" { // nothing to answer (approvals still waiting)
		h.writeChat(w, r, c, reply, nil, "stop")
		return
	}
	if req.Stream {
		h.streamChat(ctx, w, c, events)
		return
	}
	h.collectChat(ctx, w, r, c, events)
}

// split sets the call's history without system/developer messages, and
// their texts.
func (c *chatCall) split() {
	for _, m := range c.req.Messages {
		switch m.Role {
		case "system", "developer":
			parts, _ := contentOf(m.Content, "content")
			if t := agentik.JoinText(parts); t != "" {
				c.system = append(c.system, t)
			}
			continue
		}
		parts, _ := contentOf(m.Content, "content")
		v := view{role: m.Role, text: agentik.JoinText(parts), callID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			v.calls = append(v.calls, tc.ID)
		}
		c.hist = append(c.hist, v)
		c.msgs = append(c.msgs, m)
	}
}

// executeChat finds the conversation, decides what of the history is new
// and sends it, under the conversation's lock. It returns the stream to
// follow the turn on, or a reply to give at once (reply) when the request
// sends nothing that starts or continues a turn.
func (h *Handler) executeChat(ctx context.Context, header string, c *chatCall) (agentik.Stream[agentik.Event], string, error) {
	tail, err := h.chatConversation(ctx, header, c)
	if err != nil {
		return nil, "", err
	}
	var journal []agentik.Message
	c.cursor = agentik.LiveOnly
	if c.conv != nil {
		unlock := h.lock(c.conv.ID())
		defer unlock()
		// Only tool messages are held against the journal (the calls it
		// waits for); a plain message needs no read: the subscription
		// made before the send sees every event of its turn.
		if hasRole(c.msgs[tail:], "tool") {
			if journal, c.cursor, err = readJournal(ctx, c.conv); err != nil {
				return nil, "", err
			}
		}
	}
	plan, err := h.planChat(ctx, c, journal, tail)
	if err != nil {
		return nil, "", err
	}
	made := ""         // the conversation this request made
	if c.conv == nil { // a new conversation, once the request is known good
		info, err := c.model.Agent.CreateConversation(ctx, agentik.CreateRequest{History: plan.history})
		if err != nil {
			return nil, "", err
		}
		made = info.ID
		if c.conv, err = c.model.Agent.Conversation(ctx, info.ID); err != nil {
			h.discard(ctx, c.model.Agent, made)
			return nil, "", err
		}
	}
	if plan.reply != "" {
		return nil, plan.reply, nil
	}
	events, err := c.conv.Events(ctx, c.cursor)
	if err != nil {
		h.discard(ctx, c.model.Agent, made)
		return nil, "", err
	}
	if err := h.sendChat(ctx, c, plan); err != nil {
		events.Close()
		h.discard(ctx, c.model.Agent, made)
		return nil, "", err
	}
	return events, "", nil
}

// discard deletes the conversation id that a request made ("": none) for
// a message the agent then refused (over a per-principal limit, say): a
// refused request stores nothing. A failure to delete is logged; the
// refusal is what the client gets.
func (h *Handler) discard(ctx context.Context, agent agentik.Agent, id string) {
	if id == "" {
		return
	}
	if err := agent.DeleteConversation(context.WithoutCancel(ctx), id); err != nil {
		h.log.ErrorContext(ctx, "delete the conversation of a refused request", "conversation", id, "err", err)
	}
}

// chatConversation finds the conversation the request continues (SPEC
// §16): the header's, else the one a recorded digest of the history up to
// one of its assistant messages points at, else none (c.conv stays nil: a
// new one is made once the request is known good). It returns the
// index in c.msgs where what the conversation does not hold begins.
func (h *Handler) chatConversation(ctx context.Context, header string, c *chatCall) (int, error) {
	c.keys = digests(c.scope, c.hist)
	tail, at := h.memoryMatch(c, header)
	if tail < lastAssistant(c.hist)+1 {
		// The longest history is not known here (a restart, another
		// process): the lookup keys recorded with the messages say.
		k, s, err := h.durableMatch(ctx, c, header, tail)
		if err != nil {
			return 0, err
		}
		if k > tail {
			tail, at = k, s
		}
	}
	id := header
	if id == "" && tail >= 0 {
		id = at.conv
	}
	if id != "" {
		conv, err := c.model.Agent.Conversation(ctx, id)
		if err != nil && (header != "" || !agentik.IsNotFound(err)) {
			return 0, err
		}
		if err == nil {
			c.conv = conv
			if tail < 0 {
				tail = lastAssistant(c.hist) + 1 // named by header, history unknown: what follows its last answer is new
			} else {
				c.branchAt = at.seq
			}
			return tail, nil
		}
	}
	return 0, nil
}

// memoryMatch is the longest history up to an assistant message that this
// process recorded (the index): its length and where it lies; -1 for none.
func (h *Handler) memoryMatch(c *chatCall, header string) (int, spot) {
	for k := len(c.hist) - 1; k > 0; k-- {
		if c.hist[k-1].role != "assistant" {
			continue
		}
		if s, ok := h.index.get(c.keys[k]); ok && (header == "" || s.conv == header) {
			return k, s
		}
	}
	return -1, spot{}
}

// maxDurableChecks bounds the recorded histories a request reads back to
// check (one journal read each).
const maxDurableChecks = 3

// durableMatch is memoryMatch from the store, for histories longer than
// shorter: a history up to an answer continues the conversation whose
// user message was sent with the digest of the history before that
// answer (SendRequest.Keys), when that message's turn gave the same
// completions: their text, the client tool calls they ended with, the
// client's results, up to the request's last answer the journal holds
// (turnMatch). One read of the keys; one journal read per candidate
// checked. A completion that ended with an approval question is found
// while the approval waits (the question is this door's text, made again
// from the pending approvals); once answered, such a history is found in
// memory only.
func (h *Handler) durableMatch(ctx context.Context, c *chatCall, header string, shorter int) (int, spot, error) {
	finder, ok := c.model.Agent.(agentik.KeyFinder)
	if !ok {
		return -1, spot{}, nil
	}
	var ks []int
	var keys []string
	// Every answer that follows a user message is a candidate, those at
	// or before shorter too: a turn's journal may carry the match past it
	// (this process recorded its first completion, not the rest).
	for k := len(c.hist) - 1; k > 1; k-- {
		if c.hist[k-1].role == "assistant" && c.hist[k-2].role == "user" {
			ks = append(ks, k)
			keys = append(keys, lookupKey(c.keys[k-1]))
		}
	}
	if len(keys) == 0 {
		return -1, spot{}, nil
	}
	found, err := finder.FindKeys(ctx, keys)
	if err != nil || len(found) == 0 {
		return -1, spot{}, err
	}
	checks := 0
	for i, k := range ks {
		ref, ok := found[keys[i]]
		if !ok || (header != "" && ref.ConversationID != header) {
			continue
		}
		if checks++; checks > maxDurableChecks {
			break
		}
		turn, pend, err := turnOf(ctx, c.model.Agent, ref)
		if err != nil {
			return -1, spot{}, err
		}
		if n, seq := turnMatch(turn, pend, c.hist[k-1:]); n > 0 && k-1+n > shorter {
			return k - 1 + n, spot{conv: ref.ConversationID, seq: seq}, nil
		}
	}
	return -1, spot{}, nil
}

// turnOf is the turn of the user message ref points at, as the journal
// holds it: the messages answering it, each the child of the one before
// (the first branch stored, when the turn was answered again); nil when
// the conversation is gone. pend are the turn's approvals that wait, read
// when the journal holds no end of it.
func turnOf(ctx context.Context, agent agentik.Agent, ref agentik.KeyRef) (turn []agentik.Message, pend []agentik.PendingApproval, err error) {
	conv, err := agent.Conversation(ctx, ref.ConversationID)
	if agentik.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer conv.Close()
	page, err := conv.Messages(ctx, agentik.MessagesRequest{After: ref.Seq - 1, Limit: agentik.MaxMessagesLimit, Branch: agentik.BranchAll})
	if err != nil || len(page.Messages) == 0 || page.Messages[0].Seq != ref.Seq {
		return nil, nil, err
	}
	user, at := page.Messages[0].ID, ref.Seq
	for _, m := range page.Messages[1:] {
		if m.Parent != at {
			continue
		}
		if m.ReplyTo != user {
			break
		}
		turn, at = append(turn, m), m.Seq
	}
	if len(turn) > 0 && !turn[len(turn)-1].ClosesTurn() { // it may wait for approvals
		all, err := conv.Approvals(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, a := range all {
			if a.ReplyTo == user {
				pend = append(pend, a)
			}
		}
	}
	return turn, pend, nil
}

// turnMatch is how many messages of sent, a resent history from the
// first answer of a turn on, the turn's journal messages gave, ending
// with an answer: each completion is all the text the model wrote in it
// (its rounds of the agent's own tools do not show) and the client tool
// calls it ended with, then the client's results, in order. seq is the
// journal's last message of the last answer matched. A completion still
// open at the journal's end answered the client with the approval
// question of pend, the turn's approvals that wait. 0 when not even the
// first answer matches (another answer, none yet).
func turnMatch(turn []agentik.Message, pend []agentik.PendingApproval, sent []view) (n int, seq int64) {
	client := map[string]bool{} // the calls the client was shown: the ones it resent
	for _, v := range sent {
		for _, id := range v.calls {
			client[id] = true
		}
	}
	i := 0 // the next message of sent
	var cur view
	open := false
	var last int64
	answer := func() bool { // the completion so far is sent[i]
		if i >= len(sent) || !sameView(cur, sent[i]) {
			return false
		}
		i, n, seq, open, cur = i+1, i+1, last, false, view{}
		return true
	}
	for j, m := range turn {
		if m.Type != agentik.MsgToolResult || !client[m.CallID] {
			last = m.Seq // what the head was once the completion ended
		}
		switch {
		case m.Type == agentik.MsgAssistant:
			if open && len(cur.calls) > 0 {
				return n, seq // the client's calls got no results here: another turn's course
			}
			open = true
			cur.role = "assistant"
			cur.text += agentik.JoinText(m.Content)
			if j == len(turn)-1 || turn[j+1].Type != agentik.MsgToolCall {
				answer() // no tool call follows (stored with it): the turn's answer
				return n, seq
			}
		case m.Type == agentik.MsgToolCall && client[m.CallID]:
			open = true
			cur.role = "assistant"
			cur.calls = append(cur.calls, m.CallID)
		case m.Type == agentik.MsgToolResult && client[m.CallID]:
			if open && !answer() {
				return n, seq
			}
			if i >= len(sent) || !sameView(view{role: "tool", text: agentik.JoinText(m.Content), callID: m.CallID}, sent[i]) {
				return n, seq
			}
			i++
		case m.Type == agentik.MsgError:
			return n, seq
		}
	}
	switch {
	case open && len(cur.calls) > 0:
		answer() // the turn waits for the client's results
	case len(pend) > 0:
		cur.role, cur.text = "assistant", cur.text+approvalText(pend)
		answer() // the turn waits for approvals: the completion asked
	}
	return n, seq
}

// sameView reports whether two messages of a history are the same for
// the digest.
func sameView(a, b view) bool {
	return a.role == b.role && a.text == b.text && a.callID == b.callID && slices.Equal(a.calls, b.calls)
}

// lookupKey is a digest as a lookup key (agentik.SendRequest.Keys).
func lookupKey(d [32]byte) string { return "openai.chat:" + hex.EncodeToString(d[:]) }

// newConversation makes a conversation of the caller and opens it.
func newConversation(ctx context.Context, agent agentik.Agent, temporal bool) (agentik.Conversation, error) {
	info, err := agent.CreateConversation(ctx, agentik.CreateRequest{Temporal: temporal})
	if err != nil {
		return nil, err
	}
	conv, err := agent.Conversation(ctx, info.ID)
	if err != nil {
		agent.DeleteConversation(context.WithoutCancel(ctx), info.ID) // nothing stays of a request that failed
	}
	return conv, err
}

// hasRole reports whether msgs has a message of role.
func hasRole(msgs []ChatMessage, role string) bool {
	for _, m := range msgs {
		if m.Role == role {
			return true
		}
	}
	return false
}

// lastAssistant is the index of the last assistant message of hist, -1 for
// none.
func lastAssistant(hist []view) int {
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].role == "assistant" {
			return i
		}
	}
	return -1
}

// chatPlan is what a request sends.
type chatPlan struct {
	user    *agentik.SendRequest
	results []agentik.ClientToolResult
	answer  *bool // a yes or no to the approvals that wait
	pend    []agentik.PendingApproval
	reply   string // nothing to send: this is the answer
	// history is what a new conversation starts with: the request's
	// earlier messages, stored as given (SPEC §16).
	history []agentik.Message
}

// planChat decides what of the history's tail (c.msgs[tail:]) to send:
// tool messages answer the calls the conversation waits for (one that
// answers none is refused), a yes or no answers waiting approvals, user
// messages become the turn's message; earlier messages of a history the
// conversation does not hold go with it as context.
func (h *Handler) planChat(ctx context.Context, c *chatCall, journal []agentik.Message, tail int) (chatPlan, error) {
	var p chatPlan
	waiting := history.Waiting(journal)
	msgs := c.msgs[tail:]
	last := len(msgs)
	for last > 0 && msgs[last-1].Role == "user" {
		last--
	}
	if c.conv == nil {
		if given, ok := c.given(msgs[:last]); ok {
			p.history, msgs, last = given, msgs[last:], 0
		}
	}
	var prior []string
	for i, m := range msgs[:last] {
		switch m.Role {
		case "tool":
			if !waiting[m.ToolCallID] {
				return p, param(agentik.EMalformed, fmt.Sprintf("messages[%d].tool_call_id", tail+i), "messages: the tool message for %q answers no call the conversation waits for", m.ToolCallID)
			}
			parts, err := contentOf(m.Content, "content")
			if err != nil {
				return p, err
			}
			delete(waiting, m.ToolCallID)
			p.results = append(p.results, agentik.ClientToolResult{CallID: m.ToolCallID, Content: parts})
		default:
			if t := agentik.JoinText(mustContent(m.Content)); t != "" {
				prior = append(prior, m.Role+": "+t)
			}
		}
	}
	users := msgs[last:]
	if len(users) == 0 && len(p.results) == 0 {
		return p, param(agentik.EInvalid, "messages", "messages: nothing new to answer: the history ends with an answer the conversation holds")
	}
	if len(users) == 1 && len(p.results) == 0 && c.conv != nil { // a new conversation has no approval waiting
		if yes, ok := yesNo(mustContent(users[0].Content)); ok {
			pend, err := c.conv.Approvals(ctx)
			if err != nil {
				return p, err
			}
			if len(pend) > 0 {
				p.answer, p.pend = &yes, pend
				return p, nil
			}
		}
	}
	if len(users) > 0 {
		u, err := h.chatUser(c, users, prior)
		if err != nil {
			return p, err
		}
		p.user = u
	}
	return p, nil
}

// mustContent is a content already checked by DecodeChat's caller path;
// a content that does not decode counts as none.
func mustContent(raw []byte) []agentik.Content {
	parts, _ := contentOf(raw, "content")
	return parts
}

// yesNo reads an answer to an approval.
func yesNo(parts []agentik.Content) (yes, ok bool) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(agentik.JoinText(parts)), ".!"))
	switch t {
	case "yes", "y", "approve", "approved", "ok", "allow":
		return true, true
	case "no", "n", "deny", "denied", "reject":
		return false, true
	}
	return false, false
}

// chatUser makes the request's trailing user messages one message: their
// content, then the turn's context (earlier messages the conversation does
// not hold, system/developer messages) as text parts counted in
// MetaContextParts.
func (h *Handler) chatUser(c *chatCall, users []ChatMessage, prior []string) (*agentik.SendRequest, error) {
	images := c.model.Agent.Info().Capabilities.ImageInput
	var content []agentik.Content
	for i, u := range users {
		parts, err := contentOf(u.Content, fmt.Sprintf("messages[%d].content", len(c.req.Messages)-len(users)+i))
		if err != nil {
			return nil, err
		}
		if agentik.HasImage(parts) && !images {
			return nil, param(agentik.EInvalid, "messages", "the model %q does not take image input", c.model.ID)
		}
		content = append(content, parts...)
	}
	if len(content) == 0 {
		return nil, param(agentik.EInvalid, "messages", "messages: the last user message is empty")
	}
	ctxParts := contextParts(prior, c.system)
	content = append(content, ctxParts...)
	if err := agentik.ValidateContent(content); err != nil {
		return nil, err
	}
	meta := map[string]string{}
	if len(ctxParts) > 0 {
		meta[MetaContextParts] = fmt.Sprint(len(ctxParts))
	}
	// The digest of the whole history goes with the message: a resend of
	// this history with the answer finds the conversation from any process.
	return &agentik.SendRequest{Content: content, ClientTools: toolSpecs(chatFunctions(c.req.Tools)), Context: origin(meta), Params: c.req.params(),
		Keys: []string{lookupKey(c.keys[len(c.hist)])}}, nil
}

// contextParts renders a turn's context for the model: the core has no
// per-turn channel to it but the user message.
func contextParts(prior, system []string) []agentik.Content {
	var out []agentik.Content
	if len(prior) > 0 {
		out = append(out, agentik.Text("<earlier_messages>\n"+strings.Join(prior, "\n")+"\n</earlier_messages>"))
	}
	if len(system) > 0 {
		out = append(out, agentik.Text("<instructions>\n"+strings.Join(system, "\n")+"\n</instructions>"))
	}
	return out
}

func chatFunctions(tools []ChatTool) []FunctionSpec {
	out := make([]FunctionSpec, len(tools))
	for i, t := range tools {
		out[i] = t.Function
	}
	return out
}

// sendChat sends the plan and sets the turn the completion follows.
func (h *Handler) sendChat(ctx context.Context, c *chatCall, p chatPlan) error {
	sendCtx := context.WithoutCancel(ctx) // the turn is the conversation's, not the request's
	if p.answer != nil {
		for _, a := range p.pend {
			res := agentik.Resolution{Approved: *p.answer}
			if err := c.conv.Resolve(sendCtx, a.CallID, res); err != nil && !agentik.IsNotFound(err) {
				return err
			}
		}
		c.turn = p.pend[0].ReplyTo
		return nil
	}
	if len(p.results) > 0 {
		res, err := c.conv.Send(sendCtx, agentik.SendRequest{ToolResults: p.results, ClientTools: toolSpecs(chatFunctions(c.req.Tools)), IfBusy: h.opts.IfBusy})
		if err != nil {
			return err
		}
		c.turn = res.MessageID
		if p.user == nil {
			return nil
		}
		p.user.IfBusy = agentik.BusyEnqueue // behind the continued turn
	} else if p.user != nil {
		p.user.IfBusy = h.opts.IfBusy
		if err := c.diverge(ctx, p.user); err != nil {
			return err
		}
	}
	res, err := c.conv.Send(sendCtx, *p.user)
	if err != nil {
		return err
	}
	if c.turn == "" {
		c.turn = res.MessageID
	}
	return nil
}

// diverge makes user an edit when the history the request continues is
// no longer the conversation's head path: the client resent an older
// history (an edited message, a regenerate), so its new message follows
// the recorded history's last message on a new branch.
func (c *chatCall) diverge(ctx context.Context, user *agentik.SendRequest) error {
	if c.branchAt <= 0 {
		return nil
	}
	info, err := c.conv.Info(ctx)
	if err != nil {
		return err
	}
	if info.Head != 0 && info.Head != c.branchAt {
		parent := c.branchAt
		user.Parent = &parent
	}
	return nil
}

// chatOutcome is what a followed turn produced.
type chatOutcome struct {
	text      strings.Builder
	from      int // where the text of the model's current answer begins in text
	reasoning strings.Builder
	calls     []ChatToolCall
	approvals []agentik.PendingApproval
	finish    string
	err       error
}

// chatStep feeds one event of the turn to o, emitting deltas through
// emit (nil: none); it reports whether the completion is over.
func (c *chatCall) step(o *chatOutcome, mode *string, ev agentik.Event, emit func(delta chatDelta)) bool {
	if ev.Message != nil && ev.Message.Seq > c.lastSeq {
		c.lastSeq = ev.Message.Seq
	}
	switch ev.Type {
	case agentik.EvStartReasoning, agentik.EvStartResponse:
		*mode = ev.Type
	case agentik.EvAppendText:
		if *mode == agentik.EvStartReasoning {
			o.reasoning.WriteString(ev.Text)
			if emit != nil {
				emit(chatDelta{ReasoningContent: ev.Text})
			}
			return false
		}
		o.text.WriteString(ev.Text)
		if emit != nil {
			emit(chatDelta{Content: ev.Text})
		}
	case agentik.EvToolCall:
		m := ev.Message
		if c.client[m.Name] {
			call := ChatToolCall{ID: m.CallID, Type: "function", Function: ChatFunction{Name: m.Name, Arguments: string(m.Arguments)}}
			o.calls = append(o.calls, call)
			if emit != nil {
				emit(chatDelta{ToolCalls: []chunkToolCall{{Index: len(o.calls) - 1, ChatToolCall: call}}})
			}
		}
	case agentik.EvApprovalRequested:
		o.approvals = append(o.approvals, agentik.PendingApproval{CallID: ev.CallID, Name: ev.Name, Arguments: ev.Arguments})
	case agentik.EvAwaitingApproval:
		text := approvalText(o.approvals)
		o.text.WriteString(text)
		if emit != nil {
			emit(chatDelta{Content: text})
		}
		o.finish = "stop"
		return true
	case agentik.EvAssistantMessage:
		if ev.Message.Tokens != nil {
			c.usage = ev.Message.Tokens
		}
		// What of this message's text the deltas missed (a slow
		// subscriber's lost deltas) is written from the message; the text
		// before it in the completion is the earlier rounds'.
		final := agentik.JoinText(ev.Message.Content)
		if rest, ok := strings.CutPrefix(final, o.text.String()[o.from:]); ok && rest != "" {
			o.text.WriteString(rest)
			if emit != nil {
				emit(chatDelta{Content: rest})
			}
		}
		o.from = o.text.Len()
		if ev.Message.ClosesTurn() { // not the text before a tool round
			o.finish = "stop"
			return true
		}
	case agentik.EvError:
		o.err = agentik.Errorf(agentik.EUnavailable, "%s", agentik.TurnErrorMessage(ev.Message.Code, ev.Message.Details))
		return true
	case agentik.EvInterrupted:
		o.finish = "stop"
		return true
	case agentik.EvEnd:
		if ev.Tokens != nil {
			c.usage = ev.Tokens
		}
		switch ev.Reason {
		case agentik.EndClientTools:
			o.finish = "tool_calls"
		case agentik.EndError:
			o.err = agentik.Errorf(agentik.EUnavailable, "the turn failed")
		default:
			o.finish = "stop"
		}
		return true
	}
	return false
}

// approvalText is the completion of a turn that waits for approvals.
func approvalText(pend []agentik.PendingApproval) string {
	var b strings.Builder
	for _, p := range pend {
		b.WriteString(p.Prompt())
		b.WriteString(" and waits for your approval.\n")
	}
	b.WriteString("Answer yes to allow or no to deny.")
	return b.String()
}

// record puts the history the client now holds into the index.
func (h *Handler) record(c *chatCall, o *chatOutcome) {
	v := view{role: "assistant", text: o.text.String()}
	for _, tc := range o.calls {
		v.calls = append(v.calls, tc.ID)
	}
	keys := digests(c.scope, append(append([]view(nil), c.hist...), v))
	h.index.put(keys[len(keys)-1], spot{conv: c.conv.ID(), seq: c.lastSeq})
}

// collectChat follows the turn to its end and answers one chat.completion.
func (h *Handler) collectChat(ctx context.Context, w http.ResponseWriter, r *http.Request, c *chatCall, events agentik.Stream[agentik.Event]) {
	var o chatOutcome
	var mode string
	err := h.follow(ctx, c.conv, events, c.cursor, c.turn, func(ev agentik.Event) bool { return c.step(&o, &mode, ev, nil) }, nil)
	if err == nil {
		err = o.err
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.record(c, &o)
	h.writeChat(w, r, c, o.text.String(), &o, o.finish)
}

// writeChat answers one chat.completion.
func (h *Handler) writeChat(w http.ResponseWriter, _ *http.Request, c *chatCall, text string, o *chatOutcome, finish string) {
	msg := chatOutMessage{Role: "assistant", Content: &text}
	if o != nil {
		msg.ToolCalls = o.calls
		if o.reasoning.Len() > 0 {
			msg.ReasoningContent = o.reasoning.String()
		}
	}
	if text == "" && len(msg.ToolCalls) > 0 {
		msg.Content = nil
	}
	out := chatCompletion{ID: "chatcmpl-" + c.turn, Object: "chat.completion", Created: time.Now().Unix(), Model: c.model.ID,
		Choices: []chatChoice{{Index: 0, Message: &msg, FinishReason: &finish}}, Usage: usageOf(c.usage)}
	w.Header().Set(ConversationHeader, c.conv.ID())
	writeJSON(w, http.StatusOK, out)
}

// streamChat follows the turn and streams chat.completion.chunk frames.
func (h *Handler) streamChat(ctx context.Context, w http.ResponseWriter, c *chatCall, events agentik.Stream[agentik.Event]) {
	s := startSSE(w, func(hd http.Header) { hd.Set(ConversationHeader, c.conv.ID()) })
	id, created := "chatcmpl-"+c.turn, time.Now().Unix()
	chunk := func(d *chatDelta, finish *string) chatCompletion {
		out := chatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: c.model.ID,
			Choices: []chatChoice{{Index: 0, Delta: d, FinishReason: finish}}}
		return out
	}
	s.data("", chunk(&chatDelta{Role: "assistant", Content: ""}, nil))
	var o chatOutcome
	var mode string
	emit := func(d chatDelta) { s.data("", chunk(&d, nil)) }
	err := h.follow(ctx, c.conv, events, c.cursor, c.turn, func(ev agentik.Event) bool {
		done := c.step(&o, &mode, ev, emit)
		return done || s.failed
	}, func() bool { s.comment("keep-alive"); return s.failed })
	if err == nil {
		err = o.err
	}
	if s.failed || ctx.Err() != nil {
		return
	}
	if err != nil {
		_, body := openAIErrorBody(err)
		s.data("", body)
		return
	}
	h.record(c, &o)
	finish := o.finish
	s.data("", chunk(&chatDelta{}, &finish))
	if c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage {
		u := usageOf(c.usage)
		s.data("", chatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: c.model.ID, Choices: []chatChoice{}, Usage: u})
	}
	s.raw("", []byte("[DONE]"))
}

// given is the start of a new conversation as the client gave it: its
// user messages and the assistant's answers to them, as journal messages.
// False when it cannot be stored as given — a tool call or tool message, an
// answer to no user message, an image the model does not take, or a last
// message that is no answer —: those messages then go to the model as the
// first turn's context.
func (c *chatCall) given(msgs []ChatMessage) ([]agentik.Message, bool) {
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		return nil, false
	}
	images := c.model.Agent.Info().Capabilities.ImageInput
	out := make([]agentik.Message, 0, len(msgs))
	user := ""
	for _, m := range msgs {
		parts, err := contentOf(m.Content, "content")
		if err != nil || (agentik.HasImage(parts) && !images) {
			return nil, false
		}
		switch {
		case m.Role == "user" && len(parts) > 0:
			user = agentik.NewID()
			out = append(out, agentik.Message{ID: user, Type: agentik.MsgUser, Content: agentik.CanonicalImages(parts), Context: origin(nil)})
		case m.Role == "assistant" && user != "" && len(m.ToolCalls) == 0:
			out = append(out, agentik.Message{ID: agentik.NewID(), Type: agentik.MsgAssistant, Content: []agentik.Content{agentik.Text(agentik.JoinText(parts))}, ReplyTo: user})
		default:
			return nil, false
		}
	}
	return out, agentik.ValidateContent(flatten(out)) == nil
}

// flatten is the content of msgs' user messages, to check at once.
func flatten(msgs []agentik.Message) []agentik.Content {
	var out []agentik.Content
	for _, m := range msgs {
		if m.Type == agentik.MsgUser {
			out = append(out, m.Content...)
		}
	}
	return out
}
