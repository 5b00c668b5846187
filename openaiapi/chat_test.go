package openaiapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// TestChatHistoryOnce: openai-go's chat.completions.create, not streamed,
// twice, the second resending the first exchange with a new question: both
// go to one conversation (named in the response header), the answer and
// its usage come back, and the model sees the first question once, never
// twice.
func TestChatHistoryOnce(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("Paris is the capital."), llmtest.Text("About two million people."))
	var hr *http.Response
	hist := []oai.ChatCompletionMessageParamUnion{oai.SystemMessage("Be brief."), oai.UserMessage("What is the capital of France?")}
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist, Temperature: oai.Float(0.2)}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	conv := hr.Header.Get(ConversationHeader)
	if got := first.Choices[0].Message.Content; got != "Paris is the capital." || first.Choices[0].FinishReason != "stop" {
		t.Fatalf("first answer %q finish %q", got, first.Choices[0].FinishReason)
	}
	if first.Usage.PromptTokens != 10 || first.Usage.CompletionTokens != 4 || first.Usage.TotalTokens != 14 {
		t.Fatalf("usage %+v", first.Usage)
	}
	hist = append(hist, first.Choices[0].Message.ToParam(), oai.UserMessage("How many live there?"))
	second, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get(ConversationHeader) != conv || conv == "" {
		t.Fatalf("conversations %q then %q", conv, hr.Header.Get(ConversationHeader))
	}
	if second.Choices[0].Message.Content != "About two million people." {
		t.Fatalf("second answer %q", second.Choices[0].Message.Content)
	}
	reqs := e.llm.Requests()
	if reqs[0].Temperature == nil || *reqs[0].Temperature != 0.2 || reqs[1].Temperature != nil {
		t.Fatalf("temperatures the model saw: %v then %v", reqs[0].Temperature, reqs[1].Temperature)
	}
	users := userTexts(reqs[len(reqs)-1])
	if len(users) != 2 || !strings.HasPrefix(users[0], "What is the capital") || !strings.HasPrefix(users[1], "How many") {
		t.Fatalf("the model saw the users %q", users)
	}
	if !strings.Contains(users[0], "<instructions>\nBe brief.") {
		t.Fatalf("the system message is not in the turn's context: %q", users[0])
	}
	j := e.journal(conv, "alice")
	if count(j, agentik.MsgUser) != 2 || count(j, agentik.MsgAssistant) != 2 {
		t.Fatalf("journal %+v", j)
	}
	if e.conversations("alice") != 1 {
		t.Fatalf("alice has %d conversations", e.conversations("alice"))
	}
}

// TestChatStream: the streamed completion as openai-go's accumulator reads
// it: role first, the text in deltas, finish_reason, a usage chunk, then
// [DONE]; an explicit conversation header continues that conversation.
func TestChatStream(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Stream().Role().Reasoning("Think. ").Content("One ", "two ", "three.").Finish("stop").Usage(7, 3).Done(),
		llmtest.Text("Four."))
	var hr *http.Response
	s := c.Chat.Completions.NewStreaming(e.ctx(), oai.ChatCompletionNewParams{Model: agentID,
		Messages:      []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Count.")},
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}}, option.WithResponseInto(&hr))
	var acc oai.ChatCompletionAccumulator
	chunks := 0
	for s.Next() {
		acc.AddChunk(s.Current())
		chunks++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "One two three." || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("streamed %q finish %q", got, acc.Choices[0].FinishReason)
	}
	if acc.Usage.PromptTokens != 7 || acc.Usage.CompletionTokens != 3 || chunks < 5 {
		t.Fatalf("usage %+v, %d chunks", acc.Usage, chunks)
	}
	conv := hr.Header.Get(ConversationHeader)
	// The header names the conversation: a history the index never saw
	// goes there.
	next, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("And then?")}}, option.WithHeader(ConversationHeader, conv))
	if err != nil {
		t.Fatal(err)
	}
	if next.Choices[0].Message.Content != "Four." || count(e.journal(conv, "alice"), agentik.MsgUser) != 2 {
		t.Fatalf("answer %q, journal %+v", next.Choices[0].Message.Content, e.journal(conv, "alice"))
	}
}

