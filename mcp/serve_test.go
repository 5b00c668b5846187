package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tokens of the test edge: token → principal.
var serveTokens = map[string]string{"tok-alice": "alice", "tok-bob": "bob"}

// serveEnv is the real stack behind the facade: an engine on a SQLite file,
// the OpenAI adapter talking to a scripted model over HTTP, and the MCP
// handler behind a bearer-token edge on a real listener.
type serveEnv struct {
	t   testing.TB
	llm *llmtest.Server
	eng *engine.Engine
	h   *Handler
	url string
}

func newServeEnv(t testing.TB, opts ...func(*ServeOptions)) *serveEnv {
	return newServeEnvWith(t, nil, opts...)
}

func newServeEnvWith(t testing.TB, eopt func(*engine.Options), opts ...func(*ServeOptions)) *serveEnv {
	t.Helper()
	st := stacktest.New(t,
		stacktest.Model(func(o *openai.Options) { o.Timeout = 20 * time.Second }),
		stacktest.Engine(func(o *engine.Options) {
			o.Info = agentik.AgentInfo{ID: "helper", Name: "Helper", Description: "answers test questions"}
			o.SystemPrompt = "You are a test agent."
			o.ToolTimeout = 5 * time.Second
			if eopt != nil {
				eopt(o)
			}
		}))
	e := &serveEnv{t: t, llm: st.LLM, eng: st.Engine}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	so := ServeOptions{Version: "test", Logger: log}
	for _, o := range opts {
		o(&so)
	}
	e.h = NewHandler(e.eng, so)
	mux := http.NewServeMux()
	mux.Handle("/mcp", testEdge(e.h))
	srv := httptest.NewServer(mux)
	e.url = srv.URL + "/mcp"
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.h.Close(cctx)
	})
	return e
}

