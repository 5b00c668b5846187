package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeOptions configures Bridge.
type BridgeOptions struct {
	// URL is the MCP endpoint of a running agentik (…/mcp).
	URL string
	// Token is the bearer token sent with every request ("" for none).
	Token string
	// Version identifies the bridge to the server.
	Version string
	// HTTPClient makes the requests; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Logger receives what goes wrong; nil is slog.Default(). It must not
	// write to the bridge's output.
	Logger *slog.Logger
}

// Bridge serves the agent at opts.URL as an MCP server on in and out
// (newline-delimited JSON-RPC, the stdio transport), for clients that can
// only start a process. It returns when in ends, when ctx ends, or at once
// when the server cannot be reached or refuses the token.
//
// The server is spoken to at the current protocol revision, which keeps no
// session on the server: a restart of the server does not break the bridge.
// The bridge keeps what a session would: an ask without conversation_id (and
// without new_conversation) continues the conversation of the bridge's last
// answer. Progress notifications and cancellation are relayed both ways.
func Bridge(ctx context.Context, in io.ReadCloser, out io.WriteCloser, opts BridgeOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if opts.Token != "" {
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c := *hc
		c.Transport = bearerTransport{token: opts.Token, base: base}
		hc = &c
	}
	b := &bridge{log: log, progress: map[string]*relay{}}
	// The bridge declares elicitation (the handler is never called: the
	// server asks at the current revision through input_required results,
	// which the bridge handles itself, not the SDK's retry loop).
	client := sdk.NewClient(&sdk.Implementation{Name: "agentik-mcp-bridge", Version: opts.Version},
		&sdk.ClientOptions{ProgressNotificationHandler: b.relayProgress, ElicitationHandler: cancelElicitation, Logger: quieter(log),
			MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
	remote, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: opts.URL, HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolCurrent})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", opts.URL, err)
	}
	defer remote.Close()
	b.remote = remote

	init := remote.InitializeResult()
	impl := &sdk.Implementation{Name: "agentik"}
	if init != nil && init.ServerInfo != nil {
		impl = init.ServerInfo
	}
	var instructions string
	if init != nil {
		instructions = init.Instructions
	}
	local := sdk.NewServer(impl, &sdk.ServerOptions{Instructions: instructions, Logger: quieter(log)})
	n := 0
	for tool, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", opts.URL, err)
		}
		local.AddTool(tool, b.forward(tool.Name))
		n++
	}
	log.Info("MCP bridge ready", "url", opts.URL, "tools", n)
	err = local.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// bridge relays tool calls from the local client to the remote server.
type bridge struct {
	log    *slog.Logger
	remote *sdk.ClientSession

	mu           sync.Mutex
	conversation string // of the last answer relayed
	nextToken    int
	progress     map[string]*relay // remote progress token → local call
}

// relay is where the progress of one remote call goes.
type relay struct {
	ctx     context.Context
	session *sdk.ServerSession
	token   any

	mu      sync.Mutex
	relayed float64       // progress of the last notification passed on
	changed chan struct{} // signalled after each
}

// relayWait bounds how long a result waits for the progress notifications
// that preceded it on the wire (the client hands them over apart).
const relayWait = 5 * time.Second

// wait returns once the notification with progress want has been passed
// on, or after relayWait.
func (r *relay) wait(want float64) {
	timeout := time.NewTimer(relayWait)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		done := r.relayed >= want
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.changed:
		case <-r.ctx.Done():
			return
		case <-timeout.C:
			return
		}
	}
}

func (b *bridge) forward(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		if name == ToolAsk {
			b.mu.Lock()
			conv := b.conversation
			b.mu.Unlock()
			args = continueConversation(args, conv)
		}
		// A retry of a call the server answered with input_required carries
		// the local client's answers and the server's state back.
		params := &sdk.CallToolParams{Name: name, Arguments: args,
			InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState}
		var rel *relay
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			rel = &relay{ctx: ctx, session: req.Session, token: tok, changed: make(chan struct{}, 1)}
			b.mu.Lock()
			b.nextToken++
			id := "bridge-" + strconv.Itoa(b.nextToken)
			b.progress[id] = rel
			b.mu.Unlock()
			defer func() {
				b.mu.Lock()
				delete(b.progress, id)
				b.mu.Unlock()
			}()
			params.SetProgressToken(id)
		}
		res, err := b.call(ctx, req, params)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			b.log.Warn("MCP bridge: call failed", "tool", name, "err", err)
			return toolError("the agent could not be reached: %v", err), nil
		}
		if res.InputRequests != nil {
			return res, nil // the local client answers, then calls again
		}
		if want, ok := res.Meta[MetaProgress].(float64); ok && rel != nil {
			rel.wait(want)
		}
		if name == ToolAsk {
			if id := answerConversation(res.StructuredContent); id != "" {
				b.mu.Lock()
				b.conversation = id
				b.mu.Unlock()
			}
		}
		return res, nil
	}
}