var pickColor = shared.FunctionDefinitionParam{Name: "pick_color", Description: oai.String("Ask the user for a color"),
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"hint": map[string]any{"type": "string"}}}}

// TestChatClientToolRoundTrip: a tool in the request is a client tool: the
// completion ends with its call (finish_reason tool_calls); the client's
// next request with the tool message continues the same turn (one user
// message in the journal), and the agent's own tool ran inside the turn
// without being returned.
func TestChatClientToolRoundTrip(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("echo", `{"x":1}`).WithID("call_echo")),
		llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_pick")),
		llmtest.Text("You picked red."))
	tools := []oai.ChatCompletionToolUnionParam{oai.ChatCompletionFunctionTool(pickColor)}
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Pick a color.")}
	var hr *http.Response
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist, Tools: tools}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	ch := first.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "pick_color" {
		t.Fatalf("first completion %+v", ch)
	}
	conv := hr.Header.Get(ConversationHeader)
	hist = append(hist, ch.Message.ToParam(), oai.ToolMessage("red", ch.Message.ToolCalls[0].ID))
	second, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist, Tools: tools}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if second.Choices[0].Message.Content != "You picked red." || hr.Header.Get(ConversationHeader) != conv {
		t.Fatalf("second %+v in %s", second.Choices[0], hr.Header.Get(ConversationHeader))
	}
	j := e.journal(conv, "alice")
	if count(j, agentik.MsgUser) != 1 || count(j, agentik.MsgToolResult) != 2 || count(j, agentik.MsgAssistant) != 1 {
		t.Fatalf("journal %+v", j)
	}
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; m.Role != "tool" || m.Text() != "red" {
		t.Fatalf("the model's last message %+v", m)
	}
}

// TestChatApproval: a call waiting for approval ends the completion with a
// text that says so; the user's "yes" resolves it and the turn goes on.
func TestChatApproval(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")), llmtest.Text("Mail sent."))
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Mail bob.")}
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist})
	if err != nil {
		t.Fatal(err)
	}
	text := first.Choices[0].Message.Content
	if !strings.Contains(text, "send_mail") || !strings.Contains(text, "yes") {
		t.Fatalf("approval completion %q", text)
	}
	hist = append(hist, first.Choices[0].Message.ToParam(), oai.UserMessage("yes"))
	s := c.Chat.Completions.NewStreaming(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist})
	var acc oai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Mail sent." {
		t.Fatalf("after yes: %q", got)
	}
	if e.conversations("alice") != 1 {
		t.Fatal("the answer went to another conversation")
	}
}

// TestChatApprovalDenied: the user's "no" to a call waiting for approval
// denies it: the tool does not run, the model sees the denial as the
// call's result, and its answer is the completion, in the same
// conversation.
func TestChatApprovalDenied(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")), llmtest.Text("I did not send it."))
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Mail bob.")}
	var hr *http.Response
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	conv := hr.Header.Get(ConversationHeader)
	hist = append(hist, first.Choices[0].Message.ToParam(), oai.UserMessage("No."))
	got, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "I did not send it." || hr.Header.Get(ConversationHeader) != conv || e.conversations("alice") != 1 {
		t.Fatalf("after no: %q in %s, want the conversation %s", got.Choices[0].Message.Content, hr.Header.Get(ConversationHeader), conv)
	}
	var results []string
	for _, m := range e.journal(conv, "alice") {
		if m.Type == agentik.MsgToolResult {
			results = append(results, m.CallID+": "+agentik.JoinText(m.Content))
		}
	}
	if len(results) != 1 || results[0] != "call_mail: "+agentik.DeniedText("") {
		t.Fatalf("the call's results %q, want the denial only (the tool did not run)", results)
	}
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; len(reqs) != 2 || m.Role != "tool" || !strings.HasSuffix(m.Text(), agentik.DeniedText("")) {
		t.Fatalf("%d model calls; the last saw %+v", len(reqs), m)
	}
	if users := userTexts(reqs[1]); len(users) != 1 || users[0] != "Mail bob." {
		t.Fatalf("the \"no\" went to the model as a message: %q", users)
	}
}