// testEdge stands for the server's authentication edge: it puts the
// principal of the bearer token in the request context, or answers 401.
func testEdge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := serveTokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentik"`)
			http.Error(w, `{"error":{"code":"unauthorized","message":"missing or invalid bearer token"}}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(agentik.WithPrincipal(r.Context(), p)))
	})
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// serveCtx bounds a test's calls; generous, for a loaded machine.
func serveCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu      sync.Mutex
	text    strings.Builder
	last    float64
	ordered bool
	changed chan struct{}
}

func newProgressLog() *progressLog {
	return &progressLog{ordered: true, changed: make(chan struct{}, 1)}
}

func (p *progressLog) handle(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.text.WriteString(req.Params.Message)
	if req.Params.Progress <= p.last {
		p.ordered = false
	}
	p.last = req.Params.Progress
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until the streamed text is want (notifications may trail
// the result they precede on the wire: the client handles them apart).
func (p *progressLog) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		got, ordered := p.text.String(), p.ordered
		p.mu.Unlock()
		if !ordered {
			t.Fatalf("progress did not increase with every notification")
		}
		if got == want {
			return
		}
		select {
		case <-p.changed:
		case <-deadline:
			t.Fatalf("progress text %q, want %q", got, want)
		}
	}
}

type clientOpt func(*sdk.ClientOptions)

func (e *serveEnv) connect(token, version string, opts ...clientOpt) *sdk.ClientSession {
	e.t.Helper()
	cs, err := e.dial(token, version, opts...)
	if err != nil {
		e.t.Fatalf("connect (%s): %v", version, err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func (e *serveEnv) dial(token, version string, opts ...clientOpt) (*sdk.ClientSession, error) {
	co := &sdk.ClientOptions{}
	for _, o := range opts {
		o(co)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "go-test-client", Version: "1.0"}, co)
	tr := &sdk.StreamableClientTransport{Endpoint: e.url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	return client.Connect(serveCtx(e.t), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
}

func withProgress(p *progressLog) clientOpt {
	return func(o *sdk.ClientOptions) { o.ProgressNotificationHandler = p.handle }
}

// ask calls the ask tool and decodes its structured output.
func ask(t testing.TB, ctx context.Context, cs *sdk.ClientSession, args map[string]any, progressToken any) (*sdk.CallToolResult, AskOutput) {
	t.Helper()
	params := &sdk.CallToolParams{Name: ToolAsk, Arguments: args}
	if progressToken != nil {
		params.SetProgressToken(progressToken)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	var out AskOutput
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("structured content %s: %v", b, err)
		}
	}
	return res, out
}

func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// journal returns the types of a conversation's entries as principal.
func (e *serveEnv) journal(principal, id string) []agentik.Message {
	e.t.Helper()
	return stacktest.Journal(e.t, e.eng, id, principal)
}

func types(msgs []agentik.Message) string {
	var s []string
	for _, m := range msgs {
		t := m.Type
		if m.Interrupted {
			t += "(interrupted)"
		}
		s = append(s, t)
	}
	return strings.Join(s, ",")
}

var protocols = []string{ProtocolCurrent, ProtocolPrevious}

func TestServeInitializeAndListTools(t *testing.T) {
	e := newServeEnv(t)
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			cs := e.connect("tok-alice", v)
			init := cs.InitializeResult()
			if init.ProtocolVersion != v {
				t.Fatalf("negotiated %s, want %s", init.ProtocolVersion, v)
			}
			if init.ServerInfo == nil || init.ServerInfo.Name != "Helper" || init.ServerInfo.Version != "test" {
				t.Fatalf("server info %+v", init.ServerInfo)
			}
			if !strings.Contains(init.Instructions, "answers test questions") {
				t.Fatalf("instructions %q", init.Instructions)
			}
			res, err := cs.ListTools(serveCtx(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*sdk.Tool{}
			for _, tl := range res.Tools {
				got[tl.Name] = tl
			}
			for _, name := range []string{ToolAsk, ToolListConversations, ToolReadConversation} {
				tl := got[name]
				if tl == nil {
					t.Fatalf("tool %s missing from %v", name, res.Tools)
				}
				if tl.OutputSchema == nil || tl.InputSchema == nil {
					t.Fatalf("tool %s lacks schemas", name)
				}
			}
			in, _ := json.Marshal(got[ToolAsk].InputSchema)
			for _, want := range []string{`"message"`, `"conversation_id"`, `"new_conversation"`, `"required":["message"]`} {
				if !strings.Contains(string(in), want) {
					t.Errorf("ask input schema lacks %s: %s", want, in)
				}
			}
			if len(res.Tools) != 3 {
				t.Errorf("%d tools", len(res.Tools))
			}
		})
	}
}

// TestServeAskStreamsAndContinues asks, with progress, and continues the
// conversation by id, over both protocol revisions.
func TestServeAskStreamsAndContinues(t *testing.T) {
	e := newServeEnv(t)
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			e.llm.Enqueue(
				llmtest.Stream().Role().Content("Hello", ", ", "world", "!").Finish("stop").Done(),
				llmtest.Text("Again, hello."),
			)
			prog := newProgressLog()
			cs := e.connect("tok-alice", v, withProgress(prog))
			ctx := serveCtx(t)
			res, out := ask(t, ctx, cs, map[string]any{"message": "Say hello"}, "p-1")
			if res.IsError || resultText(res) != "Hello, world!" {
				t.Fatalf("result %v %q", res.IsError, resultText(res))
			}
			if out.Answer != "Hello, world!" || !agentik.ValidID(out.ConversationID) || out.MessageID == "" {
				t.Fatalf("structured %+v", out)
			}
			prog.waitFor(t, "Hello, world!")

			// Without a progress token nothing is streamed, and the id continues.
			res2, out2 := ask(t, ctx, cs, map[string]any{"message": "Once more", "conversation_id": out.ConversationID}, nil)
			if res2.IsError || out2.ConversationID != out.ConversationID || out2.Answer != "Again, hello." {
				t.Fatalf("second ask: %v %+v", res2.IsError, out2)
			}
			msgs := e.journal("alice", out.ConversationID)
			if got := types(msgs); got != "user_message,assistant_message,user_message,assistant_message" {
				t.Fatalf("journal %s", got)
			}
			if msgs[0].Context == nil || msgs[0].Context.Origin == nil || msgs[0].Context.Origin.Channel != Channel ||
				msgs[0].Context.Origin.User != "alice" || msgs[0].Context.Origin.DisplayName != "go-test-client" {
				t.Fatalf("origin %+v", msgs[0].Context)
			}
			// The model saw the first exchange when answering the second.
			reqs := e.llm.Requests()
			if last := reqs[len(reqs)-1]; !strings.Contains(string(last.Raw), "Hello, world!") {
				t.Fatalf("the second turn lacked the first answer: %s", last.Raw)
			}
			prog.mu.Lock()
			defer prog.mu.Unlock()
			if prog.text.String() != "Hello, world!" {
				t.Fatalf("the call without a token streamed progress: %q", prog.text.String())
			}
		})
	}
}

// TestServeSessionConversation: a session continues its conversation
// without an id and new_conversation starts another; a session-less call
// (the current revision) starts a new one each time.
func TestServeSessionConversation(t *testing.T) {
	e := newServeEnv(t)
	e.llm.Enqueue(llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"), llmtest.Text("four"), llmtest.Text("five"))
	ctx := serveCtx(t)
	cs := e.connect("tok-alice", ProtocolPrevious)
	_, a := ask(t, ctx, cs, map[string]any{"message": "first"}, nil)
	_, b := ask(t, ctx, cs, map[string]any{"message": "second"}, nil)
	if a.ConversationID != b.ConversationID {
		t.Fatalf("a session's second ask went to %s, not %s", b.ConversationID, a.ConversationID)
	}
	_, c := ask(t, ctx, cs, map[string]any{"message": "third", "new_conversation": true}, nil)
	if c.ConversationID == a.ConversationID {
		t.Fatal("new_conversation continued the old conversation")
	}
	// Another session of the same principal has its own default.
	cs2 := e.connect("tok-alice", ProtocolPrevious)
	_, d := ask(t, ctx, cs2, map[string]any{"message": "fourth"}, nil)
	if d.ConversationID == a.ConversationID || d.ConversationID == c.ConversationID {
		t.Fatal("a new session continued another session's conversation")
	}
	stateless := e.connect("tok-alice", ProtocolCurrent)
	_, x := ask(t, ctx, stateless, map[string]any{"message": "fifth"}, nil)
	if x.ConversationID == d.ConversationID || x.ConversationID == a.ConversationID || x.ConversationID == c.ConversationID {
		t.Fatal("a session-less ask continued a conversation")
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: map[string]any{"message": "x", "conversation_id": a.ConversationID, "new_conversation": true}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "not both") {
		t.Fatalf("conversation_id with new_conversation: %v %+v", err, res)
	}
}

// TestServeCancelInterruptsThatTurn cancels an ask whose turn is
// streaming, and one whose turn waits behind another client's: each time
// exactly the cancelled call's turn ends, nothing else.
func TestServeCancelInterruptsThatTurn(t *testing.T) {
	e := newServeEnv(t)
	for _, v := range protocols {
		t.Run(v+"/running", func(t *testing.T) {
			gate := llmtest.NewGate()
			t.Cleanup(gate.Release)
			e.llm.Enqueue(llmtest.Stream().Role().Content("partial ").Pause(gate).Content("never").Finish("stop").Done())
			prog := newProgressLog()
			cs := e.connect("tok-alice", v, withProgress(prog))
			ctx, cancel := context.WithCancel(serveCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, withToken(&sdk.CallToolParams{Name: ToolAsk, Arguments: map[string]any{"message": "long", "new_conversation": true}}, "c-1"))
				done <- err
			}()
			<-gate.Reached()
			prog.waitFor(t, "partial ")
			conv := e.onlyWorking(t, "alice")
			stream := e.events(t, "alice", conv)
			cancel()
			if err := <-done; err == nil {
				t.Fatal("a cancelled call returned no error")
			}
			e.waitEnd(t, stream, agentik.EndInterrupted)
			if got := types(e.journal("alice", conv)); got != "user_message,assistant_message(interrupted)" {
				t.Fatalf("journal %s", got)
			}
		})
		t.Run(v+"/queued", func(t *testing.T) {
			gate := llmtest.NewGate()
			t.Cleanup(gate.Release)
			calls := len(e.llm.Requests())
			e.llm.Enqueue(llmtest.Stream().Role().Content("first ").Pause(gate).Content("answer").Finish("stop").Done())
			actx := agentik.WithPrincipal(serveCtx(t), "alice")
			info, err := e.eng.CreateConversation(actx, agentik.CreateRequest{})
			if err != nil {
				t.Fatal(err)
			}
			conv, _ := e.eng.Conversation(actx, info.ID)
			defer conv.Close()
			stream := e.events(t, "alice", info.ID)
			first, err := conv.Send(actx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("first")}})
			if err != nil {
				t.Fatal(err)
			}
			<-gate.Reached()
			cs := e.connect("tok-alice", v)
			ctx, cancel := context.WithCancel(serveCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: map[string]any{"message": "second", "conversation_id": info.ID}})
				done <- err
			}()
			// Wait until the ask's message is stored (queued behind first).
			var second string
			for second == "" {
				ev := e.next(t, stream)
				if ev.Type == agentik.EvUserMessage && ev.Message.ID != first.MessageID {
					second = ev.Message.ID
				}
			}
			cancel()
			<-done
			// The queued turn is withdrawn: its end comes while first still runs.
			for {
				ev := e.next(t, stream)
				if ev.Type == agentik.EvEnd {
					if ev.ReplyTo != second || ev.Reason != agentik.EndInterrupted {
						t.Fatalf("first end: %+v", ev)
					}
					break
				}
			}
			gate.Release()
			for {
				ev := e.next(t, stream)
				if ev.Type == agentik.EvEnd {
					if ev.ReplyTo != first.MessageID || ev.Reason != agentik.EndCompleted {
						t.Fatalf("the other turn: %+v", ev)
					}
					break
				}
			}
			if got := types(e.journal("alice", info.ID)); got != "user_message,user_message,assistant_message" {
				t.Fatalf("journal %s", got)
			}
			if n := len(e.llm.Requests()); n != calls+1 {
				t.Fatalf("%d model calls, want %d: the withdrawn turn called the model", n, calls+1)
			}
		})
	}
}

func withToken(p *sdk.CallToolParams, tok any) *sdk.CallToolParams {
	p.SetProgressToken(tok)
	return p
}

// onlyWorking returns the principal's conversation that runs a turn.
func (e *serveEnv) onlyWorking(t *testing.T, principal string) string {
	t.Helper()
	list, err := e.eng.ListConversations(agentik.WithPrincipal(serveCtx(t), principal), agentik.ListRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Conversations {
		if c.Working {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d conversations working", len(ids))
	}
	return ids[0]
}

func (e *serveEnv) events(t *testing.T, principal, id string) agentik.Stream[agentik.Event] {
	t.Helper()
	ctx := agentik.WithPrincipal(serveCtx(t), principal)
	conv, err := e.eng.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conv.Close() })
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func (e *serveEnv) next(t *testing.T, st agentik.Stream[agentik.Event]) agentik.Event {
	t.Helper()
	select {
	case ev, ok := <-st.C():
		if !ok {
			t.Fatalf("event stream ended: %v", st.Err())
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
	}
	panic("unreachable")
}

func (e *serveEnv) waitEnd(t *testing.T, st agentik.Stream[agentik.Event], reason string) agentik.Event {
	t.Helper()
	for {
		if ev := e.next(t, st); ev.Type == agentik.EvEnd {
			if ev.Reason != reason {
				t.Fatalf("turn ended %s, want %s", ev.Reason, reason)
			}
			return ev
		}
	}
}

// TestServeFailedTurnIsToolError: a turn that fails is a tool result with
// isError and the safe message, and the conversation goes on.
func TestServeFailedTurnIsToolError(t *testing.T) {
	e := newServeEnv(t)
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			e.llm.Enqueue(llmtest.ServerError(), llmtest.Text("Recovered."))
			cs := e.connect("tok-alice", v)
			ctx := serveCtx(t)
			res, out := ask(t, ctx, cs, map[string]any{"message": "fail please", "new_conversation": true}, nil)
			if !res.IsError || !strings.Contains(resultText(res), "could not answer") {
				t.Fatalf("result %v %q", res.IsError, resultText(res))
			}
			if want := "The agent could not answer (llm_error): the model call failed"; resultText(res) != want {
				t.Fatalf("error text %q, want %q (the cause stays in the log)", resultText(res), want)
			}
			if out.ConversationID == "" {
				t.Fatal("a failed turn does not say which conversation to continue")
			}
			res, out2 := ask(t, ctx, cs, map[string]any{"message": "again", "conversation_id": out.ConversationID}, nil)
			if res.IsError || out2.Answer != "Recovered." {
				t.Fatalf("after the failure: %v %+v", res.IsError, out2)
			}
			if got := types(e.journal("alice", out.ConversationID)); got != "user_message,error,user_message,assistant_message" {
				t.Fatalf("journal %s", got)
			}
		})
	}
}

// TestServeRefusesBadInput: hostile or wrong arguments are tool errors that
// store nothing.
func TestServeRefusesBadInput(t *testing.T) {
	e := newServeEnv(t)
	cs := e.connect("tok-alice", ProtocolCurrent)
	ctx := serveCtx(t)
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{ToolAsk, map[string]any{}, "message"},
		{ToolAsk, map[string]any{"message": "   "}, "empty"},
		{ToolAsk, map[string]any{"message": 7}, "message"},
		{ToolAsk, map[string]any{"message": "hi", "conversation_id": "../../etc/passwd"}, "not found"},
		{ToolAsk, map[string]any{"message": "hi", "conversation_id": agentik.NewID()}, "not found"},
		{ToolReadConversation, map[string]any{"conversation_id": "nope"}, "not found"},
		{ToolReadConversation, map[string]any{"conversation_id": agentik.NewID(), "limit": 501}, "limit"},
		{ToolReadConversation, map[string]any{"conversation_id": agentik.NewID(), "after": 2, "before": 5}, "not both"},
		{ToolReadConversation, map[string]any{"conversation_id": agentik.NewID(), "after": -1}, "seq"},
		{ToolListConversations, map[string]any{"limit": 1000}, "limit"},
		{ToolListConversations, map[string]any{"cursor": "garbage!"}, "cursor"},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		if !res.IsError || !strings.Contains(resultText(res), tc.want) {
			t.Errorf("%s %v: %v %q, want an error about %s", tc.tool, tc.args, res.IsError, resultText(res), tc.want)
		}
	}
	list, err := e.eng.ListConversations(agentik.WithPrincipal(ctx, "alice"), agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 0 {
		t.Fatalf("refused calls created conversations: %v %v", list.Conversations, err)
	}
	if len(e.llm.Requests()) != 0 {
		t.Fatal("a refused call reached the model")
	}
}

// TestServeListAndRead pages conversations and a transcript.
func TestServeListAndRead(t *testing.T) {
	e := newServeEnv(t)
	ctx := serveCtx(t)
	cs := e.connect("tok-alice", ProtocolCurrent)
	var ids []string
	for _, q := range []string{"alpha", "beta", "gamma"} {
		e.llm.Enqueue(llmtest.Text("answer to " + q))
		_, out := ask(t, ctx, cs, map[string]any{"message": q}, nil)
		ids = append(ids, out.ConversationID)
	}
	call := func(tool string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %q", tool, err, resultText(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
		// Clients that read only text get the same JSON.
		if !json.Valid([]byte(resultText(res))) {
			t.Fatalf("%s text is not the JSON: %q", tool, resultText(res))
		}
	}
	var p1, p2 ListOutput
	call(ToolListConversations, map[string]any{"limit": 2}, &p1)
	if len(p1.Conversations) != 2 || p1.Next == "" || p1.Conversations[0].ID != ids[2] || p1.Conversations[1].ID != ids[1] {
		t.Fatalf("page 1 %+v", p1)
	}
	if p1.Conversations[0].Title != "gamma" || p1.Conversations[0].CreatedAt == "" {
		t.Fatalf("summary %+v", p1.Conversations[0])
	}
	call(ToolListConversations, map[string]any{"limit": 2, "cursor": p1.Next}, &p2)
	if len(p2.Conversations) != 1 || p2.Next != "" || p2.Conversations[0].ID != ids[0] {
		t.Fatalf("page 2 %+v", p2)
	}
	var r1, r2 ReadOutput
	call(ToolReadConversation, map[string]any{"conversation_id": ids[0], "limit": 1}, &r1)
	if len(r1.Messages) != 1 || !r1.HasMore || r1.Messages[0].Type != agentik.MsgUser || r1.Messages[0].Text != "alpha" || r1.Title != "alpha" {
		t.Fatalf("read page 1 %+v", r1)
	}
	call(ToolReadConversation, map[string]any{"conversation_id": ids[0], "after": r1.Messages[0].Seq}, &r2)
	if len(r2.Messages) != 1 || r2.HasMore || r2.Messages[0].Text != "answer to alpha" || r2.Messages[0].Seq != 2 {
		t.Fatalf("read page 2 %+v", r2)
	}
	var back ReadOutput
	call(ToolReadConversation, map[string]any{"conversation_id": ids[0], "before": 3, "limit": 1}, &back)
	if len(back.Messages) != 1 || back.Messages[0].Seq != 2 {
		t.Fatalf("read before %+v", back)
	}
}

// TestServeAuthAndIsolation: without a valid token nothing gets through;
// another principal's conversations and sessions do not exist for bob.
func TestServeAuthAndIsolation(t *testing.T) {
	e := newServeEnv(t)
	ctx := serveCtx(t)
	for _, v := range protocols {
		for _, tok := range []string{"", "tok-mallory"} {
			if _, err := e.dial(tok, v); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
				t.Errorf("%s with token %q: %v", v, tok, err)
			}
		}
	}
	e.llm.Enqueue(llmtest.Text("secret answer"))
	alice := e.connect("tok-alice", ProtocolPrevious)
	_, out := ask(t, ctx, alice, map[string]any{"message": "alice's secret"}, nil)
	for _, v := range protocols {
		bob := e.connect("tok-bob", v)
		var list ListOutput
		res, err := bob.CallTool(ctx, &sdk.CallToolParams{Name: ToolListConversations, Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &list)
		if res.IsError || len(list.Conversations) != 0 {
			t.Fatalf("bob lists %+v", list)
		}
		for _, call := range []*sdk.CallToolParams{
			{Name: ToolReadConversation, Arguments: map[string]any{"conversation_id": out.ConversationID}},
			{Name: ToolAsk, Arguments: map[string]any{"message": "let me in", "conversation_id": out.ConversationID}},
		} {
			res, err := bob.CallTool(ctx, call)
			if err != nil || !res.IsError || !strings.Contains(resultText(res), "not found") || strings.Contains(resultText(res), "secret") {
				t.Fatalf("bob %s: %v %q", call.Name, err, resultText(res))
			}
		}
	}
	if got := types(e.journal("alice", out.ConversationID)); got != "user_message,assistant_message" {
		t.Fatalf("bob changed alice's conversation: %s", got)
	}
	// Alice's session id is unknown to bob's requests.
	sid := alice.ID()
	if sid == "" {
		t.Fatal("the previous revision opened no session")
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_conversation","arguments":{"conversation_id":"` + out.ConversationID + `"}}}`
	for tok, want := range map[string]int{"tok-bob": http.StatusNotFound, "tok-alice": http.StatusOK} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", ProtocolPrevious)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (tok == "tok-bob" && strings.Contains(string(b), "secret")) {
			t.Fatalf("%s with alice's session: %d %s", tok, resp.StatusCode, b)
		}
	}
}

