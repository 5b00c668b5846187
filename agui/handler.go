package agui

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/history"
	"github.com/agentik/agentik/internal/defaults"
)

// DefaultPath is where the facade is usually mounted.
const DefaultPath = "/agui"

// What a client disconnect before RUN_FINISHED does (Options.OnDisconnect).
const (
	// DisconnectInterrupt interrupts the run's turn, as AG-UI's abortRun
	// asks: HttpAgent.abortRun() aborts the request, and a server cannot tell
	// that from a dropped connection.
	DisconnectInterrupt = "interrupt"
	// DisconnectContinue lets the turn finish; the client reads the result
	// later (MESSAGES_SNAPSHOT, or the native API).
	DisconnectContinue = "continue"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 16 << 20
	// DefaultMaxRunMessages bounds the new user messages one run may bring.
	DefaultMaxRunMessages = 32
	DefaultKeepAlive      = 15 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
)

// Options configures the facade. The zero value is usable.
type Options struct {
	// MaxBodyBytes bounds the RunAgentInput body; larger ones get 413.
	MaxBodyBytes int64
	// KeepAlive is the interval of SSE comments on a silent stream (the
	// AG-UI client ignores them; proxies see a live connection).
	KeepAlive time.Duration
	// WriteTimeout bounds each write to the stream; a client that stops
	// reading for that long is treated as gone.
	WriteTimeout time.Duration
	// IfBusy is the busy policy of the run's messages when the thread has a
	// turn running (see agentik.SendRequest); "" is enqueue.
	IfBusy string
	// MaxRunMessages bounds the new user messages one run may bring (they
	// are one turn's input); more is 422 and stores nothing.
	MaxRunMessages int
	// OnDisconnect is DisconnectInterrupt (the default) or DisconnectContinue.
	OnDisconnect string
	// Logger receives failed requests; nil means slog.Default().
	Logger *slog.Logger
	// newID makes the ids of streamed messages (tests make them stable).
	newID func() string
}

// Handler serves AG-UI runs against one agent. Safe for concurrent use.
type Handler struct {
	agent agentik.Agent
	opts  Options
	log   *slog.Logger

	mu      sync.Mutex
	threads map[string]*threadLock
}

// threadLock serialises the runs of one thread in this process from reading
// the journal to the last Send, so that two concurrent runs carrying the
// same new message store it once.
type threadLock struct {
	mu   sync.Mutex
	refs int
}