// TestChatYesNoWithoutApproval: a "yes" or "no" is an answer only to an
// approval that waits: opening a conversation with one, or sending one
// where nothing waits, is a message the model answers.
func TestChatYesNoWithoutApproval(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("Yes to what?"), llmtest.Text("Fine."))
	var hr *http.Response
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("yes")}
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil || first.Choices[0].Message.Content != "Yes to what?" {
		t.Fatalf("a new conversation's yes: %v %v", first, err)
	}
	hist = append(hist, first.Choices[0].Message.ToParam(), oai.UserMessage("no"))
	second, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist})
	if err != nil || second.Choices[0].Message.Content != "Fine." {
		t.Fatalf("a no where nothing waits: %v %v", second, err)
	}
	if j := e.journal(hr.Header.Get(ConversationHeader), "alice"); count(j, agentik.MsgUser) != 2 {
		t.Fatalf("journal %+v", j)
	}
}

// TestChatBadInput: what a client may get wrong gets OpenAI's error shape
// through the SDK, and stores nothing.
func TestChatBadInput(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	user := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}
	cases := []struct {
		name   string
		params oai.ChatCompletionNewParams
		status int
		param  string
		code   string
	}{
		{"n", oai.ChatCompletionNewParams{Model: agentID, Messages: user, N: oai.Int(2)}, 422, "n", "invalid_request_error"},
		{"format", oai.ChatCompletionNewParams{Model: agentID, Messages: user, ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, 422, "response_format", "invalid_request_error"},
		{"model", oai.ChatCompletionNewParams{Model: "nobody", Messages: user}, 404, "model", "model_not_found"},
		{"temperature", oai.ChatCompletionNewParams{Model: agentID, Messages: user, Temperature: oai.Float(2.5)}, 422, "temperature", "invalid_request_error"},
		{"top_p", oai.ChatCompletionNewParams{Model: agentID, Messages: user, TopP: oai.Float(-0.1)}, 422, "top_p", "invalid_request_error"},
		{"max_tokens", oai.ChatCompletionNewParams{Model: agentID, Messages: user, MaxCompletionTokens: oai.Int(0)}, 422, "max_completion_tokens", "invalid_request_error"},
		{"tool answers nothing", oai.ChatCompletionNewParams{Model: agentID, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi"), oai.ToolMessage("x", "call_none")}}, 400, "messages[1].tool_call_id", "invalid_request_error"},
		{"image", oai.ChatCompletionNewParams{Model: agentID, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage([]oai.ChatCompletionContentPartUnionParam{
			oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="})})}}, 422, "messages", "invalid_request_error"},
	}
	for _, tc := range cases {
		_, err := c.Chat.Completions.New(e.ctx(), tc.params)
		var apiErr *oai.Error
		if !asAPIError(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Param != tc.param || apiErr.Code != tc.code || apiErr.Message == "" {
			t.Errorf("%s: %v (%+v)", tc.name, err, apiErr)
		}
	}
	raw := []struct {
		body        string
		status      int
		code, param string
	}{
		{`{"model":`, 400, "invalid_request_error", ""},
		{`{"model":"helper","messages":"hi"}`, 400, "invalid_type", "messages"},
		{`{"model":"helper","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, 400, "invalid_type", "temperature"},
		{`{"model":"helper","messages":[{"role":"user","content":"a","content":"b"}]}`, 400, "invalid_request_error", ""},
		{`{"model":"helper","messages":[{"role":"wizard","content":"a"}]}`, 422, "invalid_request_error", "messages[0].role"},
		{`{"model":"helper","messages":[]}`, 422, "invalid_request_error", "messages"},
		{`{"model":"helper","messages":[{"role":"tool","content":"x"}]}`, 422, "invalid_request_error", "messages[0].tool_call_id"},
		{`{"model":"helper","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search"}]}`, 422, "invalid_request_error", "tools[0].type"},
	}
	for _, tc := range raw {
		status, typ, code, param := e.rawError("/chat/completions", tc.body)
		if status != tc.status || typ != "invalid_request_error" || code != tc.code || param != tc.param {
			t.Errorf("%s: %d type %q code %q param %q, want %d %q %q", tc.body, status, typ, code, param, tc.status, tc.code, tc.param)
		}
	}
	if status, out := e.raw("POST", "/chat/completions", "", `{}`); status != 401 || !strings.Contains(out, `"code":"invalid_api_key"`) {
		t.Errorf("no token: %d %s", status, out)
	}
	if n := e.conversations("alice"); n != 0 || len(e.llm.Requests()) != 0 {
		t.Fatalf("bad input stored %d conversations, asked the model %d times", n, len(e.llm.Requests()))
	}
}

// TestChatDivergentHistoryBranches: a resent history that follows the
// conversation up to an earlier answer and then differs (the client edited
// its last message) branches there (SPEC §18): the same conversation, the
// head path is the new branch, the old branch stays, and the model sees
// the new branch's history only.
func TestChatDivergentHistoryBranches(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("Hi."), llmtest.Text("Cats purr."), llmtest.Text("Dogs bark."))
	var hr *http.Response
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Hello.")}
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	conv := hr.Header.Get(ConversationHeader)
	hist = append(hist, first.Choices[0].Message.ToParam())
	if _, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: append(hist, oai.UserMessage("Tell me about cats."))}); err != nil {
		t.Fatal(err)
	}
	edited, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: append(hist, oai.UserMessage("Tell me about dogs."))}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if edited.Choices[0].Message.Content != "Dogs bark." || hr.Header.Get(ConversationHeader) != conv {
		t.Fatalf("edited: %q in %s, want Dogs bark. in %s", edited.Choices[0].Message.Content, hr.Header.Get(ConversationHeader), conv)
	}
	reqs := e.llm.Requests()
	if users := userTexts(reqs[len(reqs)-1]); len(users) != 2 || users[0] != "Hello." || users[1] != "Tell me about dogs." {
		t.Fatalf("the model saw %q", users)
	}
	var path []string
	for _, m := range e.journal(conv, "alice") {
		path = append(path, agentik.JoinText(m.Content))
	}
	if strings.Join(path, "|") != "Hello.|Hi.|Tell me about dogs.|Dogs bark." {
		t.Fatalf("head path %q", path)
	}
	ctx := agentik.WithPrincipal(e.ctx(), "alice")
	h, err := e.stack.Engine.Conversation(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	all, err := h.Messages(ctx, agentik.MessagesRequest{Branch: agentik.BranchAll, Limit: 50})
	if err != nil || len(all.Messages) != 6 {
		t.Fatalf("every branch: %d messages, %v", len(all.Messages), err)
	}
}

// TestChatHistoryAfterRestart: the server restarts between two requests
// of one resent history (no header): the second continues the same
// conversation, found through the digest stored with the first's message,
// and the model sees the first exchange once, never twice. A history
// whose answer differs from the stored one is not taken for it.
func TestChatHistoryAfterRestart(t *testing.T) {
	llm := llmtest.NewServer() // one model across the restart
	t.Cleanup(llm.Close)
	first := newEnv(t, stacktest.LLM(llm))
	first.llm.Enqueue(llmtest.Text("Paris is the capital."), llmtest.Text("About two million people."), llmtest.Text("Hello again."), llmtest.Text("Hi Bob."))
	var hr *http.Response
	hist := []oai.ChatCompletionMessageParamUnion{oai.SystemMessage("Be brief."), oai.UserMessage("What is the capital of France?")}
	fc := first.client(aliceToken)
	answer, err := fc.Chat.Completions.New(first.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	conv := hr.Header.Get(ConversationHeader)
	e := first.restart()
	c := e.client(aliceToken)
	hist = append(hist, answer.Choices[0].Message.ToParam())
	second, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: append(hist, oai.UserMessage("How many live there?"))}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if got := hr.Header.Get(ConversationHeader); got != conv || second.Choices[0].Message.Content != "About two million people." {
		t.Fatalf("after the restart: %q in %s, want the conversation %s", second.Choices[0].Message.Content, got, conv)
	}
	reqs := e.llm.Requests()
	if users := userTexts(reqs[len(reqs)-1]); len(users) != 2 || !strings.HasPrefix(users[0], "What is the capital") || !strings.HasPrefix(users[1], "How many live there?") {
		t.Fatalf("the model saw the users %q", users)
	}
	if n := count(e.journal(conv, "alice"), agentik.MsgUser); n != 2 {
		t.Fatalf("the conversation holds %d user messages", n)
	}
	// The same question with an answer the conversation never gave: a new
	// conversation, not this one.
	forged := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("What is the capital of France?"), oai.AssistantMessage("Lyon."), oai.UserMessage("Sure?")}
	if _, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: forged}, option.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get(ConversationHeader) == conv || e.conversations("alice") != 2 {
		t.Fatalf("a history with another answer went to %s", hr.Header.Get(ConversationHeader))
	}
	// Bob resending alice's history finds nothing of hers.
	bob := e.client(bobToken)
	if _, err := bob.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: append(hist, oai.UserMessage("And?"))}, option.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get(ConversationHeader) == conv || e.conversations("bob") != 1 {
		t.Fatal("bob continued alice's conversation")
	}
}

// TestChatNewHistoryStoredAsGiven: a resent history the server never saw
// starts a new conversation whose first messages are that history, stored
// as given (SPEC §16): the model sees the earlier exchange as messages, the
// journal holds it, and no turn ran for it.
func TestChatNewHistoryStoredAsGiven(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("You are Ada."))
	var hr *http.Response
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("My name is Ada."), oai.AssistantMessage("Hello Ada."), oai.UserMessage("What is my name?")}
	got, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil || got.Choices[0].Message.Content != "You are Ada." {
		t.Fatalf("%v %v", got, err)
	}
	reqs := e.llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	var roles []string
	for _, m := range reqs[0].Messages {
		if m.Role != "system" {
			roles = append(roles, m.Role+":"+m.Text())
		}
	}
	if strings.Join(roles, "|") != "user:My name is Ada.|assistant:Hello Ada.|user:What is my name?" {
		t.Fatalf("the model saw %q", roles)
	}
	var path []string
	for _, m := range e.journal(hr.Header.Get(ConversationHeader), "alice") {
		path = append(path, m.Type+":"+agentik.JoinText(m.Content))
	}
	if strings.Join(path, "|") != "user_message:My name is Ada.|assistant_message:Hello Ada.|user_message:What is my name?|assistant_message:You are Ada." {
		t.Fatalf("journal %q", path)
	}
}

// TestChatToolHistoryAfterRestart: a history whose answers hold client
// tool calls, and text written around the agent's own tool calls, finds
// its conversation after a restart too (the lookup key of its user
// message and the journal of its turn): the client's results continue the
// waiting turn, and the next message continues the conversation, the
// model seeing the history once.
func TestChatToolHistoryAfterRestart(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	first := newEnv(t, stacktest.LLM(llm))
	llm.Enqueue(
		llmtest.Stream().Role().Content("Let me look. ").ToolCall(0, "call_echo", "echo", `{"x":1}`).Finish("tool_calls").Done(),
		llmtest.Stream().Role().Content("Now you: ").ToolCall(0, "call_pick", "pick_color", `{"hint":"warm"}`).Finish("tool_calls").Done(),
		llmtest.Text("You picked red."),
		llmtest.Text("You are welcome."))
	tools := []oai.ChatCompletionToolUnionParam{oai.ChatCompletionFunctionTool(pickColor)}
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Pick a color.")}
	var hr *http.Response
	fc := first.client(aliceToken)
	got, err := fc.Chat.Completions.New(first.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist, Tools: tools}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	ch := got.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != "Let me look. Now you: " || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("first completion %+v", ch)
	}
	conv := hr.Header.Get(ConversationHeader)
	hist = append(hist, ch.Message.ToParam(), oai.ToolMessage("red", ch.Message.ToolCalls[0].ID))

	e := first.restart()
	c := e.client(aliceToken)
	if got, err = c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist, Tools: tools}, option.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "You picked red." || hr.Header.Get(ConversationHeader) != conv {
		t.Fatalf("the results after a restart: %+v in %s, want the conversation %s", got.Choices[0], hr.Header.Get(ConversationHeader), conv)
	}
	hist = append(hist, got.Choices[0].Message.ToParam(), oai.UserMessage("Thanks."))

	e = e.restart()
	c = e.client(aliceToken)
	if got, err = c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist, Tools: tools}, option.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "You are welcome." || hr.Header.Get(ConversationHeader) != conv {
		t.Fatalf("the next message after a restart: %+v in %s, want the conversation %s", got.Choices[0], hr.Header.Get(ConversationHeader), conv)
	}
	j := e.journal(conv, "alice")
	if count(j, agentik.MsgUser) != 2 || count(j, agentik.MsgToolResult) != 2 || e.conversations("alice") != 1 {
		t.Fatalf("journal %+v in %d conversations", j, e.conversations("alice"))
	}
	reqs := llm.Requests()
	if users := userTexts(reqs[len(reqs)-1]); len(users) != 2 || users[0] != "Pick a color." || users[1] != "Thanks." {
		t.Fatalf("the model saw the users %q", users)
	}
	// The same history with another result: refused, in OpenAI's shape,
	// nothing stored (the result held is not the client's).
	other := append(append([]oai.ChatCompletionMessageParamUnion(nil), hist[:2]...), oai.ToolMessage("blue", ch.Message.ToolCalls[0].ID), got.Choices[0].Message.ToParam(), oai.UserMessage("Sure?"))
	_, err = c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: other, Tools: tools})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("another tool result: %v", err)
	}
	// Another first answer: a new conversation.
	llm.Enqueue(llmtest.Text("Yes."))
	forged := []oai.ChatCompletionMessageParamUnion{hist[0], oai.AssistantMessage("Let me look. Now you: "), oai.UserMessage("Sure?")}
	if _, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: forged, Tools: tools}, option.WithResponseInto(&hr)); err != nil {
		t.Fatal(err)
	}
	if hr.Header.Get(ConversationHeader) == conv || len(e.journal(conv, "alice")) != len(j) {
		t.Fatal("a history without the tool call continued the conversation")
	}
}

// TestChatApprovalAfterRestart: a completion that asked for an approval
// finds its conversation after a restart while the approval waits (the
// question is made again from the pending approvals): "yes" resolves it
// and the turn goes on there.
func TestChatApprovalAfterRestart(t *testing.T) {
	llm := llmtest.NewServer()
	t.Cleanup(llm.Close)
	first := newEnv(t, stacktest.LLM(llm))
	llm.Enqueue(llmtest.Stream().Role().Content("I will mail him. ").ToolCall(0, "call_mail", "send_mail", `{"to":"bob"}`).Finish("tool_calls").Done(),
		llmtest.Text("Mail sent."))
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Mail bob.")}
	var hr *http.Response
	fc := first.client(aliceToken)
	asked, err := fc.Chat.Completions.New(first.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if text := asked.Choices[0].Message.Content; !strings.HasPrefix(text, "I will mail him. ") || !strings.Contains(text, "send_mail") {
		t.Fatalf("approval completion %q", text)
	}
	conv := hr.Header.Get(ConversationHeader)
	e := first.restart()
	c := e.client(aliceToken)
	hist = append(hist, asked.Choices[0].Message.ToParam(), oai.UserMessage("yes"))
	got, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "Mail sent." || hr.Header.Get(ConversationHeader) != conv || e.conversations("alice") != 1 {
		t.Fatalf("after the restart: %q in %s, want the conversation %s", got.Choices[0].Message.Content, hr.Header.Get(ConversationHeader), conv)
	}
	if j := e.journal(conv, "alice"); count(j, agentik.MsgUser) != 1 || count(j, agentik.MsgToolResult) != 1 {
		t.Fatalf("journal %+v", j)
	}
}
