package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Channel is the origin channel of messages sent through the MCP facade.
const Channel = "mcp"

// Tool names of the facade.
const (
	ToolAsk               = "ask"
	ToolListConversations = "list_conversations"
	ToolReadConversation  = "read_conversation"
)

// Paging limits of the listing tools.
const (
	defaultListLimit = 20
	maxListLimit     = 100
)

// interruptTimeout bounds the interrupt sent when a client cancels ask.
const interruptTimeout = 10 * time.Second

// AskInput is the argument of ask.
type AskInput struct {
	Message         string `json:"message" jsonschema:"the message to send to the agent"`
	ConversationID  string `json:"conversation_id,omitempty" jsonschema:"continue this conversation (the conversation_id of an earlier answer); default: the conversation this MCP session used last, or a new one"`
	NewConversation bool   `json:"new_conversation,omitempty" jsonschema:"start a new conversation even if this session already has one"`
}

// AskOutput is the structured result of ask.
type AskOutput struct {
	ConversationID string `json:"conversation_id" jsonschema:"the conversation the answer belongs to: pass it to ask to continue"`
	MessageID      string `json:"message_id" jsonschema:"the id of the message sent"`
	Answer         string `json:"answer" jsonschema:"the agent's answer (partial when the turn was interrupted or failed)"`
}

// ListInput is the argument of list_conversations.
type ListInput struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"how many conversations (1 to 100, default 20)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the next cursor of the previous page"`
}

// ListOutput is one page of conversations, newest activity first.
type ListOutput struct {
	Conversations []ConversationSummary `json:"conversations"`
	Next          string                `json:"next,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
}

// ConversationSummary describes one conversation.
type ConversationSummary struct {
	ID        string `json:"id"`
	Title     string `json:"title,omitempty"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	Working   bool   `json:"working" jsonschema:"a turn is running"`
}

// ReadInput is the argument of read_conversation.
type ReadInput struct {
	ConversationID string `json:"conversation_id" jsonschema:"the conversation to read"`
	After          int64  `json:"after,omitempty" jsonschema:"only messages with a seq greater than this (page forward)"`
	Before         int64  `json:"before,omitempty" jsonschema:"the newest messages with a seq below this (page backward)"`
	Limit          int    `json:"limit,omitempty" jsonschema:"how many messages (1 to 500, default 50)"`
}

// ReadOutput is one page of a conversation's transcript, ascending by seq.
type ReadOutput struct {
	ConversationID string            `json:"conversation_id"`
	Title          string            `json:"title,omitempty"`
	Messages       []TranscriptEntry `json:"messages"`
	HasMore        bool              `json:"has_more" jsonschema:"more messages lie beyond this page in the direction read"`
}

// TranscriptEntry is one journal entry, flattened for a reader.
type TranscriptEntry struct {
	Seq         int64  `json:"seq"`
	Type        string `json:"type" jsonschema:"user_message, assistant_message, tool_call, tool_result or error"`
	Date        string `json:"date"`
	Text        string `json:"text,omitempty"`
	Images      int    `json:"images,omitempty" jsonschema:"images in the message (not included)"`
	Tool        string `json:"tool,omitempty"`
	Arguments   string `json:"arguments,omitempty" jsonschema:"tool_call: the arguments as JSON"`
	IsError     bool   `json:"is_error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Code        string `json:"code,omitempty"`
}

var (
	yes = true
	no  = false
)

