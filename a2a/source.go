package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/defaults"
	"github.com/agentik/agentik/internal/httpx"
)

// Remote is one remote agent to offer as a tool.
type Remote struct {
	URL   string // base URL (its card is at URL + CardPath) or the card's URL
	Token string // bearer token sent to it; empty: none
}

// SourceOptions configures a Source.
type SourceOptions struct {
	Agents     []Remote
	HTTPClient *http.Client // nil: a client without overall timeout (calls are bounded by the tool timeout)
	Logger     *slog.Logger
	// ConversationKey names the local conversation a tool call belongs to,
	// from the call's context. The remote contextId is kept per key. When it
	// is nil or returns "", calls are keyed by the turn instead (see Tools).
	ConversationKey func(ctx context.Context) string
	// RetryInterval is how often an agent whose card could not be fetched
	// is tried again; default 30s.
	RetryInterval time.Duration
	// MaxContexts bounds the remembered remote contexts per agent; default 10000.
	MaxContexts int
}

// Source offers remote A2A agents as tools (an agentik.ToolSource). Each
// agent whose card is known is one tool. Agents that could not be reached
// at start are retried in the background until Close.
type Source struct {
	opts   SourceOptions
	log    *slog.Logger
	agents []*remoteAgent
	stop   chan struct{}
	base   context.Context // ends at Close: cuts a retry in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

var _ agentik.ToolSource = (*Source)(nil)

// NewSource fetches every agent's card, waiting at most until ctx ends, and
// starts retrying those it could not reach. It never fails: an unreachable
// agent is logged and simply not offered until it answers.
func NewSource(ctx context.Context, opts SourceOptions) *Source {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: httpx.PooledTransport()} // concurrent calls to one agent reuse their connections
	}
	defaults.Positive(&opts.RetryInterval, 30*time.Second)
	defaults.Positive(&opts.MaxContexts, 10000)
	s := &Source{opts: opts, log: opts.Logger, stop: make(chan struct{})}
	s.base, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defaults.Logger(&s.log)
	var wg sync.WaitGroup
	for _, r := range opts.Agents {
		a := &remoteAgent{src: s, remote: r, contexts: map[string]string{}}
		s.agents = append(s.agents, a)
		wg.Add(1)
		go func() { defer wg.Done(); a.dial(ctx) }()
	}
	wg.Wait()
	for _, a := range s.agents {
		if a.get() == nil {
			s.wg.Add(1)
			go s.retry(a)
		}
	}
	return s
}

// retry dials a until it answers or the source is closed.
func (s *Source) retry(a *remoteAgent) {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(s.base, 10*time.Second)
			a.dial(ctx)
			cancel()
			if a.get() != nil {
				return
			}
		}
	}
}

// Close stops the background retries and waits for them. Idempotent.
func (s *Source) Close() error {
	s.once.Do(func() { close(s.stop); s.cancel() })
	s.wg.Wait()
	return nil
}

// Names returns the tool name of every agent whose card is known.
func (s *Source) Names() []string {
	var out []string
	for _, a := range s.agents {
		if c := a.get(); c != nil {
			out = append(out, a.name)
		}
	}
	return out
}

// Tools returns one tool per reachable agent. Without a ConversationKey
// the tools are bound to ctx — the engine calls Tools with the turn's
// context — so calls within one turn share a remote context.
func (s *Source) Tools(ctx context.Context) []agentik.Tool {
	key := ""
	if s.opts.ConversationKey != nil {
		key = s.opts.ConversationKey(ctx)
	}
	defaults.String(&key, fmt.Sprintf("turn:%p", ctx))
	var out []agentik.Tool
	for _, a := range s.agents {
		if a.get() != nil {
			out = append(out, &agentTool{a: a, key: key})
		}
	}
	return out
}

type remoteAgent struct {
	src    *Source
	remote Remote

	mu       sync.Mutex
	client   *Client
	name     string
	desc     string
	contexts map[string]string // local key → remote contextId
	order    []string          // keys in insertion order, for eviction
}

