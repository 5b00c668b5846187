package a2a

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// A task is one turn: the answer to one user message. Its id is
// "<conversation id>:<seq of the user message>", so any task can be found
// again from the journal alone — after the turn, and after a restart —
// without a task table. The conversation lookup goes through the agent, so
// a task of another principal is simply not found.

func taskID(conv string, seq int64) string { return conv + ":" + strconv.FormatInt(seq, 10) }

func parseTaskID(id string) (conv string, seq int64, ok bool) {
	conv, s, found := strings.Cut(id, ":")
	if !found || !agentik.ValidID(conv) {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(s, 10, 64)
	if err != nil || seq < 1 || strconv.FormatInt(seq, 10) != s {
		return "", 0, false
	}
	return conv, seq, true
}

func artifactID(task string, n int) string { return task + ":response-" + strconv.Itoa(n) }

// metaMessageID keeps the client's messageId with the stored user message.
const metaMessageID = "a2a_message_id"

// toContent converts A2A parts into the core's content. Images must be sent
// as bytes: file URIs are refused rather than fetched (the server would
// otherwise fetch arbitrary URLs for any caller). Data parts reach the model
// as their JSON text.
func toContent(parts []Part, imageInput bool) ([]agentik.Content, *Error) {
	out := make([]agentik.Content, 0, len(parts))
	for i, p := range parts {
		switch p.Kind {
		case "text":
			if p.Text == "" {
				continue
			}
			out = append(out, agentik.Text(p.Text))
		case "data":
			out = append(out, agentik.Text(string(p.Data)))
		case "raw":
			mt := strings.ToLower(p.MediaType)
			if mt == "text/plain" || mt == "application/json" {
				out = append(out, agentik.Text(string(p.Raw)))
				continue
			}
			if !isImageMIME(mt) {
				return nil, rpcErr(CodeContentTypeNotSupported, "part %d: media type %q is not supported; send text, JSON data or an image (%s)", i, truncate(p.MediaType, 64), strings.Join(agentik.ImageMIMEs, ", "))
			}
			if !imageInput {
				return nil, rpcErr(CodeContentTypeNotSupported, "part %d: this agent's model does not take images", i)
			}
			if len(p.Raw) == 0 {
				return nil, rpcErr(CodeInvalidParams, "part %d: the image is empty", i)
			}
			out = append(out, agentik.Image(mt, p.Raw))
		case "url":
			return nil, rpcErr(CodeContentTypeNotSupported, "part %d: file URIs are not fetched; send the file bytes", i)
		}
	}
	if len(out) == 0 {
		return nil, rpcErr(CodeInvalidParams, "the message has no content")
	}
	return out, nil
}

func isImageMIME(mt string) bool {
	for _, m := range agentik.ImageMIMEs {
		if m == mt {
			return true
		}
	}
	return false
}

// fromContent converts the core's content into A2A parts.
func fromContent(cs []agentik.Content) []Part {
	out := make([]Part, 0, len(cs))
	for _, c := range cs {
		switch c.Type {
		case agentik.ContentImage:
			raw, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				continue
			}
			out = append(out, Part{Kind: "raw", Raw: raw, MediaType: c.MIME})
		default:
			if c.Text != "" {
				out = append(out, TextPart(c.Text))
			}
		}
	}
	return out
}

// openTask resolves a task id to its conversation.
func (s *Server) openTask(ctx context.Context, id string) (agentik.Conversation, int64, *Error) {
	conv, seq, ok := parseTaskID(id)
	if !ok {
		return nil, 0, rpcErr(CodeTaskNotFound, "task %q not found", truncate(id, 80))
	}
	c, err := s.agent.Conversation(ctx, conv)
	if err != nil {
		if agentik.IsNotFound(err) {
			return nil, 0, rpcErr(CodeTaskNotFound, "task %q not found", truncate(id, 80))
		}
		return nil, 0, coreErr(err)
	}
	return c, seq, nil
}