func (f *front) addTools() {
	name := f.h.agent.Info().Name
	desc := f.h.agent.Info().Description
	about := "the agent " + name
	if desc != "" {
		about += " (" + desc + ")"
	}
	sdk.AddTool(f.server, &sdk.Tool{
		Name:  ToolAsk,
		Title: "Ask " + name,
		Description: "Send a message to " + about + " and return its answer. The agent keeps the conversation: " +
			"pass the conversation_id of an answer to continue it. Without conversation_id the conversation this MCP session used last " +
			"is continued (a session-less client starts a new one every time); new_conversation starts afresh. " +
			"The answer is streamed as progress notifications while it is written.",
		Annotations:  &sdk.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &yes},
		InputSchema:  portableSchema[AskInput](),
		OutputSchema: portableSchema[AskOutput](),
	}, f.ask)
	sdk.AddTool(f.server, &sdk.Tool{
		Name:         ToolListConversations,
		Title:        "List conversations",
		Description:  "List your conversations with " + name + ", newest activity first, a page at a time.",
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
		InputSchema:  portableSchema[ListInput](),
		OutputSchema: portableSchema[ListOutput](),
	}, f.listConversations)
	sdk.AddTool(f.server, &sdk.Tool{
		Name:         ToolReadConversation,
		Title:        "Read a conversation",
		Description:  "Read the transcript of one of your conversations with " + name + ", a page at a time (ascending seq; by default from the start).",
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no},
		InputSchema:  portableSchema[ReadInput](),
		OutputSchema: portableSchema[ReadOutput](),
	}, f.readConversation)
}

// toolError is a failed call as the client sees it: a tool result with
// isError and a message that is safe to show.
func toolError(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// coreError turns an error of the core into a tool error; internal ones are
// logged and shown generically.
func (f *front) coreError(ctx context.Context, op string, err error) *sdk.CallToolResult {
	if agentik.ErrorCode(err) == agentik.EInternal {
		f.h.log.ErrorContext(ctx, "mcp facade: "+op, "err", err)
	}
	return toolError("%s", agentik.ErrorMessage(err))
}

// ctx is the context of core calls: the SDK's, which carries nothing of
// the HTTP request, acting for the front's principal, as the mcp facade.
func (f *front) ctx(ctx context.Context) context.Context {
	return agentik.WithFacade(agentik.WithPrincipal(ctx, f.principal), "mcp")
}

// openConversation returns the conversation ask sends to.
func (f *front) openConversation(ctx context.Context, in AskInput, session string) (agentik.Conversation, *sdk.CallToolResult) {
	agent := f.h.agent
	if in.ConversationID != "" {
		if in.NewConversation {
			return nil, toolError("give conversation_id or new_conversation, not both")
		}
		if !agentik.ValidID(in.ConversationID) {
			return nil, toolError("conversation %q not found", truncate(in.ConversationID, 80))
		}
		conv, err := agent.Conversation(ctx, in.ConversationID)
		if agentik.IsNotFound(err) {
			return nil, toolError("conversation %q not found", in.ConversationID)
		}
		if err != nil {
			return nil, f.coreError(ctx, "open conversation", err)
		}
		return conv, nil
	}
	if !in.NewConversation {
		if id := f.recall(session); id != "" {
			conv, err := agent.Conversation(ctx, id)
			if err == nil {
				return conv, nil
			}
			if !agentik.IsNotFound(err) {
				return nil, f.coreError(ctx, "open conversation", err)
			}
			// Deleted meanwhile: a new one follows.
		}
	}
	info, err := agent.CreateConversation(ctx, agentik.CreateRequest{Title: title(in.Message)})
	if err != nil {
		return nil, f.coreError(ctx, "create conversation", err)
	}
	conv, err := agent.Conversation(ctx, info.ID)
	if err != nil {
		return nil, f.coreError(ctx, "open conversation", err)
	}
	return conv, nil
}

func title(msg string) string {
	t := strings.Join(strings.Fields(msg), " ")
	if r := []rune(t); len(r) > 60 {
		t = string(r[:60]) + "…"
	}
	return t
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ask sends the message and waits for its turn to end, streaming the answer
// as progress notifications when the client asked for them. The client
// cancelling the call interrupts exactly this turn (running or queued).
func (f *front) ask(ctx context.Context, req *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, AskOutput, error) {
	if !f.h.track() {
		return toolError("the server is shutting down; try again later"), AskOutput{}, nil
	}
	defer f.h.inflight.Done()
	ctx = f.ctx(ctx)
	if req.Params.RequestState != "" {
		return f.resume(ctx, req)
	}
	if strings.TrimSpace(in.Message) == "" {
		return toolError("message is empty"), AskOutput{}, nil
	}
	session := ""
	if req.Session != nil {
		session = req.Session.ID()
	}
	conv, fail := f.openConversation(ctx, in, session)
	if fail != nil {
		return fail, AskOutput{}, nil
	}
	defer conv.Close()

	// Subscribe before sending so that no event of the turn is missed.
	stream, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		return f.coreError(ctx, "subscribe", err), AskOutput{}, nil
	}
	origin := &agentik.Origin{Channel: Channel, User: f.principal}
	if ci := req.ClientInfo(); ci != nil {
		origin.DisplayName = truncate(ci.Name, 100)
	}
	// The turn belongs to the conversation: only an explicit cancel below
	// stops it, never the end of this request's context.
	res, err := conv.Send(context.WithoutCancel(ctx), agentik.SendRequest{
		Content: []agentik.Content{agentik.Text(in.Message)},
		Context: &agentik.MessageContext{Origin: origin},
		IfBusy:  f.h.opts.IfBusy,
	})
	if err != nil {
		stream.Close()
		return f.coreError(ctx, "send", err), AskOutput{}, nil
	}
	f.remember(session, conv.ID())

	return f.finish(ctx, req, conv, stream, &turn{userID: res.MessageID, userSeq: res.Seq})
}

// finish follows t, the turn of an ask, to its end and answers it; a turn
// that parks for approval asks the client (elicitation, or an
// input_required result) or says where to answer.
func (f *front) finish(ctx context.Context, req *sdk.CallToolRequest, conv agentik.Conversation, stream agentik.Stream[agentik.Event], t *turn) (*sdk.CallToolResult, AskOutput, error) {
	defer func() { stream.Close() }()
	var prog *progress
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		prog = startProgress(ctx, req.Session, token)
	}
	var err error
	for {
		stream, err = f.follow(ctx, conv, stream, t, prog)
		if err != nil || ctx.Err() != nil || !t.awaiting {
			break
		}
		t.awaiting = false
		if waiting := f.approve(ctx, req, conv, t); waiting != nil {
			// The turn stays parked: someone answers it elsewhere.
			if prog != nil {
				prog.stop()
			}
			return waiting, AskOutput{ConversationID: conv.ID(), MessageID: t.userID}, nil
		}
	}
	var sent float64
	if prog != nil {
		sent = prog.stop()
	}
	if ctx.Err() != nil {
		f.cancelTurn(conv, t)
		return nil, AskOutput{}, ctx.Err()
	}
	if err != nil {
		return f.coreError(ctx, "follow the turn", err), AskOutput{}, nil
	}
	result, out, err := t.result(conv.ID())
	if sent > 0 {
		// A relay (agentik mcp) waits for the last notification it has
		// to pass on before it passes on the result.
		result.Meta = sdk.Meta{MetaProgress: sent}
	}
	return result, out, err
}