func (a *remoteAgent) get() *Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}

func (a *remoteAgent) dial(ctx context.Context) {
	c, err := Dial(ctx, a.remote.URL, a.remote.Token, a.src.opts.HTTPClient)
	if err != nil {
		a.src.log.Warn("a2a agent unreachable; retrying in the background", "url", a.remote.URL, "err", err)
		return
	}
	card := c.Card()
	a.mu.Lock()
	a.client, a.name, a.desc = c, toolName(card.Name), describe(card)
	a.mu.Unlock()
	a.src.log.Info("a2a agent added as a tool", "url", a.remote.URL, "tool", a.name, "protocol", card.Version.String())
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// toolName makes a card name a valid function name for OpenAI-style APIs.
func toolName(s string) string {
	n := strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_")
	defaults.String(&n, "remote_agent")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

func describe(c *Card) string {
	var b strings.Builder
	b.WriteString("Ask the remote agent ")
	b.WriteString(c.Name)
	if c.Description != "" {
		b.WriteString(": ")
		b.WriteString(strings.TrimSpace(c.Description))
	}
	b.WriteString(". It keeps the conversation: follow-up requests can refer to earlier ones.")
	for _, sk := range c.Skills {
		fmt.Fprintf(&b, "\nSkill %s: %s", sk.Name, strings.TrimSpace(sk.Description))
	}
	return b.String()
}

func (a *remoteAgent) contextFor(key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.contexts[key]
}

func (a *remoteAgent) remember(key, ctxID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.contexts[key]; !ok {
		a.order = append(a.order, key)
		if len(a.order) > a.src.opts.MaxContexts {
			delete(a.contexts, a.order[0])
			a.order = a.order[1:]
		}
	}
	a.contexts[key] = ctxID
}

// stateKey names this agent's remote context in a conversation's state.
func (a *remoteAgent) stateKey() string { return "a2a.context " + a.remote.URL }

// recall reads the remote context of key from the conversation's state
// (kept across restarts and processes) and remembers it.
func (a *remoteAgent) recall(ctx context.Context, state agentik.ConversationState, key string) string {
	v, err := state.State(ctx, a.stateKey())
	if err != nil {
		a.src.log.Warn("a2a: read the remote context", "url", a.remote.URL, "err", err)
		return ""
	}
	var id string
	if v == nil || json.Unmarshal(v, &id) != nil || id == "" {
		return ""
	}
	a.remember(key, id)
	return id
}

// store keeps the remote context in the conversation's state ("": none).
func (a *remoteAgent) store(ctx context.Context, state agentik.ConversationState, id string) {
	if state == nil {
		return
	}
	var v agentik.RawJSON
	if id != "" {
		v, _ = json.Marshal(id)
	}
	if err := state.SetState(ctx, a.stateKey(), v); err != nil && ctx.Err() == nil {
		a.src.log.Warn("a2a: keep the remote context", "url", a.remote.URL, "err", err)
	}
}

func (a *remoteAgent) forget(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.contexts, key)
}

// agentTool is a remote agent offered to the model.
type agentTool struct {
	a   *remoteAgent
	key string
}

var toolParams = agentik.RawJSON(`{"type":"object","properties":{"message":{"type":"string","description":"The request for the remote agent, in natural language. It remembers earlier requests of this conversation."}},"required":["message"]}`)

func (t *agentTool) Spec() agentik.ToolSpec {
	t.a.mu.Lock()
	defer t.a.mu.Unlock()
	return agentik.ToolSpec{Name: t.a.name, Description: t.a.desc, Parameters: toolParams, Source: "a2a:" + t.a.name}
}

// Call sends the model's request to the remote agent. Every failure of the
// remote is a result the model sees; only the end of ctx (interrupt, tool
// timeout) is returned as an error.
func (t *agentTool) Call(ctx context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	var in struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Message) == "" {
		return agentik.ErrorResult(`arguments must be {"message": "<request for the remote agent>"}`), nil
	}
	c := t.a.get()
	if c == nil {
		return agentik.ErrorResult("the remote agent is not reachable"), nil
	}
	key := t.key
	var state agentik.ConversationState // where the remote context outlives this process
	if k := t.a.src.opts.ConversationKey; k != nil {
		if ck := k(ctx); ck != "" {
			key = ck
			state = agentik.ConversationStateFrom(ctx)
		}
	}
	ctxID := t.a.contextFor(key)
	if ctxID == "" && state != nil {
		ctxID = t.a.recall(ctx, state, key)
	}
	res, err := t.send(ctx, c, in.Message, ctxID)
	var rpc *Error
	if err != nil && ctxID != "" && errors.As(err, &rpc) && (rpc.Code == CodeInvalidParams || rpc.Code == CodeTaskNotFound) && ctx.Err() == nil {
		// The remote forgot the context (deleted, or another store): start
		// a new one rather than failing every follow-up.
		t.a.forget(key)
		t.a.store(ctx, state, "")
		res, err = t.send(ctx, c, in.Message, "")
	}
	if err != nil {
		if ctx.Err() != nil {
			return agentik.ToolResult{}, ctx.Err()
		}
		return agentik.ErrorResult(fmt.Sprintf("the remote agent %s failed: %s", t.a.name, safeErr(err))), nil
	}
	var content []agentik.Content
	var taskState, note, remoteCtx string
	switch r := res.(type) {
	case *Message:
		content, remoteCtx = toToolContent(r.Parts), r.ContextID
		taskState = StateCompleted
	case *Task:
		for _, a := range r.Artifacts {
			content = append(content, toToolContent(a.Parts)...)
		}
		taskState, remoteCtx = r.Status.State, r.ContextID
		if r.Status.Message != nil {
			note = agentik.JoinText(toToolContent(r.Status.Message.Parts))
		}
	}
	if remoteCtx != "" {
		t.a.remember(key, remoteCtx)
		if remoteCtx != ctxID {
			t.a.store(ctx, state, remoteCtx)
		}
	}
	switch state := taskState; state {
	case StateCompleted:
	case StateInputRequired, StateAuthRequired:
		content = append(content, agentik.Text(fmt.Sprintf("[the remote agent needs more input (%s): %s]", state, note)))
	default:
		msg := fmt.Sprintf("the remote agent %s ended the task as %s", t.a.name, state)
		if note != "" {
			msg += ": " + note
		}
		return agentik.ToolResult{Content: append(content, agentik.Text(msg)), IsError: true}, nil
	}
	if len(content) == 0 {
		content = []agentik.Content{agentik.Text("")}
	}
	return agentik.ToolResult{Content: content}, nil
}

