package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/ws"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const (
	alphaPrompt = "You are Alpha, the first test agent."
	betaPrompt  = "You are Beta, the second test agent."
	carolToken  = "carol-token-0123456789" // limited to alpha
	daveToken   = "dave-token-9876543210"  // every agent
)

// twoAgents starts the binary with a configuration file of two agents,
// each on a scripted model server of its own that answers "<agent>: <the
// user's text>" (so an answer names the model that wrote it), and two
// principals: carol may use alpha only, dave both.
func twoAgents(t *testing.T, extra ...string) (p *proc, llmA, llmB *llmtest.Server, file string) {
	t.Helper()
	llmA, llmB = llmtest.NewServer(), llmtest.NewServer()
	t.Cleanup(llmA.Close)
	t.Cleanup(llmB.Close)
	for name, s := range map[string]*llmtest.Server{"alpha": llmA, "beta": llmB} {
		s.Handle(func(r llmtest.Request) llmtest.Reply {
			return llmtest.Stream().Role().Content(name+": ", r.LastUserText()).Finish("stop").Done()
		})
	}
	dir := t.TempDir()
	file = filepath.Join(dir, "agentik.yaml")
	writeConfig(t, file, llmA.URL(), llmB.URL(), alphaPrompt, betaPrompt, "[\"*\"]")
	env := append([]string{"AGENTIK_CONFIG=" + file, "AGENTIK_LOG_LEVEL=debug", "CAROL_TOKEN=" + carolToken, "DAVE_TOKEN=" + daveToken}, extra...)
	return startProc(t, env...), llmA, llmB, file
}