// MetaProgress is the _meta key of an ask result that holds the progress
// value of the last notification sent for the call (absent when none was).
const MetaProgress = "agentik/progress"

// cancelTurn interrupts the turn of a cancelled ask: cancelled if it runs,
// withdrawn if it is queued; turns of other calls are never touched.
func (f *front) cancelTurn(conv agentik.Conversation, t *turn) {
	if t.ended {
		return
	}
	ctx, cancel := context.WithTimeout(f.ctx(context.Background()), interruptTimeout)
	defer cancel()
	done, err := conv.InterruptTurn(ctx, t.userID)
	if err != nil {
		f.h.log.Warn("mcp facade: interrupt after cancel", "conversation", conv.ID(), "err", err)
	}
	f.h.log.Debug("mcp facade: ask cancelled by the client", "conversation", conv.ID(), "turn", t.userID, "interrupted", done)
}

// turn collects what one ask's turn produced, from its events or, after a
// gap in them, from the journal.
type turn struct {
	userID  string
	userSeq int64
	cur     string // reply_to of the turn running now
	phase   string // start_reasoning or start_response of that turn

	answers []agentik.Message // the turn's assistant messages, in order
	seen    map[string]bool   // their ids
	// pending are the turn's calls waiting for approval, by call id;
	// awaiting is set when the turn parks for them.
	pending  map[string]agentik.PendingApproval
	awaiting bool
	// resolved are the calls this ask answered: a stream that joined the
	// parked turn before the answer repeats their requests.
	resolved map[string]bool
	ended    bool
	reason   string // end reason
	errCode  string // of the turn's error entry
	errText  string
}

