package openaiapi

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

func text(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: oai.String(s)}
}

func items(in ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: in}
}

// TestResponsesPreviousAndRetrieve: responses.create, not streamed: the
// answer as output_text with usage; previous_response_id continues the
// conversation (the model sees the first question once); retrieve gives
// the same response; the conversation's items list both exchanges.
func TestResponsesPreviousAndRetrieve(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("Hello Alice."), llmtest.Text("You are Alice."))
	first, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("I am Alice."), Instructions: oai.String("Be kind."),
		Temperature: oai.Float(0.5), TopP: oai.Float(0.9), MaxOutputTokens: oai.Int(64)})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.llm.Requests()[0]; r.Temperature == nil || *r.Temperature != 0.5 || r.TopP == nil || *r.TopP != 0.9 ||
		r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 64 || first.Temperature != 0.5 {
		t.Fatalf("the model call's sampling: %s", r.Raw)
	}
	if first.Status != "completed" || first.OutputText() != "Hello Alice." || first.Usage.InputTokens != 10 || first.Usage.TotalTokens != 12 {
		t.Fatalf("first %s %q %+v", first.Status, first.OutputText(), first.Usage)
	}
	second, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Who am I?"), PreviousResponseID: oai.String(first.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "You are Alice." || second.Conversation.ID != first.Conversation.ID || second.ID == first.ID {
		t.Fatalf("second %q in %s (%s)", second.OutputText(), second.Conversation.ID, second.ID)
	}
	reqs := e.llm.Requests()
	if users := userTexts(reqs[1]); len(users) != 2 || !strings.HasPrefix(users[0], "I am Alice.") || users[1] != "Who am I?" {
		t.Fatalf("the model saw %q", users)
	}
	got, err := c.Responses.Get(e.ctx(), first.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != first.ID || got.OutputText() != "Hello Alice." || got.Status != "completed" || got.Output[0].ID != first.Output[0].ID {
		t.Fatalf("retrieved %+v", got)
	}
	page, err := c.Conversations.Items.List(e.ctx(), first.Conversation.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, it := range page.Data {
		roles = append(roles, it.Role)
		if it.Role == "user" && strings.Contains(it.Content.JSON.OfMessageContentArray.Raw()+it.RawJSON(), "Be kind") {
			t.Fatal("the instructions show as the user's")
		}
	}
	if strings.Join(roles, ",") != "user,assistant,user,assistant" {
		t.Fatalf("items %v", roles)
	}
}

// TestResponsesResume: a streamed response whose client drops mid-answer;
// GET /responses/{id}?stream=true&starting_after=N gives exactly the rest,
// live, and the stream's numbers increase strictly.
func TestResponsesResume(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	gate := llmtest.NewGate()
	e.llm.Enqueue(llmtest.Stream().Role().Content("Once ", "upon ").Pause(gate).Content("a ", "time.").Finish("stop").Usage(5, 4).Done())
	ctx := e.ctx()
	s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: agentID, Input: text("Tell a story.")})
	var id, got string
	var last int64 = -1
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber <= last {
			t.Fatalf("sequence %d after %d", ev.SequenceNumber, last)
		}
		last = ev.SequenceNumber
		if ev.Type == "response.created" {
			id = ev.Response.ID
		}
		if ev.Type == "response.output_text.delta" {
			got += ev.Delta
		}
		if got == "Once upon " {
			break
		}
	}
	<-gate.Reached()
	s.Close() // the client drops mid-answer
	rest := c.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: oai.Int(last)})
	gate.Release()
	var final responses.Response
	for rest.Next() {
		ev := rest.Current()
		if ev.SequenceNumber <= last {
			t.Fatalf("resumed sequence %d after %d", ev.SequenceNumber, last)
		}
		last = ev.SequenceNumber
		if ev.Type == "response.output_text.delta" {
			got += ev.Delta
		}
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := rest.Err(); err != nil {
		t.Fatal(err)
	}
	if got != "Once upon a time." || final.OutputText() != "Once upon a time." || final.Status != "completed" {
		t.Fatalf("text %q, final %q %s", got, final.OutputText(), final.Status)
	}
	// Over, the whole stream replays from the log with the same numbers.
	again := c.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: oai.Int(-1)})
	var replayed string
	var end int64
	for again.Next() {
		ev := again.Current()
		if ev.Type == "response.output_text.delta" {
			replayed += ev.Delta
		}
		end = ev.SequenceNumber
	}
	if replayed != "Once upon a time." || end != last {
		t.Fatalf("replayed %q ending at %d, live ended at %d", replayed, end, last)
	}
}