func writeConfig(t *testing.T, file, urlA, urlB, promptA, promptB, allowB string) {
	t.Helper()
	cfg := fmt.Sprintf(`database: ./agentik.db
auth:
  tokens:
    - {principal: carol, token_env: CAROL_TOKEN, agents: [alpha]}
    - {principal: dave, token_env: DAVE_TOKEN}
agents:
  - id: alpha
    name: Alpha
    description: The first agent
    system_prompt: %q
    model: {base_url: %q, model: model-a}
  - id: beta
    name: Beta
    description: The second agent
    system_prompt: %q
    model: {base_url: %q, model: model-b}
    tools: {builtin: [current_time], allow: %s}
`, promptA, urlA, promptB, urlB, allowB)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// systemPrompt is the system message of the model request that answered text.
func systemPrompt(t *testing.T, s *llmtest.Server, text string) string {
	t.Helper()
	for _, r := range s.Requests() {
		if r.LastUserText() != text {
			continue
		}
		for _, m := range r.Messages {
			if m.Role == "system" {
				var s string
				json.Unmarshal(m.Content, &s)
				return s
			}
		}
	}
	return ""
}

// facade is one front door, driven for one agent (at its base path) by one
// principal: say sends text in a new conversation and returns the answer,
// or the error code of a refusal; attach tries to use the conversation id
// of another agent and returns the error code.
type facade struct {
	name   string
	say    func(t *testing.T, p *proc, base, token, text string) (answer, code string)
	attach func(t *testing.T, p *proc, base, token, convID string) (code string)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var facades = []facade{
	{
		name: "native",
		say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
			ctx := testCtx(t)
			c := httpapi.NewClient(p.url+base, httpapi.WithToken(token))
			info, err := c.CreateConversation(ctx, agentik.CreateRequest{})
			if err != nil {
				return "", agentik.ErrorCode(err)
			}
			conv, err := c.Conversation(ctx, info.ID)
			if err != nil {
				return "", agentik.ErrorCode(err)
			}
			defer conv.Close()
			s, err := conv.Events(ctx, 0)
			if err != nil {
				return "", agentik.ErrorCode(err)
			}
			defer s.Close()
			if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}}); err != nil {
				return "", agentik.ErrorCode(err)
			}
			for ev := range s.C() {
				if ev.Type == agentik.EvAssistantMessage && ev.Message != nil {
					return agentik.JoinText(ev.Message.Content), ""
				}
			}
			t.Fatalf("native: the stream ended without an answer: %v", s.Err())
			return "", ""
		},
		attach: func(t *testing.T, p *proc, base, token, id string) string {
			ctx := testCtx(t)
			c := httpapi.NewClient(p.url+base, httpapi.WithToken(token))
			codes := map[string]bool{}
			_, err := c.Conversation(ctx, id)
			codes[agentik.ErrorCode(err)] = true
			err = c.DeleteConversation(ctx, id)
			codes[agentik.ErrorCode(err)] = true
			_, err = c.RenameConversation(ctx, id, "taken")
			codes[agentik.ErrorCode(err)] = true
			for _, path := range []string{"/conversations/" + id + "/messages", "/conversations/" + id + "/events?after=0"} {
				status, _ := get(t, p.url+base+path, token)
				codes[fmt.Sprint(status)] = true
			}
			if len(codes) != 2 || !codes[agentik.ENotFound] || !codes["404"] {
				return fmt.Sprint(codes)
			}
			return agentik.ENotFound
		},
	},
	{
		name: "agui",
		say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
			in := map[string]any{"threadId": "thread-" + agentik.NewID(), "runId": "r1",
				"messages": []map[string]any{{"id": "m-" + agentik.NewID(), "role": "user", "content": text}}}
			status, evs, body := aguiPost(t, p.url+base+"/agui", token, in)
			if status != 200 {
				return "", errCode(body)
			}
			var b strings.Builder
			for _, ev := range evs {
				if ev["type"] == "TEXT_MESSAGE_CONTENT" {
					b.WriteString(ev["delta"].(string))
				}
				if ev["type"] == "RUN_ERROR" {
					return "", fmt.Sprint(ev["code"])
				}
			}
			return b.String(), ""
		},
		attach: func(t *testing.T, p *proc, base, token, id string) string {
			// A thread id of another agent's conversation gives a thread of
			// the caller's own on this agent: the other one's history is
			// not in its snapshot.
			status, evs, body := aguiPost(t, p.url+base+"/agui", token, map[string]any{"threadId": id, "runId": "r", "messages": []any{}})
			if status != 200 {
				return "status " + fmt.Sprint(status) + " " + body
			}
			for _, ev := range evs {
				if ev["type"] == "MESSAGES_SNAPSHOT" {
					if msgs, _ := ev["messages"].([]any); len(msgs) == 0 {
						return agentik.ENotFound
					}
					return fmt.Sprintf("snapshot of another agent's thread: %v", ev["messages"])
				}
			}
			return "no snapshot"
		},
	},
	{
		name: "a2a",
		say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
			status, body := a2aPost(t, p.url+base+"/a2a", token, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+agentik.NewID()+`","role":"ROLE_USER","parts":[{"text":`+quote(text)+`}]}}}`)
			var resp struct {
				Result json.RawMessage
				Error  *struct{ Code int }
			}
			json.Unmarshal([]byte(body), &resp)
			if status == 404 {
				return "", agentik.ENotFound
			}
			if status != 200 || resp.Error != nil {
				return "", fmt.Sprintf("status %d %s", status, body)
			}
			// The answer is the task's last agent message: find its text.
			return lastA2AText(string(resp.Result)), ""
		},
		attach: func(t *testing.T, p *proc, base, token, id string) string {
			status, body := a2aPost(t, p.url+base+"/a2a", token, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+id+`:1"}}`)
			if status == 200 && strings.Contains(body, "-32001") {
				return agentik.ENotFound
			}
			return fmt.Sprintf("status %d %s", status, body)
		},
	},
	{
		name: "ws",
		say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
			ctx := testCtx(t)
			c, err := ws.Dial(ctx, wsBase(p)+base+"/ws", &ws.DialOptions{Token: token})
			if err != nil {
				return "", wsCode(err)
			}
			defer c.Close()
			if err := c.Send(ctx, text); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for m := range c.Messages() {
				switch m := m.(type) {
				case *ws.TextChunk:
					b.WriteString(m.Text)
				case *ws.End:
					return b.String(), ""
				case *ws.Error:
					return "", m.Code
				}
			}
			return "", "closed"
		},
		attach: func(t *testing.T, p *proc, base, token, id string) string {
			_, err := ws.Dial(testCtx(t), wsBase(p)+base+"/ws", &ws.DialOptions{Token: token, ConversationID: id})
			return wsCode(err)
		},
	},
	{
		name: "mcp",
		say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
			client := sdk.NewClient(&sdk.Implementation{Name: "agents-test", Version: "1"}, nil)
			tr := &sdk.StreamableClientTransport{Endpoint: p.url + base + "/mcp", HTTPClient: &http.Client{Transport: tokenTransport{token}}, MaxRetries: -1}
			cs, err := client.Connect(testCtx(t), tr, nil)
			if err != nil {
				if strings.Contains(err.Error(), "404") || strings.Contains(strings.ToLower(err.Error()), "not found") {
					return "", agentik.ENotFound
				}
				return "", err.Error()
			}
			defer cs.Close()
			res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"message": text}})
			if err != nil {
				return "", err.Error()
			}
			return toolText(res), ""
		},
		attach: func(t *testing.T, p *proc, base, token, id string) string {
			client := sdk.NewClient(&sdk.Implementation{Name: "agents-test", Version: "1"}, nil)
			tr := &sdk.StreamableClientTransport{Endpoint: p.url + base + "/mcp", HTTPClient: &http.Client{Transport: tokenTransport{token}}, MaxRetries: -1}
			cs, err := client.Connect(testCtx(t), tr, nil)
			if err != nil {
				return err.Error()
			}
			defer cs.Close()
			res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "read_conversation", Arguments: map[string]any{"conversation_id": id}})
			if err != nil {
				return err.Error()
			}
			if res.IsError && strings.Contains(strings.ToLower(toolText(res)), "not found") {
				return agentik.ENotFound
			}
			return "read: " + toolText(res)
		},
	},
	{
		// The OpenAI-compatible door, through openai-go: per agent, and at
		// /v1 (base "") with model = the default agent.
		name: "openai",
		say: func(t *testing.T, p *proc, base, token, text string) (string, string) {
			c := oai.NewClient(option.WithBaseURL(p.url+base+"/v1"), option.WithAPIKey(token), option.WithMaxRetries(0))
			res, err := c.Chat.Completions.New(testCtx(t), oai.ChatCompletionNewParams{Model: "alpha",
				Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage(text)}})
			if err != nil {
				return "", openAICode(err)
			}
			return res.Choices[0].Message.Content, ""
		},
		attach: func(t *testing.T, p *proc, base, token, id string) string {
			c := oai.NewClient(option.WithBaseURL(p.url+base+"/v1"), option.WithAPIKey(token), option.WithMaxRetries(0))
			if _, err := c.Conversations.Get(testCtx(t), id); err != nil {
				return openAICode(err)
			}
			return "read"
		},
	},
}

