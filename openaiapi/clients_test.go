package openaiapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

// clientsDir holds the pinned official npm clients (package.json and
// package-lock.json) and their driver.
const clientsDir = "testdata/clients"

// clientModel answers by question, so that the order of the driver's
// requests does not matter. The story stops half way at story until the
// driver has dropped its stream.
func clientModel(story *llmtest.Gate) func(r llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		last := r.Messages[len(r.Messages)-1]
		q := r.LastUserText()
		tool := last.Role == "tool"
		switch {
		case strings.HasPrefix(q, "Capital?"):
			return llmtest.Text("Paris.")
		case strings.HasPrefix(q, "Population?"):
			return llmtest.Stream().Role().Content("Two ", "million.").Finish("stop").Usage(20, 2).Done()
		case strings.HasPrefix(q, "Pick a color.") && tool:
			return llmtest.Text("You picked " + last.Text() + ".")
		case strings.HasPrefix(q, "Pick a color."):
			return llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`))
		case strings.HasPrefix(q, "Mail bob.") && tool && strings.HasSuffix(last.Text(), agentik.DeniedText("")):
			return llmtest.Text("Not sent.")
		case strings.HasPrefix(q, "Mail bob.") && tool:
			return llmtest.Text("Mail sent.")
		case strings.HasPrefix(q, "Mail bob."):
			return llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`))
		case strings.HasPrefix(q, "Use echo.") && tool:
			return llmtest.Text("Echoed.")
		case strings.HasPrefix(q, "Use echo."):
			return llmtest.ToolCalls(llmtest.Call("echo", `{"x":1}`))
		case strings.HasPrefix(q, "Tell a story."):
			return llmtest.Stream().Role().Content("Once ", "upon ").Pause(story).Content("a ", "time.").Finish("stop").Done()
		case strings.HasPrefix(q, "Count forever."):
			return llmtest.Stream().Role().Content("Counting ").Hang()
		case strings.HasPrefix(q, "Vercel chat."):
			return llmtest.Text("Hello from chat.")
		case strings.HasPrefix(q, "Vercel responses."):
			return llmtest.Text("Hello from responses.")
		}
		return llmtest.Text("unscripted question: " + q)
	}
}

