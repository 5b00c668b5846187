package openaiapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// wantAPIError checks that err is the SDK's API error with status, and
// OpenAI's type, code and param, and a message; it returns it.
func wantAPIError(t *testing.T, what string, err error, status int, typ, code, param string) *oai.Error {
	t.Helper()
	var apiErr *oai.Error
	if !asAPIError(err, &apiErr) {
		t.Fatalf("%s: %v, want an API error", what, err)
	}
	if apiErr.StatusCode != status || apiErr.Type != typ || apiErr.Code != code || apiErr.Param != param || apiErr.Message == "" {
		t.Fatalf("%s: %d type %q code %q param %q message %q, want %d %q %q %q", what, apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Param, apiErr.Message,
			status, typ, code, param)
	}
	return apiErr
}

// TestLimits: the door's own limits, through openai-go: a history of more
// than MaxMessages messages, and a body over MaxBodyBytes on both APIs,
// are 413 request_too_large in OpenAI's shape and store nothing; a
// history and a body at the limits are answered.
func TestLimits(t *testing.T) {
	const maxBody = 8 << 10
	e := newEnvWith(t, func(o *Options) { o.MaxMessages, o.MaxBodyBytes = 4, maxBody })
	c := e.client(aliceToken)
	long := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("One."), oai.AssistantMessage("Two."), oai.UserMessage("Three."),
		oai.AssistantMessage("Four."), oai.UserMessage("Five.")}
	_, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: long})
	wantAPIError(t, "a history over the limit", err, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "messages")

	big := strings.Repeat("x", maxBody+1)
	_, err = c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage(big)}})
	wantAPIError(t, "a chat body over the limit", err, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "")
	_, err = c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text(big)})
	wantAPIError(t, "a responses body over the limit", err, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", "")
	if n := e.conversations("alice"); n != 0 || len(e.llm.Requests()) != 0 {
		t.Fatalf("refused requests stored %d conversations, asked the model %d times", n, len(e.llm.Requests()))
	}

	// At the limits: answered.
	e.llm.Enqueue(llmtest.Text("Five."), llmtest.Text("Done."))
	atLimit := []oai.ChatCompletionMessageParamUnion{oai.SystemMessage("Count."), oai.UserMessage("One."), oai.AssistantMessage("Two."),
		oai.UserMessage(strings.Repeat("y", maxBody-1024))}
	got, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: atLimit})
	if err != nil || got.Choices[0].Message.Content != "Five." {
		t.Fatalf("a history at the limits: %v %v", got, err)
	}
	r, err := c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text(strings.Repeat("y", maxBody-1024))})
	if err != nil || r.OutputText() != "Done." {
		t.Fatalf("a response at the limit: %v %v", r, err)
	}
}

// TestLimitsPerPrincipal: the engine's per-principal message rate applies
// at this door: over it, a completion or a response — in a new
// conversation, one started from a given history, or one continued — is
// 429 rate_limit_exceeded with Retry-After, and stores nothing (no
// conversation is left behind); another principal is not limited by it.
func TestLimitsPerPrincipal(t *testing.T) {
	e := newEnv(t, stacktest.Engine(func(o *engine.Options) { o.MessagesPerMinute = 1 }))
	c := e.client(aliceToken)
	e.llm.Enqueue(llmtest.Text("Hi."), llmtest.Text("Hi Bob."))
	var hr *http.Response
	hist := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Hello.")}
	first, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist}, option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	conv := hr.Header.Get(ConversationHeader)
	limited := func(what string, err error) {
		t.Helper()
		apiErr := wantAPIError(t, what, err, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "")
		if s, err := strconv.Atoi(apiErr.Response.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("%s: Retry-After %q", what, apiErr.Response.Header.Get("Retry-After"))
		}
	}
	chat := func(what string, msgs ...oai.ChatCompletionMessageParamUnion) {
		t.Helper()
		_, err := c.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: msgs})
		limited(what, err)
	}
	chat("a continued chat", append(hist, first.Choices[0].Message.ToParam(), oai.UserMessage("Again."))...)
	chat("a new chat", oai.UserMessage("Another."))
	chat("a new chat from a given history", oai.UserMessage("My name is Ada."), oai.AssistantMessage("Hello Ada."), oai.UserMessage("Who am I?"))
	_, err = c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Another.")})
	limited("a new response", err)
	_, err = c.Responses.New(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Again."),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: oai.String(conv)}})
	limited("a response in the conversation", err)
	// Streamed, the refusal comes before the stream.
	cs := c.Chat.Completions.NewStreaming(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Streamed.")}})
	for cs.Next() {
	}
	limited("a streamed chat", cs.Err())
	rs := c.Responses.NewStreaming(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Streamed.")})
	for rs.Next() {
	}
	limited("a streamed response", rs.Err())
	if n, j := e.conversations("alice"), e.journal(conv, "alice"); n != 1 || len(j) != 2 || len(e.llm.Requests()) != 1 {
		t.Fatalf("refused requests stored: %d conversations, %d messages in the first, %d model calls", n, len(j), len(e.llm.Requests()))
	}
	bc := e.client(bobToken)
	bob, err := bc.Chat.Completions.New(e.ctx(), oai.ChatCompletionNewParams{Model: agentID, Messages: hist})
	if err != nil || bob.Choices[0].Message.Content != "Hi Bob." {
		t.Fatalf("bob: %v %v", bob, err)
	}
}