// TestServeBusyReject: with the reject policy an ask into a conversation
// whose turn runs is a tool error, and nothing is stored.
func TestServeBusyReject(t *testing.T) {
	e := newServeEnv(t, func(o *ServeOptions) { o.IfBusy = agentik.BusyReject })
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(llmtest.Stream().Role().Content("slow ").Pause(gate).Content("answer").Finish("stop").Done())
	prog := newProgressLog()
	cs := e.connect("tok-alice", ProtocolCurrent, withProgress(prog))
	ctx := serveCtx(t)
	first := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(ctx, withToken(&sdk.CallToolParams{Name: ToolAsk, Arguments: map[string]any{"message": "first"}}, "p"))
		first <- res
	}()
	prog.waitFor(t, "slow ")
	conv := e.onlyWorking(t, "alice")
	res, _ := ask(t, ctx, cs, map[string]any{"message": "second", "conversation_id": conv}, nil)
	if !res.IsError || !strings.Contains(resultText(res), "busy") && !strings.Contains(resultText(res), "running") {
		t.Fatalf("ask into a busy conversation: %v %q", res.IsError, resultText(res))
	}
	gate.Release()
	if res := <-first; res == nil || res.IsError || resultText(res) != "slow answer" {
		t.Fatalf("first %+v", res)
	}
	if got := types(e.journal("alice", conv)); got != "user_message,assistant_message" {
		t.Fatalf("journal %s", got)
	}
}

