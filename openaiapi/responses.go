package openaiapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/history"
	"github.com/google/uuid"
)

// MetaClientTools lists, comma-separated, the client tools a user message
// was sent with through this door: their calls are function_call items
// whoever reads the response later.
const MetaClientTools = "openai.client_tools"

// respKey identifies a response: a turn of a conversation (the user message
// it answers), the journal seq its output starts at (a response that
// continues a turn with tool outputs or approvals starts after what came
// before) and the durable cursor to replay its events from.
type respKey struct {
	conv, turn      string
	fromSeq, cursor int64
}

func (k respKey) id() string {
	return fmt.Sprintf("resp_%s_%s_%d_%d", k.conv, k.turn, k.fromSeq, k.cursor)
}

// parseRespID reads a response id; false for anything this door did not
// make.
func parseRespID(s string) (respKey, bool) {
	rest, ok := strings.CutPrefix(s, "resp_")
	parts := strings.Split(rest, "_")
	if !ok || len(parts) != 4 || !agentik.ValidID(parts[0]) || !agentik.ValidID(parts[1]) {
		return respKey{}, false
	}
	from, err1 := strconv.ParseInt(parts[2], 10, 64)
	cur, err2 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || from < 0 || cur < 0 {
		return respKey{}, false
	}
	return respKey{conv: parts[0], turn: parts[1], fromSeq: from, cursor: cur}, true
}