func (t *turn) mine(m *agentik.Message) bool { return m != nil && m.ReplyTo == t.userID }

func (t *turn) addAnswer(m agentik.Message) {
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	if !t.seen[m.ID] {
		t.seen[m.ID] = true
		t.answers = append(t.answers, m)
	}
}

// event feeds one event; it returns the text to report as progress.
func (t *turn) event(ev agentik.Event) string {
	switch ev.Type {
	case agentik.EvWorking:
		t.cur, t.phase = ev.ReplyTo, ""
	case agentik.EvStartReasoning, agentik.EvStartResponse:
		t.cur, t.phase = ev.ReplyTo, ev.Type
	case agentik.EvAppendText:
		if t.cur == t.userID && t.phase == agentik.EvStartResponse {
			return ev.Text
		}
	case agentik.EvAssistantMessage:
		if t.mine(ev.Message) {
			t.addAnswer(*ev.Message)
		}
	case agentik.EvError:
		if t.mine(ev.Message) {
			t.errCode, t.errText = ev.Message.Code, ev.Message.Details
		}
	case agentik.EvApprovalRequested:
		if ev.ReplyTo == t.userID && !t.resolved[ev.CallID] {
			if t.pending == nil {
				t.pending = map[string]agentik.PendingApproval{}
			}
			t.pending[ev.CallID] = agentik.PendingApproval{ConversationID: ev.ConversationID, CallID: ev.CallID, Name: ev.Name, Arguments: ev.Arguments, ReplyTo: ev.ReplyTo}
			if ev.Cursor == 0 {
				// Repeated to a stream that joined a parked turn (after a
				// gap): awaiting_approval is not.
				t.awaiting = true
			}
		}
	case agentik.EvApprovalResolved:
		if ev.ReplyTo == t.userID {
			delete(t.pending, ev.CallID)
		}
	case agentik.EvAwaitingApproval:
		if ev.ReplyTo == t.userID && len(t.pending) > 0 {
			t.awaiting = true
		}
	case agentik.EvInterrupted:
		if ev.ReplyTo == t.userID {
			t.ended, t.reason = true, agentik.EndInterrupted
		}
	case agentik.EvEnd:
		if ev.ReplyTo == t.userID {
			t.ended, t.reason = true, ev.Reason
		}
	case agentik.EvConversationClosing:
		if !t.ended {
			t.ended, t.reason = true, agentik.EvConversationClosing
		}
	}
	return ""
}

// result is the tool result of the ended turn.
func (t *turn) result(convID string) (*sdk.CallToolResult, AskOutput, error) {
	var content []sdk.Content
	var texts []string
	for _, m := range t.answers {
		for _, c := range m.Content {
			switch c.Type {
			case agentik.ContentText:
				if c.Text != "" {
					content = append(content, &sdk.TextContent{Text: c.Text})
					texts = append(texts, c.Text)
				}
			case agentik.ContentImage:
				if b, err := base64.StdEncoding.DecodeString(c.Data); err == nil {
					content = append(content, &sdk.ImageContent{Data: b, MIMEType: c.MIME})
				}
			}
		}
	}
	out := AskOutput{ConversationID: convID, MessageID: t.userID, Answer: strings.Join(texts, "\n\n")}
	res := &sdk.CallToolResult{Content: content}
	fail := func(msg string) {
		res.IsError = true
		res.Content = append(res.Content, &sdk.TextContent{Text: msg})
	}
	switch t.reason {
	case agentik.EndCompleted:
		if len(res.Content) == 0 {
			res.Content = []sdk.Content{&sdk.TextContent{Text: "(the agent answered with no text)"}}
		}
	case agentik.EndInterrupted:
		fail("The turn was interrupted before the answer was complete.")
	case agentik.EndError:
		// The same safe sentence as on every facade; the log keeps the cause.
		msg := agentik.TurnErrorMessage(t.errCode, t.errText)
		if t.errCode != "" {
			msg = " (" + t.errCode + "): " + msg
		} else {
			msg = ": " + msg
		}
		fail("The agent could not answer" + msg)
	case agentik.EvConversationClosing:
		fail("The conversation was closed or deleted before the answer was complete.")
	default:
		fail("The turn stopped: " + t.reason)
	}
	return res, out, nil
}