// TestResponsesBackgroundCancel: background answers at once, queued; the
// response is polled in progress, cancelled, and then says so.
func TestResponsesBackgroundCancel(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Stream().Role().Content("Counting ").Hang())
	bg, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Count forever."), Background: oai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if bg.Status != "queued" || len(bg.Output) != 0 {
		t.Fatalf("background %s %d", bg.Status, len(bg.Output))
	}
	// Follow it until the text is there: the turn is running.
	s := c.Responses.GetStreaming(e.ctx(), bg.ID, responses.ResponseGetParams{})
	for s.Next() {
		if s.Current().Type == "response.output_text.delta" {
			break
		}
	}
	s.Close()
	polled, err := c.Responses.Get(e.ctx(), bg.ID, responses.ResponseGetParams{})
	if err != nil || polled.Status != "in_progress" {
		t.Fatalf("polled %v %v", polled, err)
	}
	cancelled, err := c.Responses.Cancel(e.ctx(), bg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status != "cancelled" {
		t.Fatalf("after cancel: %s", cancelled.Status)
	}
	after, err := c.Responses.Get(e.ctx(), bg.ID, responses.ResponseGetParams{})
	if err != nil || after.Status != "cancelled" || after.OutputText() != "Counting " {
		t.Fatalf("retrieved after cancel: %v %q %v", after.Status, after.OutputText(), err)
	}
}

// TestResponsesTools: the agent's own tool is an mcp_call item with its
// output; a function tool of the request is a client tool: its
// function_call ends the response and the function_call_output continues
// the same turn.
func TestResponsesTools(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(
		// Text before the agent's own tool call: the response goes on.
		llmtest.Stream().Role().Content("Let me look. ").ToolCall(0, "call_echo", "echo", `{"x":1}`).Finish("tool_calls").Done(),
		llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_pick")),
		llmtest.Text("You picked red."))
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "pick_color", Strict: oai.Bool(false),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"hint": map[string]any{"type": "string"}}}}}}
	first, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Pick a color."), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	// Retrieved, it is read back from the journal: the same.
	again, err := c.Responses.Get(e.ctx(), first.ID, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*responses.Response{first, again} {
		if len(r.Output) != 3 || r.Status != "completed" || r.Output[0].Type != "message" || r.OutputText() != "Let me look. " ||
			r.Output[1].Type != "mcp_call" || r.Output[1].Name != "echo" || r.Output[1].Output.OfString != `echo {"x":1}` ||
			r.Output[2].Type != "function_call" || r.Output[2].CallID != "call_pick" || r.Output[2].Arguments.OfString != `{"hint":"warm"}` {
			t.Fatalf("output %s %+v", r.Status, r.Output)
		}
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput("red")
	out.OfFunctionCallOutput.CallID = oai.String("call_pick")
	second, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: items(out), PreviousResponseID: oai.String(first.ID), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "You picked red." || len(second.Output) != 1 {
		t.Fatalf("second %+v", second.Output)
	}
	j := e.journal(first.Conversation.ID, "alice")
	if count(j, agentik.MsgUser) != 1 || count(j, agentik.MsgAssistant) != 2 {
		t.Fatalf("journal %+v", j)
	}
	// Each response's input items: the question, then the tool's output.
	in1, err := c.Responses.InputItems.List(e.ctx(), first.ID, responses.InputItemListParams{})
	if err != nil || len(in1.Data) != 1 || in1.Data[0].Type != "message" || in1.Data[0].Role != "user" ||
		!strings.Contains(in1.Data[0].Content.JSON.OfInputItemContentList.Raw()+in1.Data[0].RawJSON(), `"text":"Pick a color."`) || in1.HasMore {
		t.Fatalf("first input items %v %v", in1, err)
	}
	in2, err := c.Responses.InputItems.List(e.ctx(), second.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: oai.Int(1)})
	if err != nil || len(in2.Data) != 1 || in2.Data[0].Type != "function_call_output" || in2.Data[0].CallID != "call_pick" || in2.Data[0].Output.OfString != "red" {
		t.Fatalf("second input items %v %v", in2, err)
	}
	// An output for a call nobody waits for is refused, and changes nothing.
	_, err = c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: items(out), PreviousResponseID: oai.String(second.ID)})
	var apiErr *oai.Error
	if !asAPIError(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "input[0].call_id" {
		t.Fatalf("stale output: %v", err)
	}
}