func (t *agentTool) send(ctx context.Context, c *Client, text, ctxID string) (Event, error) {
	m := &Message{ID: agentik.NewID(), ContextID: ctxID, Role: RoleUser, Parts: []Part{TextPart(text)}}
	return c.Send(ctx, m, nil)
}

// toToolContent keeps text and images; data parts become their JSON text.
func toToolContent(ps []Part) []agentik.Content {
	var out []agentik.Content
	for _, p := range ps {
		switch p.Kind {
		case "text":
			if p.Text != "" {
				out = append(out, agentik.Text(p.Text))
			}
		case "data":
			out = append(out, agentik.Text(string(p.Data)))
		case "raw":
			if isImageMIME(strings.ToLower(p.MediaType)) {
				out = append(out, agentik.Image(strings.ToLower(p.MediaType), p.Raw))
			} else if strings.HasPrefix(p.MediaType, "text/") {
				out = append(out, agentik.Text(string(p.Raw)))
			}
		case "url":
			out = append(out, agentik.Text(p.URL))
		}
	}
	return out
}

// safeErr describes a remote failure for the model without leaking
// credentials (URLs carry no token; the text is the remote's own message).
func safeErr(err error) string {
	var rpc *Error
	if errors.As(err, &rpc) {
		return fmt.Sprintf("%s (code %d)", truncate(rpc.Message, 300), rpc.Code)
	}
	return truncate(err.Error(), 300)
}