// openTaskOf decodes the params of a request that names a task and opens
// the task's conversation, which the caller closes.
func (s *Server) openTaskOf(ctx context.Context, req *request) (*idParams, agentik.Conversation, int64, *Error) {
	p, rerr := decodeIDParams(req.Params)
	if rerr != nil {
		return nil, nil, 0, rerr
	}
	conv, seq, rerr := s.openTask(ctx, p.ID)
	if rerr != nil {
		return nil, nil, 0, rerr
	}
	return p, conv, seq, nil
}

// turnView is a task as read from the journal.
type turnView struct {
	task    Task
	user    agentik.Message
	seen    map[string]bool // journal ids of the turn's entries
	closed  bool
	pending []agentik.PendingApproval // calls waiting for approval (input-required)
}

// readTask builds the task of the turn answering the user message at seq
// from the journal: completed, failed or canceled once the turn is closed;
// otherwise working while the conversation runs a turn, canceled when an
// interrupt closed it without any partial text, else submitted.
func readTask(ctx context.Context, conv agentik.Conversation, seq int64, history *int) (*turnView, *Error) {
	tv := &turnView{seen: map[string]bool{}}
	id := taskID(conv.ID(), seq)
	after := seq - 1
	var latest int64
	n := 0
	branch, err := taskBranch(ctx, conv, seq)
	if err != nil {
		return nil, coreErr(err)
	}
	for first := true; ; first = false {
		page, err := conv.Messages(ctx, agentik.MessagesRequest{After: after, Branch: branch, Limit: agentik.MaxMessagesLimit})
		if err != nil {
			return nil, coreErr(err)
		}
		if first {
			latest = page.Cursor
			if len(page.Messages) == 0 || page.Messages[0].Seq != seq || page.Messages[0].Type != agentik.MsgUser {
				return nil, rpcErr(CodeTaskNotFound, "task %q not found", id)
			}
			tv.user = page.Messages[0]
		}
		for _, m := range page.Messages {
			after = m.Seq
			if m.ReplyTo != tv.user.ID || tv.closed {
				continue
			}
			tv.seen[m.ID] = true
			switch m.Type {
			case agentik.MsgAssistant:
				if parts := fromContent(m.Content); len(parts) > 0 {
					tv.task.Artifacts = append(tv.task.Artifacts, Artifact{ID: artifactID(id, n), Name: "response", Parts: parts})
					n++
				}
				if m.Interrupted {
					tv.closed = true
					tv.task.Status = Status{State: StateCanceled, Timestamp: m.Date.Time, Message: agentNote(conv.ID(), id, "the turn was interrupted")}
				} else if !m.ClosesTurn() || !lastOfRound(page.Messages, m) {
					// text that came with tool calls: the turn goes on
				} else {
					tv.closed = true
					tv.task.Status = Status{State: StateCompleted, Timestamp: m.Date.Time}
				}
			case agentik.MsgError:
				tv.closed = true
				tv.task.Status = Status{State: StateFailed, Timestamp: m.Date.Time, Message: withCode(agentNote(conv.ID(), id, agentik.TurnErrorMessage(m.Code, m.Details)), m.Code)}
			}
		}
		if tv.closed || !page.HasMore {
			break
		}
	}
	tv.task.ID, tv.task.ContextID = id, conv.ID()
	if !tv.closed {
		info, err := conv.Info(ctx)
		if err != nil {
			return nil, coreErr(err)
		}
		if info.Working {
			// A turn that waits for approvals is working for the core and
			// input-required for A2A.
			if tv.pending, err = pendingFor(ctx, conv, tv.user.ID); err != nil {
				return nil, coreErr(err)
			}
		}
		switch {
		case len(tv.pending) > 0:
			tv.task.Status = Status{State: StateInputRequired, Timestamp: tv.pending[len(tv.pending)-1].RequestedAt.Time,
				Message: approvalNote(conv.ID(), id, tv.pending)}
		case info.Working:
			tv.task.Status = Status{State: StateWorking, Timestamp: time.Now()}
		default:
			gone, err := interruptedSilently(ctx, conv, tv.user.ID, latest)
			if err != nil {
				return nil, coreErr(err)
			}
			if gone {
				tv.closed = true
				tv.task.Status = Status{State: StateCanceled, Timestamp: time.Now(), Message: agentNote(conv.ID(), id, "the turn was interrupted")}
			} else {
				tv.task.Status = Status{State: StateSubmitted, Timestamp: tv.user.Date.Time}
			}
		}
	}
	if history == nil || *history > 0 {
		tv.task.History = []Message{userMessage(conv.ID(), id, &tv.user)}
	}
	return tv, nil
}