// TestResponsesApproval: a call waiting for approval is an
// mcp_approval_request item; the mcp_approval_response input resumes the
// turn, streamed.
func TestResponsesApproval(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")), llmtest.Text("Mail sent."))
	first, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Mail bob.")})
	if err != nil {
		t.Fatal(err)
	}
	var req *responses.ResponseOutputItemUnion
	for i := range first.Output {
		if first.Output[i].Type == "mcp_approval_request" {
			req = &first.Output[i]
		}
	}
	if first.Status != "completed" || req == nil || req.Name != "send_mail" {
		t.Fatalf("first %s %+v", first.Status, first.Output)
	}
	s := c.Responses.NewStreaming(e.ctx(), responses.ResponseNewParams{Model: agentID, PreviousResponseID: oai.String(first.ID),
		Input: items(responses.ResponseInputItemParamOfMcpApprovalResponse(req.ID, true))})
	var final responses.Response
	var mcpDone bool
	for s.Next() {
		ev := s.Current()
		if ev.Type == "response.output_item.done" && ev.Item.Type == "mcp_call" && ev.Item.Output.OfString == `sent {"to":"bob"}` {
			mcpDone = true
		}
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !mcpDone || final.OutputText() != "Mail sent." {
		t.Fatalf("after approval: mcp_call done %v, %q", mcpDone, final.OutputText())
	}
}

// TestResponsesBadInput: what a client may get wrong on /v1/responses gets
// OpenAI's error shape — through openai-go, and as raw bodies the SDK
// would not send — and stores nothing: no conversation, no model call.
func TestResponsesBadInput(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	image := responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{{OfInputImage: &responses.ResponseInputImageParam{
		ImageURL: oai.String("data:image/png;base64,iVBORw0KGgo="), Detail: responses.ResponseInputImageDetailAuto}}}, responses.EasyInputMessageRoleUser)
	output := responses.ResponseInputItemParamOfFunctionCallOutput("red")
	output.OfFunctionCallOutput.CallID = oai.String("call_none")
	cases := []struct {
		name             string
		params           responses.ResponseNewParams
		status           int
		typ, code, param string
	}{
		{"text.format", responses.ResponseNewParams{Model: agentID, Input: text("hi"), Text: responses.ResponseTextConfigParam{
			Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}}, 422, "invalid_request_error", "invalid_request_error", "text.format"},
		{"image", responses.ResponseNewParams{Model: agentID, Input: items(image)}, 422, "invalid_request_error", "invalid_request_error", "input"},
		{"output for no call", responses.ResponseNewParams{Model: agentID, Input: items(output)}, 400, "invalid_request_error", "invalid_request_error", "input[0].call_id"},
		{"approval for none", responses.ResponseNewParams{Model: agentID, Input: items(responses.ResponseInputItemParamOfMcpApprovalResponse("mcpr_call_none", true))},
			404, "invalid_request_error", "not_found", "input[0].approval_request_id"},
		{"model", responses.ResponseNewParams{Model: "nobody", Input: text("hi")}, 404, "invalid_request_error", "model_not_found", "model"},
		{"temperature", responses.ResponseNewParams{Model: agentID, Input: text("hi"), Temperature: oai.Float(2.5)}, 422, "invalid_request_error", "invalid_request_error", "temperature"},
		{"max_output_tokens", responses.ResponseNewParams{Model: agentID, Input: text("hi"), MaxOutputTokens: oai.Int(0)}, 422, "invalid_request_error", "invalid_request_error", "max_output_tokens"},
		{"web_search", responses.ResponseNewParams{Model: agentID, Input: text("hi"), Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: "web_search"}}}},
			422, "invalid_request_error", "invalid_request_error", "tools[0].type"},
		{"previous", responses.ResponseNewParams{Model: agentID, Input: text("hi"), PreviousResponseID: oai.String("resp_nope")}, 404, "invalid_request_error", "not_found", "previous_response_id"},
		{"background not stored", responses.ResponseNewParams{Model: agentID, Input: text("hi"), Background: oai.Bool(true), Store: oai.Bool(false)},
			422, "invalid_request_error", "invalid_request_error", "background"},
	}
	for _, tc := range cases {
		_, err := c.Responses.New(e.ctx(), tc.params)
		var apiErr *oai.Error
		if !asAPIError(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code || apiErr.Param != tc.param || apiErr.Message == "" {
			t.Errorf("%s: %v (%+v)", tc.name, err, apiErr)
		}
	}
	raw := []struct {
		body        string
		status      int
		code, param string
	}{
		{`{"model":`, 400, "invalid_request_error", ""},
		{``, 400, "invalid_request_error", ""},
		{`{"model":"helper","input":"hi","temperature":"hot"}`, 400, "invalid_type", "temperature"},
		{`{"model":"helper","input":"hi","stream":"yes"}`, 400, "invalid_type", "stream"},
		{`{"model":"helper","input":42}`, 400, "invalid_request_error", "input"},
		{`{"model":"helper","input":"a","input":"b"}`, 400, "invalid_request_error", ""},
		{`{"model":"helper","input":"hi","conversation":{"id":5}}`, 400, "invalid_request_error", "conversation"},
		{`{"model":"helper"}`, 422, "invalid_request_error", "input"},
		{`{"model":"helper","input":[]}`, 422, "invalid_request_error", "input"},
		{`{"model":"helper","input":[{"type":"wizard"}]}`, 422, "invalid_request_error", "input[0].type"},
		{`{"model":"helper","input":[{"type":"message","role":"wizard","content":"a"}]}`, 422, "invalid_request_error", "input[0].role"},
		{`{"model":"helper","input":[{"type":"function_call_output","output":"red"}]}`, 422, "invalid_request_error", "input[0].call_id"},
		{`{"model":"helper","input":[{"type":"message","role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, 422, "invalid_request_error", "input[0].content[0]"},
	}
	for _, tc := range raw {
		status, typ, code, param := e.rawError("/responses", tc.body)
		if status != tc.status || typ != "invalid_request_error" || code != tc.code || param != tc.param {
			t.Errorf("%s: %d type %q code %q param %q, want %d %q %q", tc.body, status, typ, code, param, tc.status, tc.code, tc.param)
		}
	}
	if n := e.conversations("alice"); n != 0 || len(e.llm.Requests()) != 0 {
		t.Fatalf("bad input stored %d conversations, asked the model %d times", n, len(e.llm.Requests()))
	}
}

// TestResponsesApprovalDenied: an mcp_approval_response with approve
// false denies the waiting call: the tool does not run (its mcp_call is
// failed with the denial), the model sees the denial as the call's
// result, and its answer ends the response, in the same conversation.
func TestResponsesApprovalDenied(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`).WithID("call_mail")), llmtest.Text("I did not send it."))
	first, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Mail bob.")})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(first.Output, func(it responses.ResponseOutputItemUnion) bool { return it.Type == "mcp_approval_request" })
	if i < 0 {
		t.Fatalf("first output %+v", first.Output)
	}
	deny := responses.ResponseInputItemParamOfMcpApprovalResponse(first.Output[i].ID, false)
	deny.OfMcpApprovalResponse.Reason = oai.String("not now")
	got, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, PreviousResponseID: oai.String(first.ID), Input: items(deny)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" || got.OutputText() != "I did not send it." || got.Conversation.ID != first.Conversation.ID {
		t.Fatalf("after the denial: %s %q in %s", got.Status, got.OutputText(), got.Conversation.ID)
	}
	denied := agentik.DeniedText("not now")
	j := slices.IndexFunc(got.Output, func(it responses.ResponseOutputItemUnion) bool { return it.Type == "mcp_call" })
	if j < 0 || got.Output[j].Name != "send_mail" || got.Output[j].Error.OfString != denied || got.Output[j].Output.OfString != "" {
		t.Fatalf("the denied call's item: %s", got.RawJSON())
	}
	var results []string
	for _, m := range e.journal(first.Conversation.ID, "alice") {
		if m.Type == agentik.MsgToolResult {
			results = append(results, agentik.JoinText(m.Content))
		}
	}
	if len(results) != 1 || results[0] != denied {
		t.Fatalf("the call's results %q, want the denial only (the tool did not run)", results)
	}
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; len(reqs) != 2 || m.Role != "tool" || m.ToolCallID != "call_mail" || !strings.HasSuffix(m.Text(), denied) {
		t.Fatalf("%d model calls; the last saw %+v", len(reqs), m)
	}
}