// response is a Responses API response object.
type response struct {
	key                respKey
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Output             []item             `json:"output"`
	Usage              *respUsage         `json:"usage"`
	Error              *respError         `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Conversation       *struct {
		ID string `json:"id"`
	} `json:"conversation"`
	Instructions      *string           `json:"instructions"`
	Metadata          map[string]string `json:"metadata"`
	Tools             []ResponseTool    `json:"tools"`
	ToolChoice        string            `json:"tool_choice"`
	ParallelToolCalls bool              `json:"parallel_tool_calls"`
	Background        bool              `json:"background"`
	Store             bool              `json:"store"`
	Text              map[string]any    `json:"text"`
	Temperature       float64           `json:"temperature"`
	TopP              float64           `json:"top_p"`
}

type respUsage struct {
	InputTokens         int64            `json:"input_tokens"`
	OutputTokens        int64            `json:"output_tokens"`
	TotalTokens         int64            `json:"total_tokens"`
	InputTokensDetails  map[string]int64 `json:"input_tokens_details"`
	OutputTokensDetails map[string]int64 `json:"output_tokens_details"`
}

type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

// newResponse is the response of key before any output.
func newResponse(key respKey, model string) *response {
	r := &response{key: key, ID: key.id(), Object: "response", CreatedAt: createdAt(key.turn), Status: statusInProgress, Model: model,
		Output: []item{}, Metadata: map[string]string{}, Tools: []ResponseTool{}, ToolChoice: "auto", ParallelToolCalls: true,
		Store: true, Text: map[string]any{"format": map[string]any{"type": "text"}}, Temperature: 1, TopP: 1}
	r.Conversation = &struct {
		ID string `json:"id"`
	}{ID: key.conv}
	return r
}

// createdAt is the time of a turn: its message id is a UUIDv7.
func createdAt(id string) int64 {
	u, err := uuid.Parse(id)
	if err != nil {
		return time.Now().Unix()
	}
	sec, _ := u.Time().UnixTime()
	return sec
}

// respCall is one POST /v1/responses.
type respCall struct {
	req    ResponseRequest
	model  Model
	conv   agentik.Conversation
	key    respKey
	client map[string]bool
	prev   *respKey // the response previous_response_id names
}

func (h *Handler) createResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req, err := DecodeResponse(body)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	m, err := h.model(ctx, req.Model)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c := &respCall{req: req, model: m, client: map[string]bool{}}
	for _, t := range req.Tools {
		c.client[t.Name] = true
	}
	events, err := h.executeResponse(ctx, c)
	if c.conv != nil {
		defer c.conv.Close()
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	resp := c.response()
	switch {
	case req.Background && !req.Stream:
		events.Close()
		resp.Status = statusQueued
		writeJSON(w, http.StatusOK, resp)
	case req.Stream:
		s := startSSE(w, nil)
		p := newProjector(resp, c.client, m.ID)
		p.begin()
		h.streamProjection(ctx, s, c.conv, events, c.key, p, -1)
	default:
		p := newProjector(resp, c.client, m.ID)
		err := h.follow(ctx, c.conv, events, c.key.cursor, c.key.turn, func(ev agentik.Event) bool { p.event(ev); return p.done }, func() bool {
			jp, done, err := h.fromJournal(ctx, c.conv, c.key, m.ID)
			if err == nil && done {
				*p = *jp
			}
			return p.done
		})
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, p.resp)
	}
}

// response is the call's response before any output.
func (c *respCall) response() *response {
	resp := newResponse(c.key, c.model.ID)
	if c.req.PreviousResponseID != "" {
		resp.PreviousResponseID = &c.req.PreviousResponseID
	}
	if c.req.Instructions != "" {
		resp.Instructions = &c.req.Instructions
	}
	if c.req.Metadata != nil {
		resp.Metadata = c.req.Metadata
	}
	if c.req.Tools != nil {
		resp.Tools = c.req.Tools
	}
	if c.req.Temperature != nil {
		resp.Temperature = *c.req.Temperature
	}
	if c.req.TopP != nil {
		resp.TopP = *c.req.TopP
	}
	resp.Background = c.req.Background
	resp.Store = c.req.Store == nil || *c.req.Store
	return resp
}

// streamProjection follows the turn on events through p and writes what
// a client that has everything up to n lacks, until the response ends or
// the client goes away.
func (h *Handler) streamProjection(ctx context.Context, s *sseWriter, conv agentik.Conversation, events agentik.Stream[agentik.Event], key respKey, p *projector, n int64) {
	write := func() {
		s.hold()
		for _, ev := range after(p.drain(), n) {
			s.raw(ev.typ, ev.data)
			n = ev.seq
		}
		s.release()
	}
	write()
	err := h.follow(ctx, conv, events, key.cursor, key.turn, func(ev agentik.Event) bool {
		p.event(ev)
		write()
		return p.done || s.failed
	}, func() bool {
		if jp, done, err := h.fromJournal(ctx, conv, key, p.label); err == nil && done {
			p.out = jp.out
			p.done = true
			write()
		} else {
			s.comment("keep-alive")
		}
		return p.done || s.failed
	})
	if err != nil && !s.failed && ctx.Err() == nil && !p.done {
		_, body := openAIErrorBody(err)
		s.data("error", map[string]any{"type": "error", "sequence_number": p.seq + 1, "code": body.Error.Code, "message": body.Error.Message})
	}
}

// executeResponse finds or makes the conversation, sends what the input
// brings under its lock, and returns the stream to follow the turn on.
func (h *Handler) executeResponse(ctx context.Context, c *respCall) (agentik.Stream[agentik.Event], error) {
	if err := h.respConversation(ctx, c); err != nil {
		return nil, err
	}
	var journal []agentik.Message
	var cursor int64
	read := false // the journal was read: cursor and fromSeq come from it
	if c.conv != nil {
		unlock := h.lock(c.conv.ID())
		defer unlock()
		// Tool outputs and approval answers are held against the journal;
		// a plain message needs no read (see awaitStart).
		if read = c.req.continues(); read {
			var err error
			if journal, cursor, err = readJournal(ctx, c.conv); err != nil {
				return nil, err
			}
		} else {
			cursor = agentik.LiveOnly
		}
	}
	var last int64
	if n := len(journal); n > 0 {
		last = journal[n-1].Seq
	}
	plan, err := h.planResponse(ctx, c, journal)
	if err != nil {
		return nil, err
	}
	made := ""         // the conversation this request made
	if c.conv == nil { // a new conversation, once the request is known good
		if c.conv, err = newConversation(ctx, c.model.Agent, c.req.Store != nil && !*c.req.Store); err != nil {
			return nil, err
		}
		made = c.conv.ID()
	}
	c.key = respKey{conv: c.conv.ID(), fromSeq: last + 1, cursor: cursor}
	stream, err := c.conv.Events(ctx, cursor)
	if err != nil {
		h.discard(ctx, c.model.Agent, made)
		return nil, err
	}
	// Pulled here and by follow after it, on the request's goroutine.
	events := edge.Pull(stream, edge.EventFrame)
	sent, err := h.sendResponse(ctx, c, plan)
	if err != nil {
		events.Close()
		h.discard(ctx, c.model.Agent, made) // nothing was sent: the message was refused
		return nil, err
	}
	if !read && cursor == agentik.LiveOnly {
		if err := awaitStart(ctx, events, c, sent); err != nil {
			events.Close()
			return nil, err
		}
	}
	return events, nil
}

// continues reports whether the input continues a turn (tool outputs,
// approval answers): the journal says which calls wait and where the
// response's output starts.
func (req *ResponseRequest) continues() bool {
	for _, it := range req.items {
		if it.Type == "function_call_output" || it.Type == "mcp_approval_response" {
			return true
		}
	}
	return false
}

// awaitStart reads a live stream subscribed before the send up to the
// user message's own event: the response's events start after its cursor,
// its output at its seq.
func awaitStart(ctx context.Context, events agentik.PullStream[agentik.Event], c *respCall, sent agentik.SendResult) error {
	c.key.fromSeq = sent.Seq
	for {
		ev, ok, ended, err := edge.Take(events)
		switch {
		case ended && err != nil:
			return err
		case ended:
			if err := events.Err(); err != nil {
				return err
			}
			return agentik.Errorf(agentik.EUnavailable, "the conversation's event stream ended")
		case ok:
			if ev.Message != nil && ev.Message.ID == c.key.turn {
				c.key.cursor = ev.Cursor - 1
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events.Ready():
		case <-events.Done():
		}
	}
}

// respConversation opens the conversation the request continues
// (previous_response_id or conversation, the caller's only) or makes one
// (temporal when store is false).
func (h *Handler) respConversation(ctx context.Context, c *respCall) error {
	id := c.req.conv
	field := "conversation"
	if c.req.PreviousResponseID != "" {
		key, ok := parseRespID(c.req.PreviousResponseID)
		if !ok {
			return param(agentik.ENotFound, "previous_response_id", "previous response not found")
		}
		id, field = key.conv, "previous_response_id"
		c.prev = &key
	}
	if id != "" {
		if !agentik.ValidID(id) {
			return param(agentik.ENotFound, field, "%s not found", field)
		}
		conv, err := c.model.Agent.Conversation(ctx, id)
		if err != nil {
			if agentik.IsNotFound(err) {
				return param(agentik.ENotFound, field, "%s not found", field)
			}
			return err
		}
		c.conv = conv
		return nil
	}
	return nil
}

// respPlan is what a request sends.
type respPlan struct {
	user    *agentik.SendRequest
	results []agentik.ClientToolResult
	answers map[string]agentik.Resolution
	turn    string // the parked turn the answers resume
}

// planResponse reads the input items: function_call_output answers a
// call the conversation waits for (one that answers none is refused),
// mcp_approval_response a waiting approval, user messages are the turn's
// message, system/developer messages and instructions its context.
func (h *Handler) planResponse(ctx context.Context, c *respCall, journal []agentik.Message) (respPlan, error) {
	p := respPlan{answers: map[string]agentik.Resolution{}}
	waiting := history.Waiting(journal)
	var pend []agentik.PendingApproval
	var content []agentik.Content
	var system, prior []string
	if c.req.Instructions != "" {
		system = append(system, c.req.Instructions)
	}
	for i, it := range c.req.items {
		field := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "message":
			parts, err := contentOf(it.Content, field+".content")
			if err != nil {
				return p, err
			}
			switch it.Role {
			case "user":
				content = append(content, parts...)
			case "assistant":
				if t := agentik.JoinText(parts); t != "" {
					prior = append(prior, "assistant: "+t)
				}
			default:
				if t := agentik.JoinText(parts); t != "" {
					system = append(system, t)
				}
			}
		case "function_call_output":
			if !waiting[it.CallID] {
				return p, param(agentik.EMalformed, field+".call_id", "%s: the output for %q answers no call the conversation waits for", field, it.CallID)
			}
			parts, err := outputText(it.Output)
			if err != nil {
				return p, err
			}
			delete(waiting, it.CallID)
			p.results = append(p.results, agentik.ClientToolResult{CallID: it.CallID, Content: parts})
		case "mcp_approval_response":
			if pend == nil && c.conv != nil {
				var err error
				if pend, err = c.conv.Approvals(ctx); err != nil {
					return p, err
				}
			}
			call := strings.TrimPrefix(it.ApprovalRequestID, "mcpr_")
			i := slices.IndexFunc(pend, func(a agentik.PendingApproval) bool { return a.CallID == call })
			if i < 0 {
				return p, param(agentik.ENotFound, field+".approval_request_id", "%s: no approval request %q waits", field, it.ApprovalRequestID)
			}
			p.answers[call] = agentik.Resolution{Approved: *it.Approve, Reason: it.Reason}
			p.turn = pend[i].ReplyTo
		}
	}
	if len(content) == 0 && len(p.results) == 0 && len(p.answers) == 0 {
		return p, param(agentik.EInvalid, "input", "input: no user message, function_call_output or mcp_approval_response")
	}
	if len(content) > 0 {
		u, err := h.respUser(c, content, prior, system)
		if err != nil {
			return p, err
		}
		p.user = u
	}
	return p, nil
}

// respUser is the user message of a request: its content and context.
func (h *Handler) respUser(c *respCall, content []agentik.Content, prior, system []string) (*agentik.SendRequest, error) {
	if agentik.HasImage(content) && !c.model.Agent.Info().Capabilities.ImageInput {
		return nil, param(agentik.EInvalid, "input", "the model %q does not take image input", c.model.ID)
	}
	ctxParts := contextParts(prior, system)
	content = append(content, ctxParts...)
	if err := agentik.ValidateContent(content); err != nil {
		return nil, err
	}
	meta := map[string]string{}
	if len(ctxParts) > 0 {
		meta[MetaContextParts] = strconv.Itoa(len(ctxParts))
	}
	if names := clientNames(c.req.Tools); names != "" {
		meta[MetaClientTools] = names
	}
	var specs []FunctionSpec
	for _, t := range c.req.Tools {
		specs = append(specs, FunctionSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return &agentik.SendRequest{Content: content, ClientTools: toolSpecs(specs), Context: origin(meta),
		Params: modelParams(c.req.Temperature, c.req.TopP, nil, c.req.MaxOutputTokens)}, nil
}

func clientNames(tools []ResponseTool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return strings.Join(names, ",")
}

// sendResponse sends the plan; the key's turn is the turn the response
// follows.
func (h *Handler) sendResponse(ctx context.Context, c *respCall, p respPlan) (agentik.SendResult, error) {
	sendCtx := context.WithoutCancel(ctx)
	for call, res := range p.answers {
		if err := c.conv.Resolve(sendCtx, call, res); err != nil {
			return agentik.SendResult{}, err
		}
		c.key.turn = p.turn
	}
	var specs []FunctionSpec
	for _, t := range c.req.Tools {
		specs = append(specs, FunctionSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if len(p.results) > 0 {
		res, err := c.conv.Send(sendCtx, agentik.SendRequest{ToolResults: p.results, ClientTools: toolSpecs(specs), IfBusy: h.opts.IfBusy})
		if err != nil {
			return res, err
		}
		if c.key.turn == "" {
			c.key.turn = res.MessageID
		}
	}
	if p.user == nil {
		return agentik.SendResult{}, nil
	}
	p.user.IfBusy = h.opts.IfBusy
	if c.key.turn != "" {
		p.user.IfBusy = agentik.BusyEnqueue
	} else if err := h.branchAt(ctx, c, p.user); err != nil {
		return agentik.SendResult{}, err
	}
	res, err := c.conv.Send(sendCtx, *p.user)
	if err != nil {
		return res, err
	}
	if c.key.turn == "" {
		c.key.turn = res.MessageID
	}
	return res, nil
}

// fromJournal projects the response of key from the stored journal: done
// reports that the response is over (the projector then holds its every
// event, ended).
func (h *Handler) fromJournal(ctx context.Context, conv agentik.Conversation, key respKey, model string) (*projector, bool, error) {
	// Whether a turn runs is read before the journal: a turn that ends in
	// between has its end in the journal read after (read the other way
	// round, an answer committed in between would be taken for a turn
	// that stopped without one).
	info, err := conv.Info(ctx)
	if err != nil {
		return nil, false, err
	}
	// Every branch: a response stays readable when the conversation has
	// moved to another branch since.
	journal, _, err := readBranch(ctx, conv, agentik.BranchAll)
	if err != nil {
		return nil, false, err
	}
	client := map[string]bool{}
	resp := newResponse(key, model)
	var turnSeen bool
	for _, m := range journal {
		if m.ID == key.turn {
			turnSeen = true
			if m.Context != nil {
				for _, n := range strings.Split(m.Context.Metadata[MetaClientTools], ",") {
					if n != "" {
						client[n] = true
					}
				}
			}
		}
	}
	if !turnSeen {
		return nil, false, agentik.Errorf(agentik.ENotFound, "no such response")
	}
	p := newProjector(resp, client, model)
	p.begin()
	calls := map[string]bool{}
	for i := range journal {
		m := &journal[i]
		if m.ReplyTo != key.turn || m.Seq < key.fromSeq {
			continue
		}
		switch m.Type {
		case agentik.MsgToolCall:
			calls[m.CallID] = true
		case agentik.MsgToolResult:
			delete(calls, m.CallID)
		}
		p.event(agentik.MessageEvent(m))
	}
	if p.done {
		return p, true, nil
	}
	pend, err := conv.Approvals(ctx)
	if err != nil {
		return nil, false, err
	}
	var mine []agentik.PendingApproval
	for _, a := range pend {
		if a.ReplyTo == key.turn {
			mine = append(mine, a)
		}
	}
	if len(mine) > 0 {
		for _, a := range mine {
			p.event(agentik.Event{Type: agentik.EvApprovalRequested, CallID: a.CallID, Name: a.Name, Arguments: a.Arguments, ReplyTo: a.ReplyTo})
		}
		p.event(agentik.Event{Type: agentik.EvAwaitingApproval, ReplyTo: key.turn})
		return p, true, nil
	}
	if info.Working {
		return p, false, nil
	}
	if len(calls) > 0 {
		p.finish(statusCompleted, nil) // waiting for the client's tool outputs
	} else {
		p.finish(statusCancelled, nil)
	}
	return p, true, nil
}

// respTarget finds the conversation of response id among the caller's.
func (h *Handler) respTarget(ctx context.Context, id string) (respKey, Model, agentik.Conversation, error) {
	key, ok := parseRespID(id)
	if !ok {
		return key, Model{}, nil, agentik.Errorf(agentik.ENotFound, "no such response")
	}
	m, conv, err := h.findConversation(ctx, key.conv)
	if err != nil {
		if agentik.IsNotFound(err) {
			err = agentik.Errorf(agentik.ENotFound, "no such response")
		}
		return key, m, nil, err
	}
	return key, m, conv, nil
}

func (h *Handler) getResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key, m, conv, err := h.respTarget(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer conv.Close()
	q := r.URL.Query()
	stream, err := streamAsked(w, r, h.opts.MaxBodyBytes)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !stream {
		p, _, err := h.fromJournal(ctx, conv, key, m.ID)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, p.resp)
		return
	}
	n := int64(-1)
	if s := q.Get("starting_after"); s != "" {
		if n, err = strconv.ParseInt(s, 10, 64); err != nil || n < -1 {
			h.fail(w, r, param(agentik.EInvalid, "starting_after", "starting_after: want a sequence number"))
			return
		}
	}
	h.resume(ctx, w, r, conv, key, m, n)
}

// streamAsked reports whether a retrieve asks for the stream: stream=true
// in the query (the npm SDK) or in a JSON body (openai-go sends one with
// its GET).
func streamAsked(w http.ResponseWriter, r *http.Request, limit int64) (bool, error) {
	switch r.URL.Query().Get("stream") {
	case "true":
		return true, nil
	case "", "false":
	default:
		return false, param(agentik.EInvalid, "stream", "stream: want true or false")
	}
	if r.ContentLength == 0 {
		return false, nil
	}
	b, err := edge.ReadBody(w, r, min(limit, 4096))
	if err != nil || len(b) == 0 {
		return false, err
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	if err := decodeStrict(b, &body); err != nil {
		return false, err
	}
	return body.Stream, nil
}

// resume streams the response of key from after sequence number n: from
// the journal when it is over, else from the durable log and live.
func (h *Handler) resume(ctx context.Context, w http.ResponseWriter, r *http.Request, conv agentik.Conversation, key respKey, m Model, n int64) {
	jp, done, err := h.fromJournal(ctx, conv, key, m.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var events agentik.Stream[agentik.Event]
	if !done {
		if events, err = conv.Events(ctx, key.cursor); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	s := startSSE(w, nil)
	if done {
		s.hold()
		for _, ev := range after(jp.out, n) {
			s.raw(ev.typ, ev.data)
		}
		s.release()
		return
	}
	p := newProjector(newResponse(key, m.ID), jp.client, m.ID)
	p.begin()
	h.streamProjection(ctx, s, conv, events, key, p, n)
}

// cancelWait bounds how long a cancel waits for the turn to stop.
const cancelWait = 10 * time.Second

func (h *Handler) cancelResponse(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key, m, conv, err := h.respTarget(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer conv.Close()
	// Follow the turn to its end, so that the answer says cancelled and
	// not still in progress.
	events, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	cut, err := conv.InterruptTurn(context.WithoutCancel(ctx), key.turn)
	if err != nil {
		events.Close()
		h.fail(w, r, err)
		return
	}
	if cut {
		wait, cancel := context.WithTimeout(ctx, cancelWait)
		h.follow(wait, conv, events, 0, key.turn, func(ev agentik.Event) bool {
			return ev.Type == agentik.EvEnd || ev.Type == agentik.EvInterrupted
		}, nil)
		cancel()
	} else {
		events.Close()
	}
	p, _, err := h.fromJournal(ctx, conv, key, m.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p.resp)
}

func (h *Handler) deleteResponse(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, param(agentik.EInvalid, "response_id", "a response is a turn of its conversation and is not deleted alone: DELETE /v1/conversations/{id} deletes the conversation"))
}

// listInputItems lists the input items of a response: the user message
// it answers (when the response starts its turn) and the client tool
// outputs that continue the turn, as the Conversations items show them.
func (h *Handler) listInputItems(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key, _, conv, err := h.respTarget(ctx, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer conv.Close()
	pg, err := pagingOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	journal, _, err := readBranch(ctx, conv, agentik.BranchAll)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	in, ok := inputOf(journal, key)
	if !ok {
		h.fail(w, r, agentik.Errorf(agentik.ENotFound, "no such response"))
		return
	}
	writeJSON(w, http.StatusOK, pg.list(conversationItems(in)))
}

// inputOf picks the journal messages that were the input of the response
// of key: from its first seq, the turn's user message and the outputs of
// client tools that come before the model's next step (an approved call's
// result is output: an mcp_call). False when the journal has no such turn.
func inputOf(journal []agentik.Message, key respKey) ([]agentik.Message, bool) {
	var in []agentik.Message
	client := map[string]bool{}
	seen := false
	for _, m := range journal {
		if m.ID == key.turn {
			seen = true
			if m.Context != nil {
				for _, n := range strings.Split(m.Context.Metadata[MetaClientTools], ",") {
					client[n] = n != ""
				}
			}
		}
		if m.Seq < key.fromSeq || (m.ID != key.turn && m.ReplyTo != key.turn) {
			continue
		}
		if m.Type != agentik.MsgUser && (m.Type != agentik.MsgToolResult || !client[m.Name]) {
			break // the model's step: the response's output
		}
		in = append(in, m)
	}
	return in, seen
}

// branchAt makes user an edit when previous_response_id names a response
// that is no longer the end of the conversation's head path (SPEC §18):
// the new input follows that response's answer on a new branch, and the
// head moves there. The latest response costs one read of the head
// message; an older one a read of the tree.
func (h *Handler) branchAt(ctx context.Context, c *respCall, user *agentik.SendRequest) error {
	if c.prev == nil {
		return nil
	}
	info, err := c.conv.Info(ctx)
	if err != nil || info.Head == 0 {
		return err
	}
	page, err := c.conv.Messages(ctx, agentik.MessagesRequest{After: info.Head - 1, Limit: 1, Branch: agentik.BranchAll})
	if err != nil {
		return err
	}
	if len(page.Messages) == 1 && page.Messages[0].Seq == info.Head && (page.Messages[0].ReplyTo == c.prev.turn || page.Messages[0].ID == c.prev.turn) {
		return nil // the head is that response's turn: it continues there
	}
	journal, _, err := readBranch(ctx, c.conv, agentik.BranchAll)
	if err != nil {
		return err
	}
	if end := answerEnd(journal, *c.prev); end > 0 {
		user.Parent = &end
	}
	return nil
}

// answerEnd is the seq of the last message of the response of key, once
// that response is over (0 while it is not, or for none): what the
// projector reads from the journal up to the response's end.
func answerEnd(journal []agentik.Message, key respKey) int64 {
	p := newProjector(newResponse(key, ""), map[string]bool{}, "")
	for i := range journal {
		m := &journal[i]
		if m.ReplyTo != key.turn || m.Seq < key.fromSeq {
			continue
		}
		p.event(agentik.MessageEvent(m))
		if p.done {
			return m.Seq
		}
	}
	return 0
}