// openAICode is the core code of an OpenAI error: not_found for a 404.
func openAICode(err error) string {
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		return edge.CodeOf(apiErr.StatusCode)
	}
	return err.Error()
}

// TestAgentsEveryFacade: every facade × two agents × two principals. The
// right agent answers, with its own model and prompt; an agent a principal
// may not use is 404 on every facade; a conversation of one agent is not
// found through another's facades; GET /agents lists exactly the caller's
// agents. The default agent also answers at today's paths.
func TestAgentsEveryFacade(t *testing.T) {
	// Every facade × agent × principal makes conversations and messages of
	// one principal across both agents, which a per-principal limit counts
	// together: the limits are off here (TestLimitsCountPerPrincipalAcrossAgents
	// is theirs).
	p, llmA, llmB, _ := twoAgents(t, "AGENTIK_CONVERSATIONS_PER_MINUTE=0", "AGENTIK_MESSAGES_PER_MINUTE=0")
	models := map[string]*llmtest.Server{"alpha": llmA, "beta": llmB}
	prompts := map[string]string{"alpha": alphaPrompt, "beta": betaPrompt}
	principals := []struct {
		name, token string
		may         map[string]bool
	}{{"carol", carolToken, map[string]bool{"alpha": true}}, {"dave", daveToken, map[string]bool{"alpha": true, "beta": true}}}
	bases := []struct{ agent, base string }{{"alpha", "/agents/alpha"}, {"beta", "/agents/beta"}}

	// One conversation per agent, of dave, to attach to from the other.
	daveConv := map[string]string{}
	for _, b := range bases {
		c := httpapi.NewClient(p.url+b.base, httpapi.WithToken(daveToken))
		info, err := c.CreateConversation(testCtx(t), agentik.CreateRequest{Title: b.agent + "'s"})
		if err != nil {
			t.Fatal(err)
		}
		daveConv[b.agent] = info.ID
	}

	for _, f := range facades {
		for _, b := range bases {
			for _, pr := range principals {
				t.Run(f.name+"/"+b.agent+"/"+pr.name, func(t *testing.T) {
					text := fmt.Sprintf("%s via %s as %s %s", b.agent, f.name, pr.name, agentik.NewID())
					answer, code := f.say(t, p, b.base, pr.token, text)
					if !pr.may[b.agent] {
						if code != agentik.ENotFound {
							t.Fatalf("an agent the principal may not use: answer %q, code %q; want not_found", answer, code)
						}
						return
					}
					if code != "" || !strings.Contains(answer, b.agent+": "+text) {
						t.Fatalf("answer %q, code %q; want the %s model's echo", answer, code, b.agent)
					}
					if got := systemPrompt(t, models[b.agent], text); got != prompts[b.agent] {
						t.Fatalf("system prompt %q, want %q", got, prompts[b.agent])
					}
					for other, s := range models {
						if other != b.agent && systemPrompt(t, s, text) != "" {
							t.Fatalf("the %s model was asked too", other)
						}
					}
					// A conversation of the other agent (a new one: a broken
					// check could delete it) is not found here.
					other := map[string]string{"alpha": "beta", "beta": "alpha"}[b.agent]
					id := exchange(t, p, "/agents/"+other, daveToken, "for "+other+" only")
					if code := f.attach(t, p, b.base, daveToken, id); code != agentik.ENotFound {
						t.Fatalf("the other agent's conversation through %s of %s: %s", f.name, b.agent, code)
					}
				})
			}
		}
	}

	// The default agent at today's paths.
	t.Run("default paths", func(t *testing.T) {
		for _, f := range facades {
			base := map[string]string{"native": "/agentik", "agui": "", "a2a": "", "ws": "/agentik", "mcp": "", "openai": "", "langgraph": ""}[f.name]
			text := "default via " + f.name + " " + agentik.NewID()
			answer, code := f.say(t, p, base, carolToken, text)
			if code != "" || !strings.Contains(answer, "alpha: "+text) {
				t.Errorf("%s at today's path: answer %q, code %q", f.name, answer, code)
			}
		}
		// Today's paths and /agents/alpha are one agent: the same conversations.
		c := httpapi.NewClient(p.url+"/agentik", httpapi.WithToken(daveToken))
		if _, err := c.Conversation(testCtx(t), daveConv["alpha"]); err != nil {
			t.Errorf("alpha's conversation at /agentik: %v", err)
		}
		if _, err := c.Conversation(testCtx(t), daveConv["beta"]); !agentik.IsNotFound(err) {
			t.Errorf("beta's conversation at /agentik: %v", err)
		}
	})

	t.Run("GET /agents", func(t *testing.T) {
		entry := func(id, name, desc, model string, def bool) string {
			b := "/agents/" + id
			return fmt.Sprintf(`{"id":%q,"name":%q,"description":%q,"model":%q,"default":%t,"endpoints":{"agentik":%q,"agui":%q,"a2a":%q,"agent_card":%q,"langgraph":%q,"ws":%q,"mcp":%q,"openai":%q}}`,
				id, name, desc, model, def, b, b+"/agui", b+"/a2a", b+"/.well-known/agent-card.json", b+"/langgraph", b+"/ws", b+"/mcp", b+"/v1")
		}
		alpha := entry("alpha", "Alpha", "The first agent", "model-a", true)
		beta := entry("beta", "Beta", "The second agent", "model-b", false)
		for _, tc := range []struct{ token, want string }{
			{carolToken, `{"agents":[` + alpha + `]}`},
			{daveToken, `{"agents":[` + alpha + `,` + beta + `]}`},
		} {
			status, body := get(t, p.url+"/agents", tc.token)
			if status != 200 || strings.TrimSpace(body) != tc.want {
				t.Errorf("GET /agents: %d\n got %s\nwant %s", status, body, tc.want)
			}
		}
		if status, _ := get(t, p.url+"/agents", ""); status != 401 {
			t.Errorf("GET /agents without a token: %d", status)
		}
		if status, body := get(t, p.url+"/agents/nobody/conversations", daveToken); status != 404 || errCode(body) != agentik.ENotFound {
			t.Errorf("an unknown agent: %d %s", status, body)
		}
	})

	// Each agent's card names its own endpoint.
	t.Run("cards", func(t *testing.T) {
		for _, b := range bases {
			status, body := get(t, p.url+b.base+"/.well-known/agent-card.json", "")
			if status != 200 || !strings.Contains(body, b.base+`/a2a"`) || !strings.Contains(body, `"name":"`+map[string]string{"alpha": "Alpha", "beta": "Beta"}[b.agent]+`"`) {
				t.Errorf("card of %s: %d %s", b.agent, status, body)
			}
		}
	})
}