// TestIsolation: another principal's response, conversation (read,
// update, delete) and previous_response_id are 404 and change nothing;
// models list and conversations (made, updated and read back) work for
// their owner.
func TestIsolation(t *testing.T) {
	e := newEnv(t)
	alice, bob := e.client(aliceToken), e.client(bobToken)
	e.llm.Enqueue(llmtest.Text("Secret."))
	conv, err := alice.Conversations.New(e.ctx(), conversations.ConversationNewParams{Metadata: map[string]string{"title": "Plans"}})
	if err != nil || !strings.Contains(conv.RawJSON(), `"title":"Plans"`) {
		t.Fatalf("conversation %+v %v", conv, err)
	}
	r, err := alice.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Keep this."),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: oai.String(conv.ID)}})
	if err != nil || r.Conversation.ID != conv.ID {
		t.Fatalf("response %+v %v", r, err)
	}
	var apiErr *oai.Error
	check := func(what string, err error) {
		t.Helper()
		if !asAPIError(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err = bob.Responses.Get(e.ctx(), r.ID, responses.ResponseGetParams{})
	check("get", err)
	_, err = bob.Responses.Cancel(e.ctx(), r.ID)
	check("cancel", err)
	_, err = bob.Responses.InputItems.List(e.ctx(), r.ID, responses.InputItemListParams{})
	check("input items", err)
	if in, err := alice.Responses.InputItems.List(e.ctx(), r.ID, responses.InputItemListParams{}); err != nil || len(in.Data) != 1 || !strings.Contains(in.RawJSON(), `"first_id":"`+in.Data[0].ID+`"`) {
		t.Fatalf("alice's input items %v %v", in, err)
	}
	_, err = bob.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Tell me."), PreviousResponseID: oai.String(r.ID)})
	check("previous_response_id", err)
	_, err = bob.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Tell me."),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: oai.String(conv.ID)}})
	check("conversation", err)
	_, err = bob.Conversations.Get(e.ctx(), conv.ID)
	check("conversation get", err)
	_, err = bob.Conversations.Items.List(e.ctx(), conv.ID, conversations.ItemListParams{})
	check("items", err)
	_, err = bob.Conversations.Delete(e.ctx(), conv.ID)
	check("delete", err)
	_, err = bob.Conversations.Update(e.ctx(), conv.ID, conversations.ConversationUpdateParams{Metadata: map[string]string{"title": "Bob's"}})
	check("update", err)
	// Alice's metadata update is read back; bob's changed nothing before it.
	if got, err := alice.Conversations.Get(e.ctx(), conv.ID); err != nil || !strings.Contains(got.RawJSON(), `"metadata":{"title":"Plans"}`) {
		t.Fatalf("after bob's update: %v %v", got, err)
	}
	updated, err := alice.Conversations.Update(e.ctx(), conv.ID, conversations.ConversationUpdateParams{Metadata: map[string]string{"title": "New plans"}})
	if err != nil || updated.ID != conv.ID || !strings.Contains(updated.RawJSON(), `"metadata":{"title":"New plans"}`) {
		t.Fatalf("alice's update: %v %v", updated, err)
	}
	if got, err := alice.Conversations.Get(e.ctx(), conv.ID); err != nil || !strings.Contains(got.RawJSON(), `"metadata":{"title":"New plans"}`) {
		t.Fatalf("read back: %v %v", got, err)
	}
	if e.conversations("bob") != 0 || len(e.llm.Requests()) != 1 {
		t.Fatal("bob's refused requests stored something")
	}
	models, err := bob.Models.List(e.ctx())
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != agentID || models.Data[0].Object != "model" {
		t.Fatalf("models %+v %v", models, err)
	}
	if _, err := alice.Conversations.Delete(e.ctx(), conv.ID); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Responses.Get(e.ctx(), r.ID, responses.ResponseGetParams{})
	check("a deleted conversation's response", err)
}

// TestResponsesReasoningStream: the model's reasoning streams as a
// reasoning item (its summary events) before the message, the final
// output holds it, and a stream the client dropped inside the reasoning
// resumes with exactly the rest — the same numbers as the whole stream
// replayed from the journal.
func TestResponsesReasoningStream(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	gate := llmtest.NewGate()
	e.llm.Enqueue(llmtest.Stream().Role().Reasoning("Let me ", "think. ").Pause(gate).Reasoning("Done.").Content("Forty", "-two.").Finish("stop").Done())
	ctx := e.ctx()
	s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: agentID, Input: text("Meaning of life?")})
	var id, reasoning string
	var last int64 = -1
	var types []string
	for s.Next() {
		ev := s.Current()
		last = ev.SequenceNumber
		types = append(types, ev.Type)
		if ev.Type == "response.created" {
			id = ev.Response.ID
		}
		if ev.Type == "response.reasoning_summary_text.delta" {
			reasoning += ev.AsResponseReasoningSummaryTextDelta().Delta
		}
		if reasoning == "Let me think. " {
			break
		}
	}
	if !slices.Contains(types, "response.reasoning_summary_part.added") || !strings.HasPrefix(types[2], "response.output_item.added") {
		t.Fatalf("events %v", types)
	}
	<-gate.Reached()
	s.Close()
	rest := c.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: oai.Int(last - 3)}) // inside the last delta
	gate.Release()
	var final responses.Response
	text := ""
	for rest.Next() {
		ev := rest.Current()
		switch ev.Type {
		case "response.reasoning_summary_text.delta":
			reasoning += ev.AsResponseReasoningSummaryTextDelta().Delta
		case "response.reasoning_summary_text.done":
			if d := ev.AsResponseReasoningSummaryTextDone(); d.Text != "Let me think. Done." {
				t.Fatalf("reasoning done %q", d.Text)
			}
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed":
			final = ev.Response
		}
		last = ev.SequenceNumber
	}
	if err := rest.Err(); err != nil {
		t.Fatal(err)
	}
	if reasoning != "Let me think. k. Done." || text != "Forty-two." {
		t.Fatalf("reasoning %q, text %q", reasoning, text)
	}
	if len(final.Output) != 2 || final.Output[0].Type != "reasoning" || final.Output[0].Summary[0].Text != "Let me think. Done." || final.OutputText() != "Forty-two." {
		t.Fatalf("final output %s", final.RawJSON())
	}
	got, err := c.Responses.Get(ctx, id, responses.ResponseGetParams{})
	if err != nil || got.Output[0].ID != final.Output[0].ID || got.Output[0].Summary[0].Text != "Let me think. Done." {
		t.Fatalf("retrieved %v %v", got, err)
	}
	again := c.Responses.GetStreaming(ctx, id, responses.ResponseGetParams{StartingAfter: oai.Int(-1)})
	var end int64
	replayed := ""
	for again.Next() {
		ev := again.Current()
		if ev.Type == "response.reasoning_summary_text.delta" {
			replayed += ev.AsResponseReasoningSummaryTextDelta().Delta
		}
		end = ev.SequenceNumber
	}
	if replayed != "Let me think. Done." || end != last {
		t.Fatalf("replayed %q ending at %d, live ended at %d", replayed, end, last)
	}
}