// TestServeDroppedStreamLetsTheTurnFinish: at the previous revisions a
// client whose stream breaks without a cancel does not interrupt the turn;
// the answer stays in the conversation.
func TestServeDroppedStreamLetsTheTurnFinish(t *testing.T) {
	e := newServeEnv(t)
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(llmtest.Stream().Role().Content("part one, ").Pause(gate).Content("part two").Finish("stop").Done())
	cs := e.connect("tok-alice", ProtocolPrevious)
	ctx := serveCtx(t)
	body := `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"ask","arguments":{"message":"go"},"_meta":{"progressToken":"raw"}}}`
	rctx, drop := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", ProtocolPrevious)
	req.Header.Set("Authorization", "Bearer tok-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read up to the first progress notification, then drop the connection.
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "part one") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before progress: %v %q", err, got.String())
		}
	}
	conv := e.onlyWorking(t, "alice")
	st := e.events(t, "alice", conv)
	drop()
	resp.Body.Close()
	gate.Release()
	e.waitEnd(t, st, agentik.EndCompleted)
	msgs := e.journal("alice", conv)
	if types(msgs) != "user_message,assistant_message" || agentik.JoinText(msgs[1].Content) != "part one, part two" {
		t.Fatalf("journal %s %+v", types(msgs), msgs)
	}
}