// taskBranch is the branch a task is read from: the head path when its
// user message is on it, else the whole journal (a task of an abandoned
// branch, or an edit whose turn has not started and made it the head yet).
func taskBranch(ctx context.Context, conv agentik.Conversation, seq int64) (string, error) {
	page, err := conv.Messages(ctx, agentik.MessagesRequest{After: seq - 1, Limit: 1})
	if err != nil {
		return "", err
	}
	if len(page.Messages) == 1 && page.Messages[0].Seq == seq {
		return agentik.BranchHead, nil
	}
	return agentik.BranchAll, nil
}

// lastOfRound reports whether the assistant message m is not followed by a
// tool call of the same turn: text that comes with tool calls is stored as
// an assistant message just before them, and does not end the turn.
func lastOfRound(page []agentik.Message, m agentik.Message) bool {
	for _, x := range page {
		if x.Seq > m.Seq && x.ReplyTo == m.ReplyTo && x.Type == agentik.MsgToolCall {
			return false
		}
	}
	return true
}

// interruptedSilently reports whether an interrupted event closed the turn of
// userID (an interrupt before any text leaves nothing in the journal). It
// replays the conversation's durable events up to cursor latest; it is only
// needed for an unclosed turn of an idle conversation.
func interruptedSilently(ctx context.Context, conv agentik.Conversation, userID string, latest int64) (bool, error) {
	if latest <= 0 {
		return false, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := conv.Events(ctx, 0)
	if err != nil {
		return false, err
	}
	defer st.Close()
	events := edge.Pull(st, edge.EventFrame) // pulled here: no goroutine of the engine's
	for {
		ev, ok, ended, err := edge.Take(events)
		switch {
		case ended && err != nil:
			return false, err
		case ended:
			if err := events.Err(); err != nil {
				return false, err
			}
			return false, ctx.Err()
		case !ok:
			select {
			case <-events.Ready():
			case <-events.Done():
			}
			continue
		}
		if ev.Type == agentik.EvInterrupted && ev.ReplyTo == userID {
			return true, nil
		}
		if ev.Cursor >= latest {
			return false, nil
		}
	}
}

func userMessage(conv, task string, m *agentik.Message) Message {
	id := m.ID
	if m.Context != nil && m.Context.Metadata[metaMessageID] != "" {
		id = m.Context.Metadata[metaMessageID]
	}
	parts := fromContent(m.Content)
	return Message{ID: id, ContextID: conv, TaskID: task, Role: RoleUser, Parts: parts}
}

func agentNote(conv, task, text string) *Message {
	return &Message{ID: agentik.NewID(), ContextID: conv, TaskID: task, Role: RoleAgent, Parts: []Part{TextPart(text)}}
}

// withCode puts the code of a failed turn (agentik.CodeLLMError, …) in the
// status message's metadata: the same stable name every facade shows.
func withCode(m *Message, code string) *Message {
	if code != "" {
		m.Metadata = map[string]any{"code": code}
	}
	return m
}

// ---- the operations ----

// begin stores the user message of a send and subscribes to the
// conversation first, so that no event of the new turn can be missed.
func (s *Server) begin(ctx context.Context, p *sendParams) (agentik.Conversation, agentik.Stream[agentik.Event], *Task, string, *Error) {
	content, rerr := toContent(p.msg.Parts, s.agent.Info().Capabilities.ImageInput)
	if rerr != nil {
		return nil, nil, nil, "", rerr
	}
	var conv agentik.Conversation
	if p.msg.ContextID == "" {
		info, err := s.agent.CreateConversation(ctx, agentik.CreateRequest{Title: title(content)})
		if err != nil {
			return nil, nil, nil, "", coreErr(err)
		}
		c, err := s.agent.Conversation(ctx, info.ID)
		if err != nil {
			return nil, nil, nil, "", coreErr(err)
		}
		conv = c
	} else {
		if !agentik.ValidID(p.msg.ContextID) {
			return nil, nil, nil, "", rpcErr(CodeInvalidParams, "contextId %q is unknown; omit it to start a new context", truncate(p.msg.ContextID, 80))
		}
		c, err := s.agent.Conversation(ctx, p.msg.ContextID)
		if err != nil {
			if agentik.IsNotFound(err) {
				return nil, nil, nil, "", rpcErr(CodeInvalidParams, "contextId %q is unknown; omit it to start a new context", p.msg.ContextID)
			}
			return nil, nil, nil, "", coreErr(err)
		}
		conv = c
	}
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		conv.Close()
		return nil, nil, nil, "", coreErr(err)
	}
	meta := map[string]string{metaMessageID: truncate(p.msg.ID, 200)}
	res, err := conv.Send(ctx, agentik.SendRequest{Content: content, Context: &agentik.MessageContext{
		Origin: &agentik.Origin{Channel: "a2a", User: agentik.PrincipalFrom(ctx)}, Metadata: meta}})
	if err != nil {
		st.Close()
		conv.Close()
		return nil, nil, nil, "", coreErr(err)
	}
	id := taskID(conv.ID(), res.Seq)
	task := &Task{ID: id, ContextID: conv.ID(), Status: Status{State: StateSubmitted, Timestamp: time.Now()}}
	if p.history == nil || *p.history > 0 {
		user := agentik.Message{ID: res.MessageID, Content: content, Context: &agentik.MessageContext{Metadata: meta}}
		task.History = []Message{userMessage(conv.ID(), id, &user)}
	}
	return conv, st, task, res.MessageID, nil
}