// TestResponsesPreviousBranches: previous_response_id naming an older
// response (not the latest of its conversation) branches there (SPEC §18):
// the model sees that response's history and the new input, not what came
// after it; the head moves to the new branch; the old branch stays, and its
// responses stay readable and can be continued again.
func TestResponsesPreviousBranches(t *testing.T) {
	e := newEnv(t)
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("Hello Alice."), llmtest.Text("You are Alice."), llmtest.Text("Four."), llmtest.Text("Still Alice."))
	ask := func(input string, prev string) *responses.Response {
		t.Helper()
		p := responses.ResponseNewParams{Model: agentID, Input: text(input)}
		if prev != "" {
			p.PreviousResponseID = oai.String(prev)
		}
		r, err := c.Responses.New(e.ctx(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := ask("I am Alice.", "")
	second := ask("Who am I?", first.ID)
	third := ask("What is 2+2?", first.ID) // first is no longer the latest: a branch
	reqs := e.llm.Requests()
	if users := userTexts(reqs[2]); strings.Join(users, "|") != "I am Alice.|What is 2+2?" {
		t.Fatalf("the branch's model call saw %q", users)
	}
	var path []string
	for _, m := range e.journal(first.Conversation.ID, "alice") {
		path = append(path, agentik.JoinText(m.Content))
	}
	if strings.Join(path, "|") != "I am Alice.|Hello Alice.|What is 2+2?|Four." || third.Conversation.ID != first.Conversation.ID {
		t.Fatalf("head path %q", path)
	}
	got, err := c.Responses.Get(e.ctx(), second.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != "You are Alice." {
		t.Fatalf("the old branch's response: %v %v", got, err)
	}
	ask("And now?", second.ID) // back on the old branch
	reqs = e.llm.Requests()
	if users := userTexts(reqs[3]); strings.Join(users, "|") != "I am Alice.|Who am I?|And now?" {
		t.Fatalf("the old branch's model call saw %q", users)
	}
}