// NewHandler returns the facade for agent. Mount it on POST only, behind the
// HTTP edge (package edge): the run acts for the principal in the request's
// context, the anonymous "" when there is none.
func NewHandler(agent agentik.Agent, opts Options) *Handler {
	defaults.Positive(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Positive(&opts.KeepAlive, DefaultKeepAlive)
	defaults.Positive(&opts.WriteTimeout, DefaultWriteTimeout)
	defaults.Positive(&opts.MaxRunMessages, DefaultMaxRunMessages)
	defaults.String(&opts.OnDisconnect, DisconnectInterrupt)
	if opts.newID == nil {
		opts.newID = agentik.NewID
	}
	h := &Handler{agent: agent, opts: opts, log: opts.Logger, threads: map[string]*threadLock{}}
	defaults.Logger(&h.log)
	return h
}

// Mount registers "POST path" on mux for agent (path "" is DefaultPath), so
// that several agents can each have their own AG-UI endpoint.
func Mount(mux *http.ServeMux, path string, agent agentik.Agent, opts Options) {
	defaults.String(&path, DefaultPath)
	mux.Handle("POST /"+strings.Trim(path, "/"), NewHandler(agent, opts))
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.writeError(w, r, agentik.Errorf(edge.CodeMethodNotAllowed, "use POST"))
		return
	}
	body, err := edge.ReadJSON(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	in, err := DecodeInput(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.run(w, r, in)
}

// plan is what a run asks of the core after reconciling with the journal.
type plan struct {
	users    []InputMessage
	results  []agentik.ClientToolResult
	answers  []answer        // approvals answered by resume entries or tool messages
	fromTool map[string]bool // answers that came as tool messages
	snapshot bool
	behind   bool // the client lacks what the journal holds after its last message
}

// runState is a run once its part under the thread lock is over: what it
// streams. The run closes it when it ends.
type runState struct {
	conv   agentik.Conversation // nil for an unknown thread the run did not create
	events agentik.Stream[agentik.Event]
	cursor int64
	// report, when set, is all the run streams after RUN_STARTED: it
	// follows no turn.
	report []Event
	turns  []string        // the turns the run follows, in order
	skip   map[string]bool // call ids whose results the client has
	// sendErr is the refusal of a later message of the run, after earlier
	// ones were accepted: the run reports their turns, then ends with it.
	sendErr error
	// state is the conversation's shared state when the run began ({} for
	// no conversation): its STATE_SNAPSHOT.
	state agentik.RawJSON
}

func (st *runState) close() {
	if st.events != nil {
		st.events.Close()
	}
	if st.conv != nil {
		st.conv.Close()
	}
}

// run answers one RunAgentInput: reconcile and send under the thread's lock
// (execute), then stream the run without it.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, in RunInput) {
	ctx := r.Context()
	st, err := h.execute(ctx, in)
	defer st.close()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	s := h.startStream(w, r, in)
	tr := newTranslator(in.ThreadID, in.RunID, st.turns, st.skip, h.opts.newID)
	if st.state != nil {
		s.emitAll(tr.snapshot(st.state))
	}
	if st.report != nil {
		s.emitAll(st.report)
		return
	}
	h.stream(ctx, s, tr, st)
}

// setState makes the client's state the conversation's (SPEC §19), when
// it sent one: a state with members, which differs from the stored one.
// An empty state ({}) is what a client that never uses state sends each
// run (HttpAgent's default), so it never wipes the state the agent or
// another client set. It then reads the state for the run's
// STATE_SNAPSHOT: before the run sends anything, so that every change its
// turns make comes after it, as a STATE_DELTA.
func setState(ctx context.Context, st *runState, in RunInput) (err error) {
	if in.State != nil {
		st.state, err = st.conv.PutSharedState(ctx, agentik.RawJSON(in.State))
		return err
	}
	st.state, err = st.conv.SharedState(ctx)
	return err
}

// execute does the part of a run that must not interleave with another run
// of the same thread: read the journal, reconcile the client's messages with
// it, and send what is new. It holds the thread's lock until it returns. The
// run state it returns is never nil (the caller closes it, error or not); an
// error refuses the run before streaming.
func (h *Handler) execute(ctx context.Context, in RunInput) (*runState, error) {
	// Runs of one caller's thread are serialised by the name they use; the
	// conversation it resolves to is the caller's alone (see openThread).
	unlock := h.lockThread(agentik.PrincipalFrom(ctx) + "\x00" + in.ThreadID)
	defer unlock()

	st := &runState{}
	conv, journal, cursor, err := h.openThread(ctx, in.ThreadID, false)
	if err != nil {
		return st, err
	}
	st.conv, st.cursor = conv, cursor
	// Calls waiting for approval: only a journal whose last round has calls
	// without results can have any.
	var pend []agentik.PendingApproval
	if len(in.Resume) > 0 || len(history.Waiting(journal)) > 0 {
		if pend, err = approvalsOf(ctx, st.conv); err != nil {
			return st, err
		}
	}
	if len(in.Resume) > 0 && st.conv == nil {
		return st, agentik.Errorf(agentik.ENotFound, "the thread has no interrupt to resume")
	}
	p, err := reconcile(journal, in, pend)
	if err != nil {
		return st, err
	}
	p.snapshot = len(in.Messages) == 0
	if len(p.users) > h.opts.MaxRunMessages {
		return st, agentik.Errorf(agentik.EInvalid, "the run brings %d new user messages; at most %d are taken in one run", len(p.users), h.opts.MaxRunMessages)
	}
	if st.conv != nil {
		if err := setState(ctx, st, in); err != nil {
			return st, err
		}
	}
	if len(p.users) == 0 && len(p.results) == 0 && len(p.answers) == 0 {
		if u, ok := regenerateTarget(journal, in, p); ok && st.conv != nil {
			if again, err := h.regenerate(ctx, u, st); again || err != nil {
				return st, err
			}
		}
		st.report = reportOnly(journal, in, p, pend)
		return st, nil
	}
	user, err := h.userMessage(p, in)
	if err != nil {
		return st, err
	}
	if st.conv == nil {
		// A new thread is created only for a run that will send something.
		if conv, _, cursor, err = h.openThread(ctx, in.ThreadID, true); err != nil {
			return st, err
		}
		st.conv, st.cursor = conv, cursor
		if err := setState(ctx, st, in); err != nil {
			return st, err
		}
	}
	// Subscribe before sending so that no event of the run can be missed;
	// the stream replays from the cursor read with the journal.
	events, err := st.conv.Events(ctx, st.cursor)
	if err != nil {
		return st, err
	}
	st.events = events
	return st, h.send(ctx, in, p, pend, user, st)
}

// regenerateTarget finds what a run that brings nothing new asks to be
// answered again. CopilotKit's Regenerate (react-core's reloadMessages)
// cuts the thread after the user message before the answer and runs it
// again, with no other sign; AG-UI has no regenerate message. So a run
// whose messages end at a user message the journal holds, with an answer
// after it that the client dropped (history's Behind), is a regenerate of
// that message (docs/agui.md says what else looks the same). ok is false
// for any other run.
func regenerateTarget(journal []agentik.Message, in RunInput, p plan) (agentik.Message, bool) {
	if !p.behind || len(in.Messages) == 0 || len(in.Resume) > 0 {
		return agentik.Message{}, false
	}
	last := in.Messages[len(in.Messages)-1]
	if last.Role != RoleUser {
		return agentik.Message{}, false
	}
	for i := len(journal) - 1; i >= 0; i-- {
		m := journal[i]
		if m.Type == agentik.MsgUser && (m.ID == last.ID || slices.Contains(clientIDs(m), last.ID)) {
			return m, true
		}
	}
	return agentik.Message{}, false
}

// regenerate answers user message u again on a new branch (SPEC §18); the
// run follows the new answer's turn. again is false when u cannot be
// answered again because its turn is still open (a client that resent its
// run before the answer ended): the run then reports, as before branching.
func (h *Handler) regenerate(ctx context.Context, u agentik.Message, st *runState) (again bool, err error) {
	// Subscribe first, as for a send: no event of the new turn is missed.
	events, err := st.conv.Events(ctx, st.cursor)
	if err != nil {
		return false, err
	}
	res, err := st.conv.Regenerate(context.WithoutCancel(ctx), agentik.RegenerateRequest{Seq: u.Seq, IfBusy: h.opts.IfBusy})
	if err != nil {
		events.Close()
		if agentik.ErrorCode(err) == agentik.EInvalid {
			return false, nil
		}
		return false, err
	}
	st.events = events
	st.turns = []string{res.MessageID}
	st.skip = map[string]bool{}
	return true, nil
}

// reportOnly is a run with nothing to answer: it only reports (the server's
// history when the client sent none, e.g. a reloaded UI, or lacks some of
// it), and what still waits for approval.
func reportOnly(journal []agentik.Message, in RunInput, p plan, pend []agentik.PendingApproval) []Event {
	var out []Event
	if p.snapshot || p.behind {
		out = append(out, Event{Type: MessagesSnapshot, Messages: snapshotMessages(journal)})
	}
	return append(out, finished(in, pend))
}

// finished is the RUN_FINISHED of a run that follows no turn: an interrupt
// when calls wait for approval (pend), a plain success otherwise.
func finished(in RunInput, pend []agentik.PendingApproval) Event {
	fin := Event{Type: RunFinished, ThreadID: in.ThreadID, RunID: in.RunID}
	if len(pend) > 0 {
		fin.Outcome = interruptOutcome(pend)
	}
	return fin
}

// userMessage makes the run's new user messages one turn's input, as AG-UI
// means a run: one stored message, one answer (nil when there are none). A
// refused request stores nothing: the messages are checked before anything
// is sent, as far as the agent lets a facade know in advance.
func (h *Handler) userMessage(p plan, in RunInput) (*agentik.SendRequest, error) {
	images := h.agent.Info().Capabilities.ImageInput
	for _, u := range p.users {
		if err := agentik.ValidateContent(u.Content); err != nil {
			return nil, err
		}
		if agentik.HasImage(u.Content) && !images {
			return nil, agentik.Errorf(agentik.EInvalid, "the model does not take image input")
		}
	}
	if len(p.users) == 0 {
		return nil, nil
	}
	user := mergeUsers(p.users, in)
	if err := agentik.ValidateContent(user.Content); err != nil {
		return nil, err
	}
	return user, nil
}

// send gives the core what the run brings, in order: answers to approvals,
// client tool results, the new user message. It records in st the turns
// the run follows, or what it reports instead when it ends without
// following one. An error means nothing of the run is to be followed.
func (h *Handler) send(ctx context.Context, in RunInput, p plan, pend []agentik.PendingApproval, user *agentik.SendRequest, st *runState) error {
	// The turn belongs to the conversation, not to this request: it must
	// not end with the request (a disconnect is handled explicitly).
	sendCtx := context.WithoutCancel(ctx)
	st.skip = map[string]bool{}
	if len(p.answers) > 0 {
		if err := h.sendAnswers(sendCtx, in, p, pend, st); err != nil || st.report != nil {
			return err
		}
	}
	if len(p.results) > 0 {
		if err := h.sendResults(ctx, sendCtx, in, p, user != nil, st); err != nil {
			return err
		}
	}
	if len(st.turns) == 0 && len(pend) > 0 && user != nil {
		if err := h.sendWhileParked(ctx, sendCtx, in, *user, st); err != nil || st.report != nil {
			return err
		}
		user = nil
	}
	if user != nil {
		user.IfBusy = h.opts.IfBusy
		if len(st.turns) > 0 {
			// The run's own tool results made the conversation busy: the
			// policy is for other runs, not for the rest of this one.
			user.IfBusy = agentik.BusyEnqueue
		}
		res, err := st.conv.Send(sendCtx, *user)
		if err != nil {
			st.sendErr = err
		} else {
			st.turns = append(st.turns, res.MessageID)
		}
	}
	if len(st.turns) == 0 {
		return st.sendErr
	}
	return nil
}

// sendAnswers resolves the approvals the run answers; the run follows the
// parked turn they resume, or reports when there is none to follow.
func (h *Handler) sendAnswers(ctx context.Context, in RunInput, p plan, pend []agentik.PendingApproval, st *runState) error {
	if err := h.resolve(ctx, st.conv, p.answers); err != nil {
		return err
	}
	if len(pend) == 0 {
		// Answered calls that were not listed as waiting (the listing
		// raced a new park): nothing of theirs to follow in this run.
		st.report = []Event{finished(in, nil)}
		return nil
	}
	if rest := unanswered(pend, p.answers); len(rest) > 0 {
		// Some calls still wait (a client that answered only some): the
		// turn stays parked and the run ends as it would have.
		st.report = []Event{finished(in, rest)}
		return nil
	}
	st.turns = append(st.turns, pend[0].ReplyTo)
	for _, a := range p.answers {
		st.skip[a.callID] = p.fromTool[a.callID] // the client has its own tool message
	}
	return nil
}

// sendResults sends the client tool results; the run follows the turn they
// continue. Results for calls that no longer wait are dropped when the run
// has a new message to go ahead alone (more); otherwise they refuse the run.
func (h *Handler) sendResults(ctx, sendCtx context.Context, in RunInput, p plan, more bool, st *runState) error {
	res, err := st.conv.Send(sendCtx, agentik.SendRequest{ToolResults: p.results, ClientTools: in.Tools, IfBusy: h.opts.IfBusy})
	switch {
	case err == nil:
		st.turns = append(st.turns, res.MessageID)
		for _, tr := range p.results {
			st.skip[tr.CallID] = true
		}
	case agentik.ErrorCode(err) == agentik.EInvalid && more:
		// The calls are no longer waiting (the turn was closed meanwhile):
		// the results are stale and the new message goes ahead alone.
		h.log.DebugContext(ctx, "agui: stale tool results dropped", "conversation", st.conv.ID(), "err", err)
	default:
		return err
	}
	return nil
}

// sendWhileParked sends a new message while calls wait for approval and the
// run brings no answers: the conversation's busy policy decides (enqueue: it
// waits behind the parked turn; interrupt: the calls are denied and it is
// answered now; reject: 409).
func (h *Handler) sendWhileParked(ctx, sendCtx context.Context, in RunInput, user agentik.SendRequest, st *runState) error {
	user.IfBusy = h.opts.IfBusy
	res, err := st.conv.Send(sendCtx, user)
	if err != nil {
		return err
	}
	if still, err := approvalsOf(ctx, st.conv); err == nil && len(still) > 0 {
		// Still waiting: the message is queued behind the parked turn.
		// The run reports what waits; the answers resume the turn.
		st.report = []Event{finished(in, still)}
		return nil
	}
	st.turns = append(st.turns, res.MessageID)
	return nil
}

// stream follows the run's turns on the event stream to the run's end, or
// to the client's going away.
func (h *Handler) stream(ctx context.Context, s *sseWriter, tr *translator, st *runState) {
	if st.sendErr != nil {
		// An earlier message was accepted and a later one refused: the run
		// reports the accepted turns, then ends with the refusal.
		h.log.WarnContext(ctx, "agui: a later message of the run was refused", "conversation", st.conv.ID(), "err", st.sendErr)
		tr.finalErr = st.sendErr
	}
	h.follow(ctx, st.conv, st.events, st.cursor, s, tr)
	if tr.done {
		return
	}
	if ctx.Err() != nil || s.failed {
		h.disconnected(st.conv, tr)
		return
	}
	s.emitAll(tr.fail(nil, "the conversation's event stream ended", agentik.EUnavailable))
}

// follow feeds the conversation's events to tr and writes what it makes,
// until the run is done, the client goes away or the stream cannot go on. A
// subscription cut off for being slow resumes from the last durable cursor:
// durable events are never lost, only deltas, which the translator repairs.
func (h *Handler) follow(ctx context.Context, conv agentik.Conversation, stream agentik.Stream[agentik.Event], cursor int64, s *sseWriter, tr *translator) {
	defer func() { stream.Close() }()
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	// Pulled on the request's goroutine (edge.Pull): a run costs the
	// engine no goroutine or channel of its own.
	events := edge.Pull(stream, edge.EventFrame)
	for !tr.done && !s.failed {
		ev, ok, ended, err := edge.Take(events)
		if ended {
			if err != nil || !errors.Is(events.Err(), agentik.ErrSlowSubscriber) || ctx.Err() != nil {
				return
			}
			next, err := conv.Events(ctx, cursor)
			if err != nil {
				return
			}
			stream.Close()
			stream = next
			events = edge.Pull(stream, edge.EventFrame)
			tr.resubscribed()
			continue
		}
		if ok {
			if ev.Cursor > cursor {
				cursor = ev.Cursor
			}
			out := tr.event(ev)
			if n := len(out); n > 0 && out[n-1].Outcome != nil && out[n-1].Outcome.Type == OutcomeInterrupt {
				enrich(ctx, conv, out[n-1].Outcome)
			}
			s.emitAll(out)
			keepAlive.Reset(h.opts.KeepAlive)
			continue
		}
		select {
		case <-ctx.Done():
			// Bring the translator up to date with what already arrived, so
			// that disconnected does not take a turn that has just ended for
			// the run's.
			for {
				ev, ok, _, _ := edge.Take(events)
				if !ok {
					return
				}
				tr.event(ev)
			}
		case <-keepAlive.C:
			s.comment("keep-alive")
		case <-events.Ready():
		case <-events.Done():
		}
	}
}

// disconnected handles a client gone before the run ended. With the
// interrupt policy each of the run's turns that has not ended is interrupted
// — the running one cancelled, a queued one withdrawn — and no turn of
// another run is touched. A conversation that cannot target one turn falls
// back to interrupting the running turn when it is the run's.
func (h *Handler) disconnected(conv agentik.Conversation, tr *translator) {
	if h.opts.OnDisconnect != DisconnectInterrupt || tr.done {
		return
	}
	// Each turn gets its own deadline: withdrawing one never eats the time
	// of the next.
	for _, id := range tr.turns {
		if tr.ended[id] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := conv.InterruptTurn(ctx, id); err != nil {
			h.log.Warn("agui: interrupt after disconnect", "conversation", conv.ID(), "turn", id, "err", err)
		}
		cancel()
	}
}

// openThread returns the caller's conversation of thread threadID (see
// threadCandidates) with its journal and the cursor to subscribe from. A
// missing thread is created when create is set; otherwise conv is nil.
func (h *Handler) openThread(ctx context.Context, threadID string, create bool) (agentik.Conversation, []agentik.Message, int64, error) {
	existing, fresh := threadCandidates(agentik.PrincipalFrom(ctx), threadID)
	// The caller's own conversation, wherever it is; another caller's
	// conversation at a candidate id is not found, exactly like a free id.
	for _, id := range append(existing, fresh...) {
		conv, err := h.agent.Conversation(ctx, id)
		if err == nil {
			return h.read(ctx, conv)
		}
		if !agentik.IsNotFound(err) {
			return nil, nil, 0, err
		}
	}
	if !create {
		return nil, nil, 0, nil // an unknown thread: nothing to read
	}
	for _, id := range fresh {
		_, err := h.agent.CreateConversation(ctx, agentik.CreateRequest{ID: id})
		if agentik.ErrorCode(err) == agentik.EConflict {
			// Created meanwhile by the same caller (then it is found now),
			// or another caller's (then it is not: try the next id).
			err = nil
		}
		if err != nil {
			return nil, nil, 0, err
		}
		conv, err := h.agent.Conversation(ctx, id)
		if err == nil {
			return h.read(ctx, conv)
		}
		if !agentik.IsNotFound(err) {
			return nil, nil, 0, err
		}
	}
	return nil, nil, 0, agentik.Errorf(agentik.EConflict, "this threadId cannot be used; choose another")
}

// read returns conv's whole journal and the cursor to subscribe from.
func (h *Handler) read(ctx context.Context, conv agentik.Conversation) (agentik.Conversation, []agentik.Message, int64, error) {
	var journal []agentik.Message
	var cursor int64 = -1
	after := int64(0)
	for {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{After: after, Limit: agentik.MaxMessagesLimit})
		if err != nil {
			conv.Close()
			return nil, nil, 0, err
		}
		if cursor < 0 {
			cursor = page.Cursor
		}
		journal = append(journal, page.Messages...)
		if !page.HasMore || len(page.Messages) == 0 {
			break
		}
		after = page.Messages[len(page.Messages)-1].Seq
	}
	return conv, journal, cursor, nil
}