// TestOfficialClients: the openai npm SDK and the Vercel AI SDK, pinned by
// their lock file, against the door on a real listener: both APIs,
// streaming and not, usage, the history seen once, client tools, the
// agent's tools as mcp_call, approvals on both APIs, a stream resumed with
// starting_after after the client dropped it, background and cancel,
// OpenAI-shaped errors, isolation between principals, streamText with the
// chat and the responses providers.
func TestOfficialClients(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is required (Node 20): %v", err)
	}
	testenv.NPM(t, clientsDir)
	e := newEnv(t)
	story := llmtest.NewGate()
	defer story.Release()
	e.llm.Handle(clientModel(story))
	cmd := exec.CommandContext(e.ctx(), node, "drive.mjs", "chat", "chatTools", "responses", "responsesTools", "resume", "background", "errors", "vercel")
	cmd.Dir = clientsDir
	cmd.Env = append(os.Environ(), "BASE_URL="+e.url, "TOKEN="+aliceToken, "OTHER_TOKEN="+bobToken, "MODEL="+agentID)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := map[string]map[string]any{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "DROPPED":
			story.Release()
		case strings.HasPrefix(line, "RESULT "):
			name, js, _ := strings.Cut(strings.TrimPrefix(line, "RESULT "), " ")
			var v map[string]any
			if err := json.Unmarshal([]byte(js), &v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			results[name] = v
		default:
			t.Log(line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	checkClients(t, e, results)
}

// want holds the expected JSON of each scenario's result, field by field.
var want = map[string]map[string]string{
	"chat": {"first": `"Paris."`, "usage": `{"completion_tokens":1,"prompt_tokens":10,"total_tokens":11}`, "second": `"Two million."`,
		"role": `"assistant"`, "finish": `"stop"`, "streamUsage": `{"completion_tokens":2,"prompt_tokens":20,"total_tokens":22}`},
	"chat_tools": {"finish": `"tool_calls"`, "call": `{"arguments":"{\"hint\":\"warm\"}","name":"pick_color"}`, "answer": `"You picked green."`,
		"approved": `"Mail sent."`, "stale": `{"code":"invalid_request_error","param":"messages[1].tool_call_id","status":400,"type":"invalid_request_error"}`},
	"responses": {"first": `"Paris."`, "status": `"completed"`, "second": `"Two million."`, "increasing": `true`,
		"firstTypes": `["response.created","response.in_progress"]`, "lastType": `"response.completed"`, "completedText": `"Two million."`,
		"retrieved": `"Paris."`, "sameConversation": `true`, "items": `["user","assistant","user","assistant"]`,
		"inputItems": `[["message","user","Population?"]]`},
	"responses_tools": {"call": `{"arguments":"{\"hint\":\"warm\"}","name":"pick_color"}`, "answer": `"You picked blue."`,
		"mcp": `{"name":"echo","output":"echo {\"x\":1}","status":"completed"}`, "echoAnswer": `"Echoed."`,
		"request": `{"arguments":"{\"to\":\"bob\"}","name":"send_mail"}`, "approved": `"Mail sent."`,
		"denied": `"Not sent."`, "deniedCall": `{"error":"denied by the user","output":null,"status":"failed"}`},
	"resume":     {"text": `"Once upon a time."`, "increasing": `true`, "status": `"completed"`},
	"background": {"queued": `"queued"`, "polled": `"in_progress"`, "cancelled": `"cancelled"`, "after": `"cancelled"`, "text": `"Counting "`},
	"errors": {
		"n":                  `{"code":"invalid_request_error","param":"n","status":422,"type":"invalid_request_error"}`,
		"format":             `{"code":"invalid_request_error","param":"response_format","status":422,"type":"invalid_request_error"}`,
		"model":              `{"code":"model_not_found","param":"model","status":404,"type":"invalid_request_error"}`,
		"auth":               `{"code":"invalid_api_key","param":null,"status":401,"type":"authentication_error"}`,
		"other_retrieve":     `{"code":"not_found","param":null,"status":404,"type":"invalid_request_error"}`,
		"other_previous":     `{"code":"not_found","param":"previous_response_id","status":404,"type":"invalid_request_error"}`,
		"other_conversation": `{"code":"not_found","param":null,"status":404,"type":"invalid_request_error"}`,
		"models":             `[["helper","model","agentik"]]`},
	"vercel": {"chat": `"Hello from chat."`, "responses": `"Hello from responses."`, "chatFinish": `"stop"`, "responsesFinish": `"stop"`,
		"chatTokens": `10`, "responsesTokens": `10`},
}

func checkClients(t *testing.T, e *env, results map[string]map[string]any) {
	t.Helper()
	for name, fields := range want {
		got, ok := results[name]
		if !ok {
			t.Errorf("%s: no result", name)
			continue
		}
		for f, w := range fields {
			b, _ := json.Marshal(got[f])
			if string(b) != w {
				t.Errorf("%s.%s = %s, want %s", name, f, b, w)
			}
		}
	}
	sampled := false
	defer func() {
		if !sampled {
			t.Error("no model call had the chat's temperature and seed")
		}
	}()
	if c, _ := results["chat"]["conversation"].(string); c == "" {
		t.Error("chat: no X-Agentik-Conversation-Id")
	}
	if a, _ := results["chat_tools"]["asked"].(string); !strings.Contains(a, "send_mail") {
		t.Errorf("chat_tools: the approval completion %q", a)
	}
	// Each second question's model request holds the first exchange once;
	// the chat's sampling parameters reach the model for their turn only.
	for _, r := range e.llm.Requests() {
		if q := r.LastUserText(); strings.HasPrefix(q, "Capital?") && len(userTexts(r)) == 1 && r.Temperature != nil {
			if *r.Temperature != 0.3 || r.Seed == nil || *r.Seed != 7 {
				t.Errorf("the chat's model call: temperature %v seed %v", *r.Temperature, r.Seed)
			}
			sampled = true
		}
		if q := r.LastUserText(); strings.HasPrefix(q, "Population?") && r.Temperature != nil {
			t.Errorf("the next turn's model call has the first's temperature %v", *r.Temperature)
		}
		if q := r.LastUserText(); strings.HasPrefix(q, "Population?") {
			if users := userTexts(r); len(users) != 2 || !strings.HasPrefix(users[0], "Capital?") {
				t.Errorf("the model saw %q", users)
			}
		}
	}
	if e.conversations("bob") != 0 {
		t.Error("bob's refused requests made a conversation")
	}
}