func title(content []agentik.Content) string {
	t := strings.Join(strings.Fields(agentik.JoinText(content)), " ")
	if len([]rune(t)) > 60 {
		t = string([]rune(t)[:60]) + "…"
	}
	return t
}

// send answers SendMessage: after the turn (blocking, the default) or at once.
func (s *Server) send(ctx context.Context, req *request) (any, *Error) {
	p, rerr := decodeSendParams(req.v, req.Params)
	if rerr != nil {
		return nil, rerr
	}
	if p.msg.TaskID != "" {
		return s.sendAnswer(ctx, req, p)
	}
	conv, st, task, userID, rerr := s.begin(ctx, p)
	if rerr != nil {
		return nil, rerr
	}
	defer conv.Close()
	defer st.Close()
	if !p.blocking {
		return encodeEvent(req.v, task), nil
	}
	_, seq, _ := parseTaskID(task.ID)
	w := newWatch(task, userID)
	if rerr := s.follow(ctx, conv, seq, st, w, nil, p.history); rerr != nil {
		return nil, rerr
	}
	tv, rerr := readTask(ctx, conv, seq, p.history)
	if rerr != nil {
		return nil, rerr
	}
	return encodeEvent(req.v, &tv.task), nil
}

func (s *Server) getTask(ctx context.Context, req *request) (any, *Error) {
	p, conv, seq, rerr := s.openTaskOf(ctx, req)
	if rerr != nil {
		return nil, rerr
	}
	defer conv.Close()
	tv, rerr := readTask(ctx, conv, seq, p.HistoryLength)
	if rerr != nil {
		return nil, rerr
	}
	return encodeTask(req.v, &tv.task), nil
}