// reconcile compares the client's messages with the journal (package
// history): user messages the server does not hold are new; tool messages
// answer the calls the last turn waits for — approvals among them (pend) as
// well as client tools; resume entries answer approvals.
func reconcile(journal []agentik.Message, in RunInput, pend []agentik.PendingApproval) (plan, error) {
	sent := make([]history.Message, len(in.Messages))
	for i, m := range in.Messages {
		sent[i] = history.Message{Role: m.Role, ID: m.ID, Text: agentik.JoinText(m.Content), CallID: m.ToolCallID}
	}
	r := history.Reconcile(journal, sent, history.Options{IDs: clientIDs})
	p := plan{behind: r.Behind}
	for _, i := range r.New {
		p.users = append(p.users, in.Messages[i])
	}
	asking := map[string]bool{}
	for _, a := range pend {
		asking[a.CallID] = true
	}
	if err := p.answer(in, asking); err != nil {
		return p, err
	}
	for _, i := range r.Results {
		m := in.Messages[i]
		if asking[m.ToolCallID] {
			continue // an answer to an approval, taken above
		}
		content := m.Content
		if m.Error != "" && len(content) == 0 {
			content = []agentik.Content{agentik.Text(m.Error)}
		}
		p.results = append(p.results, agentik.ClientToolResult{CallID: m.ToolCallID, Content: content, IsError: m.Error != ""})
	}
	return p, nil
}