// follow feeds the conversation's events to t until the turn ends or ctx
// does. A subscription cut off for being slow resumes after the last durable
// event (durable events are never lost, text deltas may be) and the journal
// then says whether the turn ended in the gap. It returns the stream it
// ended on, for the caller to close.
func (f *front) follow(ctx context.Context, conv agentik.Conversation, stream agentik.Stream[agentik.Event], t *turn, prog *progress) (agentik.Stream[agentik.Event], error) {
	var last int64
	// Pulled on the call's goroutine (edge.Pull): a call costs the engine
	// no goroutine or channel of its own.
	events := edge.Pull(stream, edge.EventFrame)
	for !t.ended && !t.awaiting {
		ev, ok, ended, err := edge.Take(events)
		if ended {
			if err == nil {
				err = events.Err()
			}
			if ctx.Err() != nil {
				return events, nil
			}
			if err != nil && !errors.Is(err, agentik.ErrSlowSubscriber) {
				return events, err
			}
			if err == nil {
				return events, agentik.Errorf(agentik.EUnavailable, "the conversation's event stream ended")
			}
			next, err := conv.Events(ctx, last) // 0: replay all, nothing of the turn lost
			if err != nil {
				return events, err
			}
			events.Close()
			events = edge.Pull(next, edge.EventFrame)
			if err := f.settle(ctx, conv, t); err != nil {
				return events, err
			}
			continue
		}
		if !ok {
			select {
			case <-ctx.Done():
				return events, nil
			case <-events.Ready():
			case <-events.Done():
			}
			continue
		}
		if ev.Cursor > last {
			last = ev.Cursor
		}
		if text := t.event(ev); text != "" && prog != nil {
			prog.add(text)
		}
	}
	return events, nil
}

// settle reads the turn from the journal: its assistant messages, and
// whether it has closed (a complete answer not followed by a tool call of
// the same turn, or an error entry). A turn interrupted before it wrote
// anything has no entry; its durable interrupted event reaches the stream.
func (f *front) settle(ctx context.Context, conv agentik.Conversation, t *turn) error {
	after := t.userSeq - 1
	var entries []agentik.Message
	found := false
	for {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{After: after, Limit: agentik.MaxMessagesLimit})
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			after = m.Seq
			if m.ID == t.userID {
				found = true
			}
			if found && m.ReplyTo == t.userID {
				entries = append(entries, m)
			}
		}
		if !page.HasMore || len(page.Messages) == 0 {
			break
		}
	}
	for i, m := range entries {
		switch m.Type {
		case agentik.MsgAssistant:
			t.addAnswer(m)
			if m.Interrupted {
				t.ended, t.reason = true, agentik.EndInterrupted
				return nil
			}
			if i == len(entries)-1 {
				t.ended, t.reason = true, agentik.EndCompleted
				return nil
			}
		case agentik.MsgError:
			t.ended, t.reason, t.errCode, t.errText = true, agentik.EndError, m.Code, m.Details
			return nil
		}
	}
	return nil
}