// cancelTask interrupts the task's turn — cancelled when it runs, withdrawn
// when it waits behind another turn — and answers once the turn is closed.
func (s *Server) cancelTask(ctx context.Context, req *request) (any, *Error) {
	p, conv, seq, rerr := s.openTaskOf(ctx, req)
	if rerr != nil {
		return nil, rerr
	}
	defer conv.Close()
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		return nil, coreErr(err)
	}
	defer st.Close()
	tv, rerr := readTask(ctx, conv, seq, p.HistoryLength)
	if rerr != nil {
		return nil, rerr
	}
	if Terminal(tv.task.Status.State) {
		return nil, rpcErr(CodeTaskNotCancelable, "task %s is %s and cannot be canceled", tv.task.ID, tv.task.Status.State)
	}
	w := newWatch(&tv.task, tv.user.ID)
	// This task's turn only: cancelled if running, withdrawn if queued.
	done, err := conv.InterruptTurn(ctx, tv.user.ID)
	if err != nil {
		return nil, coreErr(err)
	}
	if !done {
		// Not reachable now (queued where it cannot be withdrawn):
		// interrupt the conversation once the task's turn runs.
		w.cancel = func() {
			if _, err := conv.Interrupt(ctx); err != nil {
				s.log.Warn("a2a cancel: interrupt failed", "task", tv.task.ID, "err", err)
			}
		}
	}
	if rerr := s.follow(ctx, conv, seq, st, w, nil, p.HistoryLength); rerr != nil {
		return nil, rerr
	}
	tv, rerr = readTask(ctx, conv, seq, p.HistoryLength)
	if rerr != nil {
		return nil, rerr
	}
	if tv.task.Status.State != StateCanceled {
		return nil, rpcErr(CodeTaskNotCancelable, "task %s became %s before it could be canceled", tv.task.ID, tv.task.Status.State)
	}
	return encodeTask(req.v, &tv.task), nil
}

// stream answers SendStreamingMessage with an SSE stream of the turn.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *request) {
	ctx := r.Context()
	p, rerr := decodeSendParams(req.v, req.Params)
	if rerr != nil {
		s.writeError(w, http.StatusOK, req.ID, rerr)
		return
	}
	if p.msg.TaskID != "" {
		s.streamAnswer(w, r, req, p)
		return
	}
	conv, st, task, userID, rerr := s.begin(ctx, p)
	if rerr != nil {
		s.writeError(w, http.StatusOK, req.ID, rerr)
		return
	}
	defer conv.Close()
	defer st.Close()
	_, seq, _ := parseTaskID(task.ID)
	out := s.newSSE(w, req)
	if out.send(task) != nil {
		return
	}
	wt := newWatch(task, userID)
	if rerr := s.follow(ctx, conv, seq, st, wt, out, p.history); rerr != nil {
		out.fail(rerr)
	}
}

// subscribe answers SubscribeToTask / tasks/resubscribe: the task as it is
// now, then its live events until it ends (at once for a finished task).
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, req *request) {
	ctx := r.Context()
	p, conv, seq, rerr := s.openTaskOf(ctx, req)
	if rerr != nil {
		s.writeError(w, http.StatusOK, req.ID, rerr)
		return
	}
	defer conv.Close()
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		s.writeError(w, http.StatusOK, req.ID, coreErr(err))
		return
	}
	defer st.Close()
	tv, rerr := readTask(ctx, conv, seq, p.HistoryLength)
	if rerr != nil {
		s.writeError(w, http.StatusOK, req.ID, rerr)
		return
	}
	out := s.newSSE(w, req)
	if out.send(&tv.task) != nil || Terminal(tv.task.Status.State) || tv.task.Status.State == StateInputRequired {
		return
	}
	wt := newWatch(&tv.task, tv.user.ID)
	wt.skip = tv.seen
	wt.artifacts = len(tv.task.Artifacts)
	if rerr := s.follow(ctx, conv, seq, st, wt, out, p.HistoryLength); rerr != nil {
		out.fail(rerr)
	}
}

