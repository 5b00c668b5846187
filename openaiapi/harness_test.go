package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/auth"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Tokens of the two principals of every test.
const (
	aliceToken = "tok-alice"
	bobToken   = "tok-bob"
	agentID    = "helper"
)

// echoTool is a tool of the agent's own: it runs inside the turn.
type echoTool struct{}

func (echoTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "echo", Description: "Echo the arguments", Parameters: agentik.RawJSON(`{"type":"object"}`), Source: "builtin"}
}

func (echoTool) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("echo " + string(args))}}, nil
}

// sendMail is a tool the approval policy asks about.
type sendMail struct{}

func (sendMail) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Description: "Send a mail",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"to":{"type":"string"}}}`), Source: "builtin"}
}

func (sendMail) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("sent " + string(args))}}, nil
}

// env is the door on a real listener over the real stack (SQLite file,
// engine, the scripted model), behind the real edge with two principals.
type env struct {
	t     *testing.T
	stack *stacktest.Stack
	llm   *llmtest.Server
	srv   *httptest.Server
	url   string // the door's base URL (…/v1)
}

func newEnv(t *testing.T, opts ...stacktest.Option) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

// newEnvWith is newEnv with the door's options adjusted by door (nil: the
// defaults).
func newEnvWith(t *testing.T, door func(*Options), opts ...stacktest.Option) *env {
	t.Helper()
	st := stacktest.New(t, append([]stacktest.Option{stacktest.Engine(func(o *engine.Options) {
		o.Info.ID = agentID
		o.Tools = tools.NewRegistry(echoTool{}, sendMail{})
		o.Approval = agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}
	})}, opts...)...)
	e := edge.New(edge.Options{Tokens: auth.NewTokens(map[string]string{aliceToken: "alice", bobToken: "bob"})})
	o := Options{Models: func(context.Context) []Model { return []Model{{ID: agentID, Agent: st.Engine}} }, KeepAlive: time.Hour}
	if door != nil {
		door(&o)
	}
	h := NewHandler(o)
	mux := http.NewServeMux()
	Mount(mux, "/v1", h, func(next http.Handler) http.Handler { return e.Guard(next, edge.Route{Refuse: Refuse}) })
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return &env{t: t, stack: st, llm: st.LLM, srv: srv, url: srv.URL + "/v1"}
}

// restart stops the server, its engine and its store, and starts new ones
// on the same database and model: a restarted process, with nothing kept
// in memory.
func (e *env) restart() *env {
	e.t.Helper()
	e.srv.CloseClientConnections()
	e.srv.Close()
	e.stack.Close()
	return newEnv(e.t, stacktest.Path(e.stack.Path), stacktest.LLM(e.llm))
}

// client is openai-go pointed at the door with token.
func (e *env) client(token string) oai.Client {
	return oai.NewClient(option.WithBaseURL(e.url), option.WithAPIKey(token), option.WithMaxRetries(0))
}

// ctx bounds one test's calls: a safety net, never a synchronisation.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// journal is the stored journal of conversation id as principal reads it.
func (e *env) journal(id, principal string) []agentik.Message {
	return stacktest.Journal(e.t, e.stack.Engine, id, principal)
}

// conversations counts principal's conversations.
func (e *env) conversations(principal string) int {
	ctx := agentik.WithPrincipal(e.ctx(), principal)
	list, err := e.stack.Engine.ListConversations(ctx, agentik.ListRequest{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(list.Conversations)
}

// raw posts body to path of the door with token and returns the status
// and the body.
func (e *env) raw(method, path, token, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx(), method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rawError posts body to path with alice's token and reads the error it
// gets in OpenAI's shape: its status, type, code and param ("" for null).
func (e *env) rawError(path, body string) (status int, typ, code, param string) {
	e.t.Helper()
	status, out := e.raw("POST", path, aliceToken, body)
	var b edge.OpenAIErrorBody
	if err := json.Unmarshal([]byte(out), &b); err != nil || b.Error.Message == "" || b.Error.Code == nil {
		e.t.Fatalf("%s: %d %s is not OpenAI's error shape", body, status, out)
	}
	if b.Error.Param != nil {
		param = *b.Error.Param
	}
	return status, b.Error.Type, *b.Error.Code, param
}

// userTexts are the user messages of a model request, in order.
func userTexts(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, m.Text())
		}
	}
	return out
}

// count counts the messages of type typ in a journal.
func count(journal []agentik.Message, typ string) int {
	n := 0
	for _, m := range journal {
		if m.Type == typ {
			n++
		}
	}
	return n
}

// asAPIError finds the SDK's API error in err.
func asAPIError(err error, target **oai.Error) bool { return errors.As(err, target) }