// progress reports an answer's text as MCP progress notifications: each
// carries the text written since the previous one, and progress counts the
// characters so far. The event loop never waits for the client: text that
// arrives while a notification is being written joins the next one.
type progress struct {
	ctx   context.Context
	ss    *sdk.ServerSession
	token any

	mu    sync.Mutex
	buf   strings.Builder
	total int // characters taken from buf
	sent  int // progress of the last notification written

	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

func startProgress(ctx context.Context, ss *sdk.ServerSession, token any) *progress {
	p := &progress{ctx: ctx, ss: ss, token: token, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.quit:
				return
			case <-ctx.Done():
				return
			case <-p.wake:
				p.flush()
			}
		}
	}()
	return p
}

func (p *progress) add(text string) {
	p.mu.Lock()
	p.buf.WriteString(text)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *progress) flush() {
	p.mu.Lock()
	text := p.buf.String()
	p.buf.Reset()
	p.total += len([]rune(text))
	total := p.total
	p.mu.Unlock()
	if text == "" {
		return
	}
	// A client that went away is the request's problem, not the turn's.
	if p.ss.NotifyProgress(p.ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: float64(total), Message: text}) == nil {
		p.mu.Lock()
		p.sent = total
		p.mu.Unlock()
	}
}

// stop ends the goroutine and sends what is left, so that every piece of
// text precedes the result. It returns the progress of the last
// notification sent (0: none).
func (p *progress) stop() float64 {
	close(p.quit)
	<-p.done
	if p.ctx.Err() == nil {
		p.flush()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return float64(p.sent)
}

// listConversations pages the caller's conversations.
func (f *front) listConversations(ctx context.Context, _ *sdk.CallToolRequest, in ListInput) (*sdk.CallToolResult, ListOutput, error) {
	ctx = f.ctx(ctx)
	if in.Limit < 0 || in.Limit > maxListLimit {
		return toolError("limit must be from 1 to %d", maxListLimit), ListOutput{}, nil
	}
	if in.Limit == 0 {
		in.Limit = defaultListLimit
	}
	list, err := f.h.agent.ListConversations(ctx, agentik.ListRequest{Limit: in.Limit, Before: in.Cursor})
	if err != nil {
		if agentik.ErrorCode(err) == agentik.EInvalid || agentik.ErrorCode(err) == agentik.EMalformed {
			return toolError("cursor is not one this server handed out"), ListOutput{}, nil
		}
		return f.coreError(ctx, "list conversations", err), ListOutput{}, nil
	}
	out := ListOutput{Conversations: make([]ConversationSummary, 0, len(list.Conversations)), Next: list.Next}
	for _, c := range list.Conversations {
		out.Conversations = append(out.Conversations, ConversationSummary{ID: c.ID, Title: c.Title,
			CreatedAt: c.CreatedAt.String(), UpdatedAt: c.UpdatedAt.String(), Working: c.Working})
	}
	return nil, out, nil
}

// readConversation pages one conversation's transcript.
func (f *front) readConversation(ctx context.Context, _ *sdk.CallToolRequest, in ReadInput) (*sdk.CallToolResult, ReadOutput, error) {
	ctx = f.ctx(ctx)
	switch {
	case in.Limit < 0 || in.Limit > agentik.MaxMessagesLimit:
		return toolError("limit must be from 1 to %d", agentik.MaxMessagesLimit), ReadOutput{}, nil
	case in.After < 0 || in.Before < 0:
		return toolError("after and before are seq numbers (1, 2, 3…)"), ReadOutput{}, nil
	case in.After > 0 && in.Before > 0:
		return toolError("give after or before, not both"), ReadOutput{}, nil
	case !agentik.ValidID(in.ConversationID):
		return toolError("conversation %q not found", truncate(in.ConversationID, 80)), ReadOutput{}, nil
	}
	conv, err := f.h.agent.Conversation(ctx, in.ConversationID)
	if agentik.IsNotFound(err) {
		return toolError("conversation %q not found", in.ConversationID), ReadOutput{}, nil
	}
	if err != nil {
		return f.coreError(ctx, "open conversation", err), ReadOutput{}, nil
	}
	defer conv.Close()
	info, err := conv.Info(ctx)
	if err != nil {
		return f.coreError(ctx, "read conversation", err), ReadOutput{}, nil
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{After: in.After, Before: in.Before, Limit: in.Limit})
	if err != nil {
		return f.coreError(ctx, "read conversation", err), ReadOutput{}, nil
	}
	out := ReadOutput{ConversationID: info.ID, Title: info.Title, Messages: make([]TranscriptEntry, 0, len(page.Messages)), HasMore: page.HasMore}
	for _, m := range page.Messages {
		out.Messages = append(out.Messages, transcriptEntry(m))
	}
	return nil, out, nil
}

func transcriptEntry(m agentik.Message) TranscriptEntry {
	e := TranscriptEntry{Seq: m.Seq, Type: m.Type, Date: m.Date.String(), Tool: m.Name, IsError: m.IsError, Interrupted: m.Interrupted, Code: m.Code}
	var texts []string
	for _, c := range m.Content {
		switch c.Type {
		case agentik.ContentText:
			texts = append(texts, c.Text)
		case agentik.ContentImage:
			e.Images++
		}
	}
	e.Text = strings.Join(texts, "\n")
	switch m.Type {
	case agentik.MsgToolCall:
		e.Arguments = string(m.Arguments)
	case agentik.MsgError:
		e.Text = agentik.TurnErrorMessage(m.Code, m.Details)
	}
	return e
}

// approvalSchema is what an elicitation asks for an approval.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approved": map[string]any{"type": "boolean", "title": "Allow this call", "description": "true runs the call, false denies it"},
		"reason":   map[string]any{"type": "string", "title": "Reason", "description": "optional; the model sees it on a denial"},
	},
	"required": []string{"approved"},
}