// follow feeds the conversation's events to w until the task ends, the
// client goes away or the conversation is gone. Each idle keep-alive tick
// re-reads the task from the journal: a stream cut for a slow reader, or a
// dropped online event, then still ends correctly.
func (s *Server) follow(ctx context.Context, conv agentik.Conversation, seq int64, st agentik.Stream[agentik.Event], w *watch, out *sseOut, history *int) *Error {
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	var lastCursor int64
	// Pulled on the request's goroutine (edge.Pull): a task's stream costs
	// the engine no goroutine or channel of its own.
	events := edge.Pull(st, edge.EventFrame)
	for {
		ev, ok, ended, err := edge.Take(events)
		if ended {
			if err == nil {
				err = events.Err()
			}
			if err != nil && !errors.Is(err, agentik.ErrSlowSubscriber) {
				return coreErr(err)
			}
			if ctx.Err() != nil {
				return nil
			}
			// Resume after the last durable event; online ones in the
			// gap are lost, so the task is then re-read from the journal.
			after := lastCursor
			if after == 0 {
				after = agentik.LiveOnly
			}
			st2, err := conv.Events(ctx, after)
			if err != nil {
				return coreErr(err)
			}
			defer st2.Close()
			events = edge.Pull(st2, edge.EventFrame)
			if done, rerr := s.settle(ctx, conv, seq, w, out, history); done || rerr != nil {
				return rerr
			}
			continue
		}
		if ok {
			if ev.Cursor > 0 {
				lastCursor = ev.Cursor
			}
			evs, done := w.handle(ev)
			if out != nil {
				for _, e := range evs {
					if out.send(e) != nil {
						return nil
					}
				}
			}
			if done {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if out != nil && out.ping() != nil {
				return nil
			}
			if done, rerr := s.settle(ctx, conv, seq, w, out, history); done || rerr != nil {
				return rerr
			}
		case <-events.Ready():
		case <-events.Done():
		}
	}
}

// settle checks the journal; when the task has ended it sends what the
// stream has not shown yet and the final status.
func (s *Server) settle(ctx context.Context, conv agentik.Conversation, seq int64, w *watch, out *sseOut, history *int) (bool, *Error) {
	tv, rerr := readTask(ctx, conv, seq, history)
	if rerr != nil {
		return false, rerr
	}
	if !Terminal(tv.task.Status.State) && tv.task.Status.State != StateInputRequired {
		return false, nil
	}
	if out != nil {
		for i, a := range tv.task.Artifacts {
			if i >= w.artifacts {
				out.send(&ArtifactUpdate{TaskID: w.task.ID, ContextID: w.task.ContextID, Artifact: a, LastChunk: true})
			}
		}
		st := tv.task.Status
		out.send(&StatusUpdate{TaskID: w.task.ID, ContextID: w.task.ContextID, Status: st, Final: true})
	}
	return true, nil
}

// sendAnswer answers SendMessage on an input-required task: the message
// answers its waiting calls; the same task goes on (blocking: until it ends
// or asks again).
func (s *Server) sendAnswer(ctx context.Context, req *request, p *sendParams) (any, *Error) {
	conv, st, tv, rest, rerr := s.answerTask(ctx, p)
	if rerr != nil {
		return nil, rerr
	}
	defer conv.Close()
	defer st.Close()
	_, seq, _ := parseTaskID(tv.task.ID)
	if p.blocking && len(rest) == 0 {
		w := newWatch(&tv.task, tv.user.ID)
		w.skip, w.artifacts = tv.seen, len(tv.task.Artifacts)
		if rerr := s.follow(ctx, conv, seq, st, w, nil, p.history); rerr != nil {
			return nil, rerr
		}
	}
	tv, rerr = readTask(ctx, conv, seq, p.history)
	if rerr != nil {
		return nil, rerr
	}
	return encodeEvent(req.v, &tv.task), nil
}

// streamAnswer answers SendStreamingMessage on an input-required task: the
// task (working), then the resumed turn's events until it ends or asks again.
func (s *Server) streamAnswer(w http.ResponseWriter, r *http.Request, req *request, p *sendParams) {
	ctx := r.Context()
	conv, st, tv, rest, rerr := s.answerTask(ctx, p)
	if rerr != nil {
		s.writeError(w, http.StatusOK, req.ID, rerr)
		return
	}
	defer conv.Close()
	defer st.Close()
	_, seq, _ := parseTaskID(tv.task.ID)
	out := s.newSSE(w, req)
	wt := newWatch(&tv.task, tv.user.ID)
	wt.skip, wt.artifacts = tv.seen, len(tv.task.Artifacts)
	if len(rest) > 0 {
		// Calls still wait: the task stays input-required.
		tv.task.Status.Message = approvalNote(conv.ID(), tv.task.ID, rest)
		if out.send(&tv.task) == nil {
			out.send(wt.status(StateInputRequired, tv.task.Status.Message, true))
		}
		return
	}
	tv.task.Status = Status{State: StateWorking, Timestamp: time.Now()}
	if out.send(&tv.task) != nil {
		return
	}
	if rerr := s.follow(ctx, conv, seq, st, wt, out, p.history); rerr != nil {
		out.fail(rerr)
	}
}