// answer takes the run's answers to the approvals asking: resume entries
// first (they are the 1.0 answer, and win over a tool message for the same
// call), then the first tool message for each call. An entry for a call
// that does not wait (unknown, answered, another thread's) is kept:
// answering it gives the native API's error, before anything else is done.
func (p *plan) answer(in RunInput, asking map[string]bool) error {
	answered := map[string]bool{}
	for _, e := range in.Resume {
		res, err := resolutionOfResume(e)
		if err != nil {
			return err
		}
		p.answers = append(p.answers, answer{callID: e.InterruptID, res: res})
		answered[e.InterruptID] = true
	}
	for _, m := range in.Messages {
		if m.Role != RoleTool || !asking[m.ToolCallID] || answered[m.ToolCallID] {
			continue
		}
		res, err := resolutionOfToolMessage(m)
		if err != nil {
			return err
		}
		p.answers = append(p.answers, answer{callID: m.ToolCallID, res: res})
		answered[m.ToolCallID] = true
		if p.fromTool == nil {
			p.fromTool = map[string]bool{}
		}
		p.fromTool[m.ToolCallID] = true
	}
	// Unknown ids first (their error is what the client gets, and nothing
	// has changed yet), then edited approvals (refused arguments are the
	// likeliest error left), then the rest, in the client's order.
	rank := func(a answer) int {
		switch {
		case !asking[a.callID]:
			return 0
		case len(a.res.Arguments) > 0:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(p.answers, func(a, b answer) int { return rank(a) - rank(b) })
	return nil
}

// mergeUsers makes the run's new user messages one message to send: their
// parts in order, then input.context. Several messages record their AG-UI
// ids and part counts, so that they are recognised and shown as they were
// sent.
func mergeUsers(users []InputMessage, in RunInput) *agentik.SendRequest {
	meta := map[string]string{MetaMessageID: users[0].ID}
	var content []agentik.Content
	if len(users) == 1 {
		content = append(content, users[0].Content...)
	} else {
		split := make([]sentMessage, len(users))
		for i, u := range users {
			content = append(content, u.Content...)
			split[i] = sentMessage{ID: u.ID, Parts: len(u.Content)}
		}
		b, _ := json.Marshal(split)
		meta[MetaMessages] = string(b)
	}
	if len(in.Context) > 0 {
		content = append(content, agentik.Text(renderContext(in.Context)))
		meta[MetaContextParts] = "1"
	}
	return &agentik.SendRequest{Content: content, ClientTools: in.Tools,
		Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: Channel}, Metadata: meta}}
}

