package agui

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// echoTool is a deterministic server tool: it answers with its arguments.
type echoTool struct{}

func (echoTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "echo", Description: "Echo the arguments", Parameters: agentik.RawJSON(`{"type":"object"}`), Source: "builtin"}
}

func (echoTool) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("echo " + string(args))}}, nil
}

func withEcho(o *engine.Options, _ *Options) { o.Tools = tools.NewRegistry(echoTool{}) }

var pickColor = map[string]any{"name": "pick_color", "description": "Ask the user to pick a color",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"hint": map[string]any{"type": "string"}}}}

func TestGoldenPlainAnswer(t *testing.T) {
	e := newEnv(t)
	e.llm.Enqueue(llmtest.Text("Hello, world"))
	r := e.run(input("thread-plain", "run-1", user("u1", "Say hello")))
	golden(t, "plain.golden", transcript(r))

	conv := ConversationID("", "thread-plain")
	if msgs := e.journal(conv); journalTypes(msgs) != "user_message,assistant_message" ||
		msgs[0].Context.Metadata[MetaMessageID] != "u1" || agentik.JoinText(msgs[1].Content) != "Hello, world" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
}

func TestGoldenServerToolCall(t *testing.T) {
	e := newEnv(t, withEcho)
	e.llm.Enqueue(
		llmtest.Stream().Role().Content("Let me check. ").ToolCall(0, "call_echo", "echo", `{"x":`, `1}`).Finish("tool_calls").Done(),
		llmtest.Text("Done."))
	r := e.run(input("thread-tool", "run-1", user("u1", "Use the tool")))
	golden(t, "server_tool.golden", transcript(r))
	// The call belongs to the streamed text message; the result has its own id.
	var start, result map[string]any
	for _, ev := range r.events {
		switch ev["type"] {
		case ToolCallStart:
			start = ev
		case ToolCallResult:
			result = ev
		}
	}
	if start["parentMessageId"] != r.events[1]["messageId"] || result["messageId"] == start["parentMessageId"] {
		t.Fatalf("ids: start %v result %v", start, result)
	}
}

func TestGoldenFrontendToolRoundTrip(t *testing.T) {
	e := newEnv(t, withEcho)
	e.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_ui"), llmtest.Call("echo", `{}`).WithID("call_srv")),
		llmtest.Text("You picked blue."))
	in := input("thread-ui", "run-1", user("u1", "Pick a color"))
	in["tools"] = []any{pickColor}
	r1 := e.run(in)
	last := r1.events[len(r1.events)-1]
	outcome, _ := last["outcome"].(map[string]any)
	if last["type"] != RunFinished || outcome["type"] != "success" || len(outcome["pendingToolCallIds"].([]any)) != 1 {
		t.Fatalf("first run ends %v", last)
	}
	if names := e.llm.Requests()[0].ToolNames(); strings.Join(names, ",") != "echo,pick_color" {
		t.Fatalf("offered %v", names)
	}
	// The client runs the tool and sends the whole thread back, as HttpAgent
	// does: the assistant message it built, the server's result, its own.
	var parent string
	for _, ev := range r1.events {
		if ev["type"] == ToolCallStart {
			parent = ev["parentMessageId"].(string)
		}
	}
	in2 := input("thread-ui", "run-2",
		user("u1", "Pick a color"),
		map[string]any{"id": parent, "role": "assistant", "toolCalls": []any{
			map[string]any{"id": "call_ui", "type": "function", "function": map[string]any{"name": "pick_color", "arguments": `{"hint":"warm"}`}},
			map[string]any{"id": "call_srv", "type": "function", "function": map[string]any{"name": "echo", "arguments": `{}`}}}},
		map[string]any{"id": "srv-result", "role": "tool", "toolCallId": "call_srv", "content": "echo {}"},
		map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_ui", "content": "blue"})
	in2["tools"] = []any{pickColor}
	r2 := e.run(in2)
	golden(t, "frontend_tool.golden", transcript(r1, r2))

	msgs := e.journal(ConversationID("", "thread-ui"))
	if got := journalTypes(msgs); got != "user_message,tool_call,tool_call,tool_result,tool_result,assistant_message" {
		t.Fatalf("journal %s", got)
	}
	if msgs[4].CallID != "call_ui" || agentik.JoinText(msgs[4].Content) != "blue" || msgs[5].ReplyTo != msgs[0].ID {
		t.Fatalf("client result %+v", msgs[4])
	}
	// The model saw the client's result with the call.
	var fed []string
	for _, m := range e.llm.Requests()[1].Messages {
		if m.Role == "tool" {
			fed = append(fed, m.ToolCallID+"="+m.Text())
		}
	}
	if strings.Join(fed, ";") != "call_ui=blue;call_srv=echo {}" {
		t.Fatalf("fed back %v", fed)
	}
}

func TestGoldenReasoning(t *testing.T) {
	e := newEnv(t)
	e.llm.Enqueue(llmtest.Stream().Role().Reasoning("Thinking ", "hard.").Content("The ", "answer.").Finish("stop").Done())
	r := e.run(input("thread-reason", "run-1", user("u1", "Why?")))
	golden(t, "reasoning.golden", transcript(r))
}

func TestGoldenLLMFailure(t *testing.T) {
	e := newEnv(t)
	e.llm.Enqueue(llmtest.Stream().Role().Content("Partial ").Reset())
	r := e.run(input("thread-fail", "run-1", user("u1", "Fail please")))
	golden(t, "llm_failure.golden", transcript(r))
	last := r.events[len(r.events)-1]
	if last["type"] != RunError || last["code"] != agentik.CodeLLMError {
		t.Fatalf("last %v", last)
	}
	// The failure is in the transcript of the native API too.
	if msgs := e.journal(ConversationID("", "thread-fail")); journalTypes(msgs) != "user_message,error" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
}

// TestGoldenMalformedInput: input that cannot be decoded is refused before
// streaming with a stable code, and nothing is stored.
func TestGoldenMalformedInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct{ body, ctype string }{
		{`{"threadId":"t","runId":"r","messages":[`, "application/json"},
		{`[]`, "application/json"},
		{`{"runId":"r","messages":[]}`, "application/json"},
		{`{"threadId":"t","runId":"r"}`, "application/json"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user"}]}`, "application/json"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"robot","content":"x"}]}`, "application/json"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"x","role":"tool","content":"x"}]}`, "application/json"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":[{"type":"image","source":{"type":"url","value":"http://x/y.png"}}]}]}`, "application/json"},
		{`{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"bad name","parameters":{}}]}`, "application/json"},
		{`{"threadId":7,"runId":"r","messages":[]}`, "application/json"},
		{`{"threadId":"t","runId":"r","messages":[]}{}`, "application/json"},
		{`threadId=t`, "application/x-www-form-urlencoded"},
	}
	var rs []response
	for _, c := range cases {
		r := e.post(c.body, "Content-Type", c.ctype)
		if r.status < 400 || r.status >= 500 || !strings.HasPrefix(r.ctype, "application/json") {
			t.Fatalf("%s: status %d %s", c.body, r.status, r.body)
		}
		rs = append(rs, r)
	}
	golden(t, "malformed.golden", transcript(rs...))
	list, err := e.eng.ListConversations(testCtx(t), agentik.ListRequest{})
	if err != nil || len(list.Conversations) != 0 {
		t.Fatalf("bad input created %v %v", list, err)
	}
	if n := len(e.llm.Requests()); n != 0 {
		t.Fatalf("model called %d times", n)
	}
	if r := e.post(""); r.status != http.StatusBadRequest {
		t.Fatalf("empty body: %d", r.status)
	}
}