// TestAgentsSIGHUP: a SIGHUP applies the new prompts, tool lists and tokens
// of the file without a restart, and says what else would need one.
func TestAgentsSIGHUP(t *testing.T) {
	p, llmA, llmB, file := twoAgents(t)
	ask := func(agent, token, text string) (string, string) {
		return facades[0].say(t, p, "/agents/"+agent, token, text)
	}
	if _, code := ask("beta", daveToken, "before"); code != "" {
		t.Fatal(code)
	}
	if status, body := get(t, p.url+"/agents/beta/tools", daveToken); status != 200 || !strings.Contains(body, "current_time") {
		t.Fatalf("tools before: %d %s", status, body)
	}
	// New prompts, beta's tools denied, carol's token moved to a new one
	// (and her limit lifted), and a model change that needs a restart.
	writeConfig(t, file, llmA.URL(), llmB.URL(), "Alpha, reloaded.", "Beta, reloaded.", "[\"none_*\"]")
	cfg, _ := os.ReadFile(file)
	cfg = []byte(strings.Replace(string(cfg), "{principal: carol, token_env: CAROL_TOKEN, agents: [alpha]}", "{principal: carol, token_file: carol.token}", 1))
	cfg = []byte(strings.Replace(string(cfg), "model: model-b}", "model: model-b2}", 1))
	os.WriteFile(file, cfg, 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(file), "carol.token"), []byte("carol-new-token-123\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "configuration reloaded", 1)
	if !strings.Contains(p.log(), "need a restart") || !strings.Contains(p.log(), "agent beta") {
		t.Errorf("the model change is not reported as needing a restart:\n%s", p.log())
	}

	for agent, s := range map[string]*llmtest.Server{"alpha": llmA, "beta": llmB} {
		text := "after " + agentik.NewID()
		if _, code := ask(agent, daveToken, text); code != "" {
			t.Fatal(code)
		}
		want := map[string]string{"alpha": "Alpha, reloaded.", "beta": "Beta, reloaded."}[agent]
		if got := systemPrompt(t, s, text); got != want {
			t.Errorf("%s after SIGHUP: system prompt %q, want %q", agent, got, want)
		}
	}
	if status, body := get(t, p.url+"/agents/beta/tools", daveToken); status != 200 || strings.Contains(body, "current_time") {
		t.Errorf("tools after the deny: %d %s", status, body)
	}
	if _, code := ask("beta", carolToken, "old token"); code != agentik.EUnauthorized {
		t.Errorf("carol's old token after SIGHUP: %q", code)
	}
	if _, code := ask("beta", "carol-new-token-123", "new token"); code != "" {
		t.Errorf("carol's new token, no longer limited: %q", code)
	}

	// A file that no longer loads changes nothing.
	os.WriteFile(file, []byte("agents: [{id: Bad Id}]\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "configuration reload failed", 1)
	if _, code := ask("beta", "carol-new-token-123", "still"); code != "" {
		t.Errorf("after a failed reload: %q", code)
	}
}

// TestMigrationFromBeforeAgents: a database written by agentik before
// agents existed (testdata/pre-agents.db, see pre-agents.md) opens under a
// configuration of two agents; its conversations are the default agent's,
// at today's paths and at /agents/{default}, and not the other agent's.
func TestMigrationFromBeforeAgents(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "pre-agents.db"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agentik.db"), b, 0o600)
	file := filepath.Join(dir, "agentik.yaml")
	os.WriteFile(file, []byte(`database: ./agentik.db
auth:
  tokens:
    - {principal: alice, token_env: ALICE_TOKEN}
agents:
  - {id: support, model: {backend: demo}}
  - {id: coder, model: {backend: demo}}
`), 0o600)
	p := startProc(t, "AGENTIK_CONFIG="+file, "ALICE_TOKEN=alice-token-0123456789")
	const aliceConv = "01a231d2-9a9a-72ce-ba8c-7e787fb08b4c"
	for _, base := range []string{"/agentik", "/agents/support"} {
		c := httpapi.NewClient(p.url+base, httpapi.WithToken("alice-token-0123456789"))
		list, err := c.ListConversations(testCtx(t), agentik.ListRequest{})
		if err != nil || len(list.Conversations) != 1 || list.Conversations[0].ID != aliceConv || list.Conversations[0].Title != "alice before agents" {
			t.Fatalf("%s: %+v %v", base, list, err)
		}
		conv, err := c.Conversation(testCtx(t), aliceConv)
		if err != nil {
			t.Fatal(err)
		}
		page, err := conv.Messages(testCtx(t), agentik.MessagesRequest{})
		if err != nil || len(page.Messages) != 2 || agentik.JoinText(page.Messages[0].Content) != "hello from the old days" {
			t.Fatalf("%s: journal %+v %v", base, page, err)
		}
		conv.Close()
	}
	c := httpapi.NewClient(p.url+"/agents/coder", httpapi.WithToken("alice-token-0123456789"))
	if list, err := c.ListConversations(testCtx(t), agentik.ListRequest{}); err != nil || len(list.Conversations) != 0 {
		t.Fatalf("coder lists %+v %v", list, err)
	}
	if _, err := c.Conversation(testCtx(t), aliceConv); !agentik.IsNotFound(err) {
		t.Fatalf("coder sees the default agent's conversation: %v", err)
	}
	// The agent events of before are the default agent's too.
	status, body := getStream(t, p.url+"/agents/support/events?after=0", "alice-token-0123456789", "alice before agents")
	if status != 200 {
		t.Fatalf("support's agent events: %d %s", status, body)
	}
}

// TestConfigCommands: agentik config check and example through the binary.
func TestConfigCommands(t *testing.T) {
	out, _, code := runCLI(t, nil, "config", "example")
	if code != exitOK || !strings.Contains(out, "agents:") {
		t.Fatalf("example: %d %s", code, out)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	os.WriteFile(file, []byte("agents:\n  - id: a\n    modle: {}\n  - id: a\n"), 0o600)
	_, stderr, code := runCLI(t, nil, "config", "check", file)
	if code != exitConfig || !strings.Contains(stderr, file+":3: agents[0].modle: unknown key (did you mean model?)") ||
		!strings.Contains(stderr, file+":4: agents[1].id: \"a\" is also the id of agents[0]") {
		t.Fatalf("check of a bad file: %d\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, nil, "serve", "--config", file)
	if code != exitConfig || !strings.Contains(stderr, "unknown key") {
		t.Fatalf("serve with a bad file: %d\n%s", code, stderr)
	}
	os.WriteFile(file, []byte("agents:\n  - id: a\n  - id: b\n"), 0o600)
	out, _, code = runCLI(t, nil, "config", "check", file)
	if code != exitOK || !strings.Contains(out, "ok, 2 agents: a, b (default a)") {
		t.Fatalf("check of a good file: %d %s", code, out)
	}
}

// TestChatAgentFlag: the terminal client and the conversation commands
// take --agent, in process and with --url.
func TestChatAgentFlag(t *testing.T) {
	p, _, _, file := twoAgents(t)
	env := []string{"AGENTIK_TOKEN=" + daveToken}
	out, stderr, code := runCLIWithInput(t, env, "hello beta\n", "chat", "--url", p.url, "--agent", "beta", "--plain")
	if code != exitOK || !strings.Contains(out, "beta: hello beta") {
		t.Fatalf("chat --agent beta: %d\n%s\n%s", code, out, stderr)
	}
	out, _, code = runCLI(t, env, "conversations", "list", "--url", p.url, "--agent", "beta", "--json")
	if code != exitOK || !strings.Contains(out, `"conversations"`) {
		t.Fatalf("conversations list --agent beta: %d %s", code, out)
	}
	var list struct{ Conversations []agentik.ConversationInfo }
	json.Unmarshal([]byte(out), &list)
	if len(list.Conversations) != 1 {
		t.Fatalf("beta's conversations: %s", out)
	}
	out, _, code = runCLI(t, env, "conversations", "list", "--url", p.url, "--agent", "alpha", "--json")
	if code != exitOK || strings.Contains(out, list.Conversations[0].ID) {
		t.Fatalf("alpha lists beta's conversation: %s", out)
	}
	// In process, on the file's database once the server is gone: the
	// local caller is the anonymous principal, its conversations its own.
	p.cmd.Process.Signal(os.Interrupt)
	<-p.done
	envLocal := []string{"AGENTIK_CONFIG=" + file, "CAROL_TOKEN=" + carolToken, "DAVE_TOKEN=" + daveToken}
	out, stderr, code = runCLIWithInput(t, envLocal, "hello local beta\n", "chat", "--agent", "beta", "--plain")
	if code != exitOK || !strings.Contains(out, "beta: hello local beta") {
		t.Fatalf("in-process chat --agent beta: %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = runCLI(t, envLocal, "conversations", "list", "--agent", "beta", "--json")
	json.Unmarshal([]byte(out), &list)
	if code != exitOK || len(list.Conversations) != 1 {
		t.Fatalf("in-process conversations list --agent beta: %d %s %s", code, out, stderr)
	}
	out, _, code = runCLI(t, envLocal, "conversations", "list", "--json")
	if code != exitOK || strings.Contains(out, list.Conversations[0].ID) {
		t.Fatalf("in-process list of the default agent shows beta's: %s", out)
	}
	_, stderr, code = runCLI(t, envLocal, "conversations", "list", "--agent", "nobody")
	if code == exitOK || !strings.Contains(stderr, "nobody") {
		t.Fatalf("an unknown agent: %d %s", code, stderr)
	}
}

// ---- helpers ----

// exchange makes a conversation with one exchange on the agent at base and
// returns its id.
func exchange(t *testing.T, p *proc, base, token, text string) string {
	t.Helper()
	ctx := testCtx(t)
	c := httpapi.NewClient(p.url+base, httpapi.WithToken(token))
	info, err := c.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	s, err := conv.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}}); err != nil {
		t.Fatal(err)
	}
	for ev := range s.C() {
		if ev.Type == agentik.EvEnd {
			return info.ID
		}
	}
	t.Fatalf("no answer in %s: %v", info.ID, s.Err())
	return ""
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func wsBase(p *proc) string { return "ws" + strings.TrimPrefix(p.url, "http") }

func errCode(body string) string {
	var v struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal([]byte(body), &v)
	return v.Error.Code
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp.StatusCode, "(event stream)"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// getStream reads an event stream until want appears in it.
func getStream(t *testing.T, url, token, want string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(b.String(), want) {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before %q: %v\n%s", want, err, b.String())
		}
	}
	return resp.StatusCode, b.String()
}

func aguiPost(t *testing.T, url, token string, in map[string]any) (int, []map[string]any, string) {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(testCtx(t), "POST", url, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var evs []map[string]any
	for line := range strings.Lines(string(body)) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
			var ev map[string]any
			json.Unmarshal([]byte(strings.TrimSpace(data)), &ev)
			evs = append(evs, ev)
		}
	}
	return resp.StatusCode, evs, string(body)
}

func a2aPost(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lastA2AText finds the text parts of a SendMessage result (a task or a
// message, of either protocol version).
func lastA2AText(result string) string {
	var v any
	json.Unmarshal([]byte(result), &v)
	var texts []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				texts = append(texts, s)
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return strings.Join(texts, " | ")
}