// TestServeShutdown: after BeginShutdown a new ask is refused (nothing
// stored) and, once no call runs, every session is closed; after Close the
// endpoint answers 503.
func TestServeShutdown(t *testing.T) {
	e := newServeEnv(t)
	cs := e.connect("tok-alice", ProtocolPrevious)
	ctx := serveCtx(t)
	e.h.BeginShutdown()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolAsk, Arguments: map[string]any{"message": "late"}})
	if err == nil && (!res.IsError || !strings.Contains(resultText(res), "shutting down")) {
		t.Fatalf("ask during shutdown: %+v", res)
	}
	e.h.Close(ctx)
	waited := make(chan error, 1)
	go func() { waited <- cs.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the session was not closed")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer tok-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after Close: %d", resp.StatusCode)
	}
	list, _ := e.eng.ListConversations(agentik.WithPrincipal(ctx, "alice"), agentik.ListRequest{})
	if len(list.Conversations) != 0 {
		t.Fatal("a refused ask stored a conversation")
	}
}

// TestServeHostileHTTP: malformed requests get a 4xx from the transport and
// change nothing.
func TestServeHostileHTTP(t *testing.T) {
	e := newServeEnv(t, func(o *ServeOptions) { o.MaxBodyBytes = 1 << 10 })
	ctx := serveCtx(t)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"message":"hi"}}}`
	for _, tc := range []struct {
		name, method, ctype, version, session, body string
		want                                        int
	}{
		{"garbage", "POST", "application/json", ProtocolPrevious, "", `{"jsonrpc":`, http.StatusBadRequest},
		{"garbage current", "POST", "application/json", ProtocolCurrent, "", `{"jsonrpc":`, http.StatusBadRequest},
		{"not JSON", "POST", "text/plain", ProtocolPrevious, "", call, http.StatusUnsupportedMediaType},
		{"too large", "POST", "application/json", ProtocolCurrent, "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"message":"` + strings.Repeat("x", 2<<10) + `"}}}`, http.StatusRequestEntityTooLarge},
		{"unknown session", "POST", "application/json", ProtocolPrevious, "no-such-session", call, http.StatusNotFound},
		{"unknown version", "POST", "application/json", "1999-01-01", "", call, http.StatusBadRequest},
		{"call before initialize", "POST", "application/json", ProtocolPrevious, "", call, http.StatusOK}, // a JSON-RPC error
		{"GET without session", "GET", "", ProtocolPrevious, "", "", http.StatusBadRequest},
		{"PUT", "PUT", "application/json", ProtocolPrevious, "", call, http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequestWithContext(ctx, tc.method, e.url, strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", tc.version)
		if tc.session != "" {
			req.Header.Set("Mcp-Session-Id", tc.session)
		}
		req.Header.Set("Authorization", "Bearer tok-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == http.StatusOK && !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
		}
	}
	list, err := e.eng.ListConversations(agentik.WithPrincipal(ctx, "alice"), agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 0 || len(e.llm.Requests()) != 0 {
		t.Fatalf("hostile requests changed something: %v %v", list.Conversations, err)
	}
}

// TestServeApproval: a turn that parks for approval asks a client that takes
// elicitations (the previous revision with a session) and goes on with its
// answer; any other client gets a tool error saying where to answer, and
// the turn waits for that answer.
func TestServeApproval(t *testing.T) {
	e := newServeEnvWith(t, func(o *engine.Options) {
		p, err := agentik.ParseApprovalPolicy("current_time=ask")
		if err != nil {
			t.Fatal(err)
		}
		o.Approval = p
	})
	ctx := serveCtx(t)
	t.Run("elicitation", func(t *testing.T) {
		for _, answer := range []struct {
			action   string
			approved bool
			want     string
		}{{"accept", true, "It is noon."}, {"accept", false, "Not allowed."}, {"decline", false, "Declined."}} {
			e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text(answer.want))
			var asked []string
			cs := e.connect("tok-alice", ProtocolPrevious, func(o *sdk.ClientOptions) {
				o.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					asked = append(asked, r.Params.Message)
					return &sdk.ElicitResult{Action: answer.action, Content: map[string]any{"approved": answer.approved, "reason": "no clocks"}}, nil
				}
			})
			res, out := ask(t, ctx, cs, map[string]any{"message": "time?", "new_conversation": true}, nil)
			if res.IsError || out.Answer != answer.want || len(asked) != 1 || !strings.Contains(asked[0], "current_time") {
				t.Fatalf("%+v: %v %q, asked %q", answer, res.IsError, resultText(res), asked)
			}
			msgs := e.journal("alice", out.ConversationID)
			if got := types(msgs); got != "user_message,tool_call,tool_result,assistant_message" {
				t.Fatalf("journal %s", got)
			}
			if denied := msgs[2].IsError; denied == answer.approved {
				t.Fatalf("%+v: tool result %+v", answer, msgs[2])
			}
		}
	})
	for _, v := range protocols {
		t.Run(v+"/elsewhere", func(t *testing.T) {
			e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text("Approved elsewhere."))
			cs := e.connect("tok-alice", v) // declares no elicitation
			res, out := ask(t, ctx, cs, map[string]any{"message": "time?", "new_conversation": true}, nil)
			if !res.IsError || !strings.Contains(resultText(res), "cannot answer approvals") || !strings.Contains(resultText(res), "current_time") {
				t.Fatalf("%v %q", res.IsError, resultText(res))
			}
			actx := agentik.WithPrincipal(ctx, "alice")
			conv, err := e.eng.Conversation(actx, out.ConversationID)
			if err != nil {
				t.Fatal(err)
			}
			defer conv.Close()
			st := e.events(t, "alice", out.ConversationID)
			pending, err := conv.Approvals(actx)
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending %v %v", pending, err)
			}
			if err := conv.Resolve(actx, pending[0].CallID, agentik.Resolution{Approved: true}); err != nil {
				t.Fatal(err)
			}
			e.waitEnd(t, st, agentik.EndCompleted)
			var read ReadOutput
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolReadConversation, Arguments: map[string]any{"conversation_id": out.ConversationID}})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r.StructuredContent)
			json.Unmarshal(b, &read)
			if n := len(read.Messages); n != 4 || read.Messages[n-1].Text != "Approved elsewhere." {
				t.Fatalf("read %+v", read)
			}
		})
	}
}