// renderContext writes input.context for the model. It travels as one extra
// text part of the run's last user message (the core has no other per-turn
// channel to the model) and is hidden again in MESSAGES_SNAPSHOT.
func renderContext(ctx []InputContext) string {
	var b strings.Builder
	b.WriteString("<context>\n")
	for _, c := range ctx {
		b.WriteString(c.Description)
		b.WriteString(": ")
		b.WriteString(c.Value)
		b.WriteByte('\n')
	}
	b.WriteString("</context>")
	return b.String()
}

// lockThread takes the lock of thread id (see threadLock); unlock, called
// once, releases it.
func (h *Handler) lockThread(id string) (unlock func()) {
	h.mu.Lock()
	l := h.threads[id]
	if l == nil {
		l = &threadLock{}
		h.threads[id] = l
	}
	l.refs++
	h.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		h.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(h.threads, id)
		}
		h.mu.Unlock()
	}
}

// startStream writes the 200 and RUN_STARTED.
func (h *Handler) startStream(w http.ResponseWriter, r *http.Request, in RunInput) *sseWriter {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout, dialect: DialectOf(in)}
	s.emit(Event{Type: RunStarted, ThreadID: in.ThreadID, RunID: in.RunID, ParentRunID: in.ParentRunID})
	return s
}

// sseWriter writes AG-UI frames, flushing each, in the client's dialect.
// After a failed write it writes nothing more (failed is set).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	dialect Dialect
	buf     []byte
	failed  bool
}

func (s *sseWriter) emitAll(evs []Event) {
	for _, ev := range evs {
		s.emit(ev)
	}
}

func (s *sseWriter) emit(ev Event) {
	if s.failed {
		return
	}
	ev = s.dialect.adapt(ev)
	ev.Timestamp = time.Now().UnixMilli()
	var err error
	if s.buf, err = appendFrame(s.buf[:0], ev); err != nil {
		s.failed = true
		return
	}
	s.write(s.buf)
}

func (s *sseWriter) comment(text string) {
	if !s.failed {
		s.write([]byte(": " + text + "\n\n"))
	}
}

func (s *sseWriter) write(b []byte) {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.failed = true
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.failed = true
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.failed = true
	}
}

// writeError answers a refused run before streaming exactly as the native
// API answers a refused request (status, error body, WWW-Authenticate,
// Retry-After).
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	edge.WriteError(w, r, h.log, err)
}