// maxRounds bounds how many input_required rounds the bridge answers for
// one call (the SDK's client allows as many).
const maxRounds = 10

// call makes a remote call. The server's questions (approvals, as
// input_required results) are the local client's to answer. A client at
// the current revision that takes elicitations gets the result itself: it
// answers and calls again. One at an earlier revision that takes them is
// asked here, by elicitation, round after round. Any other client, or a
// question it cannot answer, gets no answer (cancel), and the server then
// says where else the approval can be given.
func (b *bridge) call(ctx context.Context, req *sdk.CallToolRequest, params *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	caps := req.ClientCapabilities()
	asks := caps != nil && caps.Elicitation != nil
	for range maxRounds {
		res, err := b.remote.CallTool(ctx, params)
		if err != nil || (res.InputRequests == nil && !res.NeedsInput()) {
			return res, err
		}
		if len(res.InputRequests) == 0 {
			return toolError("the agent is busy: try again later"), nil // the server sheds load
		}
		if asks && req.ProtocolVersion() >= ProtocolCurrent {
			return &sdk.CallToolResult{InputRequests: res.InputRequests, RequestState: res.RequestState}, nil
		}
		answers := sdk.InputResponseMap{}
		for id, ir := range res.InputRequests {
			answers[id] = b.ask(ctx, req, asks, ir)
		}
		retry := *params
		retry.InputResponses, retry.RequestState = answers, res.RequestState
		params = &retry
	}
	return nil, errors.New("the agent kept asking for input")
}

// ask puts one question of the server to a local client at an earlier
// revision by elicitation; cancel (no answer) when it cannot be asked.
func (b *bridge) ask(ctx context.Context, req *sdk.CallToolRequest, asks bool, ir sdk.InputRequest) sdk.InputResponse {
	cancel := &sdk.ElicitResult{Action: "cancel"}
	p, ok := ir.(*sdk.ElicitParams)
	if !asks || !ok || req.Session == nil {
		return cancel
	}
	res, err := req.Session.Elicit(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("MCP bridge: elicitation of the local client failed", "err", err)
		}
		return cancel
	}
	return res
}

// cancelElicitation answers an elicitation request of the server: the
// server asks through input_required results at the revision the bridge
// speaks, so none is expected; should one come, it gets no answer.
func cancelElicitation(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	return &sdk.ElicitResult{Action: "cancel"}, nil
}

func (b *bridge) relayProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	id, _ := req.Params.ProgressToken.(string)
	b.mu.Lock()
	r, ok := b.progress[id]
	b.mu.Unlock()
	if !ok {
		return
	}
	p := *req.Params
	p.Meta, p.ProgressToken = nil, r.token
	if err := r.session.NotifyProgress(r.ctx, &p); err != nil {
		b.log.Debug("MCP bridge: relay progress", "err", err)
	}
	r.mu.Lock()
	r.relayed = p.Progress
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// continueConversation returns the arguments of an ask with conversation_id
// set to conv when they name no conversation and do not ask for a new one.
// Anything that is not a JSON object is passed on unchanged: the server
// answers it.
func continueConversation(args json.RawMessage, conv string) json.RawMessage {
	if conv == "" {
		return args
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil || fields == nil {
		return args
	}
	// Keys are compared as a JSON decoder may match them: without case.
	for k, v := range fields {
		if strings.EqualFold(k, "conversation_id") ||
			strings.EqualFold(k, "new_conversation") && !bytes.Equal(bytes.TrimSpace(v), []byte("false")) {
			return args
		}
	}
	id, _ := json.Marshal(conv)
	fields["conversation_id"] = id
	out, err := json.Marshal(fields)
	if err != nil {
		return args
	}
	return out
}

// answerConversation returns the conversation_id of an ask result's
// structured content ("" when it has none that is valid).
func answerConversation(structured any) string {
	var out struct {
		ConversationID string `json:"conversation_id"`
	}
	var b []byte
	switch v := structured.(type) {
	case nil:
		return ""
	case json.RawMessage:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return ""
		}
	}
	if json.Unmarshal(b, &out) != nil || !agentik.ValidID(out.ConversationID) {
		return ""
	}
	return out.ConversationID
}