// approve handles a turn parked for approval. A client that takes
// elicitations (a session at a previous revision that declared the
// capability) is asked about each pending call, and its answers resolve
// them; the turn then goes on and nil is returned. Any other client gets a
// tool error saying where the approval is needed, and the turn stays
// parked for an answer through another front door.
func (f *front) approve(ctx context.Context, req *sdk.CallToolRequest, conv agentik.Conversation, t *turn) *sdk.CallToolResult {
	caps := req.ClientCapabilities()
	if req.ProtocolVersion() >= ProtocolCurrent && caps != nil && caps.Elicitation != nil {
		return inputRequired(conv.ID(), t)
	}
	canAsk := req.Session != nil && req.Session.ID() != "" && req.ProtocolVersion() < ProtocolCurrent &&
		caps != nil && caps.Elicitation != nil
	for id, p := range t.pending {
		if !canAsk {
			return waitingElsewhere(conv.ID(), p)
		}
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: p.Prompt() + ". Allow it?", RequestedSchema: approvalSchema})
		if err != nil {
			if ctx.Err() == nil {
				f.h.log.Warn("mcp facade: elicitation failed", "conversation", conv.ID(), "call", id, "err", err)
			}
			return waitingElsewhere(conv.ID(), p)
		}
		r, ok := resolution(res)
		if !ok { // cancel: no answer; it may come from elsewhere
			return waitingElsewhere(conv.ID(), p)
		}
		if err := conv.Resolve(f.ctx(ctx), id, r); err != nil && agentik.ErrorCode(err) != agentik.EConflict {
			// EConflict: answered elsewhere meanwhile, which is as good.
			return f.coreError(ctx, "resolve approval", err)
		}
		delete(t.pending, id)
	}
	return nil
}

func waitingElsewhere(conv string, p agentik.PendingApproval) *sdk.CallToolResult {
	return toolError("%s, and waits for a person to allow it. This MCP client cannot answer approvals: "+
		"allow or deny call %s of conversation %s through the agent's native API (GET and POST …/conversations/%s/approvals), "+
		"then read the answer with read_conversation. The turn goes on once it is answered.",
		p.Prompt(), p.CallID, conv, conv)
}
