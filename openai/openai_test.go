package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
)

const testKey = "sk-test-secret-key-123"

func newLLM(t *testing.T, mod ...func(*openai.Options)) (*openai.LLM, *llmtest.Server) {
	t.Helper()
	s := llmtest.NewServer()
	t.Cleanup(s.Close)
	o := openai.Options{BaseURL: s.URL(), APIKey: testKey, Model: "test-model", Timeout: 5 * time.Second}
	for _, m := range mod {
		m(&o)
	}
	l, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

var hello = agentik.ModelRequest{
	System:   "be brief",
	Messages: []agentik.ModelMessage{{Role: "user", Content: []agentik.Content{agentik.Text("hi")}}},
}

// generate runs one call and returns the response, the deltas and the error.
func generate(t *testing.T, l *openai.LLM, req agentik.ModelRequest) (agentik.ModelResponse, []agentik.ModelDelta, error) {
	t.Helper()
	var deltas []agentik.ModelDelta
	resp, err := l.Generate(context.Background(), req, func(d agentik.ModelDelta) { deltas = append(deltas, d) })
	if err != nil && strings.Contains(err.Error(), testKey) {
		t.Fatalf("error leaks the API key: %v", err)
	}
	return resp, deltas, err
}

func mustGenerate(t *testing.T, l *openai.LLM, req agentik.ModelRequest) (agentik.ModelResponse, []agentik.ModelDelta) {
	t.Helper()
	resp, deltas, err := generate(t, l, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, deltas
}

func TestPlainText(t *testing.T) {
	l, s := newLLM(t)
	s.Enqueue(llmtest.Text("Hello big world"))
	resp, deltas := mustGenerate(t, l, hello)
	if resp.Text != "Hello big world" || resp.FinishReason != "stop" || len(resp.ToolCalls) != 0 {
		t.Fatalf("%+v", resp)
	}
	if resp.Tokens != (agentik.TurnTokens{Input: 10, Output: 3}) {
		t.Fatalf("tokens %+v", resp.Tokens)
	}
	if len(deltas) != 3 || deltas[0] != (agentik.ModelDelta{Kind: agentik.DeltaText, Text: "Hello "}) {
		t.Fatalf("deltas %+v", deltas)
	}
	r := s.Requests()[0]
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage || r.Model != "test-model" {
		t.Fatalf("request %s", r.Raw)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Fatalf("authorization %q", got)
	}
	if m := r.Messages; len(m) != 2 || m[0].Role != "system" || m[0].Text() != "be brief" || !m[1].IsString() || m[1].Text() != "hi" {
		t.Fatalf("messages %s", r.Raw)
	}
	if info := l.Info(); info.Name != "test-model" {
		t.Fatalf("info %+v", info)
	}
}

func TestReasoningBothFields(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			l, s := newLLM(t)
			s.Enqueue(llmtest.Stream().Role().ReasoningField(field, "Let me ", "think.").Content("Done.").Finish("stop").Done())
			resp, deltas := mustGenerate(t, l, hello)
			if resp.Reasoning != "Let me think." || resp.Text != "Done." {
				t.Fatalf("%+v", resp)
			}
			want := []agentik.ModelDelta{
				{Kind: agentik.DeltaReasoning, Text: "Let me "},
				{Kind: agentik.DeltaReasoning, Text: "think."},
				{Kind: agentik.DeltaText, Text: "Done."},
			}
			if len(deltas) != 3 || deltas[0] != want[0] || deltas[1] != want[1] || deltas[2] != want[2] {
				t.Fatalf("deltas %+v", deltas)
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
		want  []agentik.ToolCall
	}{
		{"split args", llmtest.Stream().Role().Content("Checking.").ToolCall(0, "call_a", "current_time", `{"time`, `zone":`, `"UTC"}`).Finish("tool_calls").Done(),
			[]agentik.ToolCall{{ID: "call_a", Name: "current_time", Arguments: agentik.RawJSON(`{"timezone":"UTC"}`)}}},
		{"two parallel", llmtest.ToolCalls(llmtest.Call("a", `{"x":1}`).WithID("id1"), llmtest.Call("b", `{"y":2}`).WithID("id2")),
			[]agentik.ToolCall{{ID: "id1", Name: "a", Arguments: agentik.RawJSON(`{"x":1}`)}, {ID: "id2", Name: "b", Arguments: agentik.RawJSON(`{"y":2}`)}}},
		{"index-less ollama", llmtest.Stream().Role().ToolCall(-1, "c1", "a", `{"x":1}`).ToolCall(-1, "c2", "b", `{"y":2}`).Finish("stop").Done(),
			[]agentik.ToolCall{{ID: "c1", Name: "a", Arguments: agentik.RawJSON(`{"x":1}`)}, {ID: "c2", Name: "b", Arguments: agentik.RawJSON(`{"y":2}`)}}},
		{"missing ids", llmtest.Stream().Role().ToolCall(0, "", "a", `{}`).ToolCall(1, "", "b", ``).Finish("tool_calls").Done(),
			[]agentik.ToolCall{{ID: "call_0", Name: "a", Arguments: agentik.RawJSON(`{}`)}, {ID: "call_1", Name: "b", Arguments: agentik.RawJSON(`{}`)}}},
		{"same index new id", llmtest.Stream().Role().ToolCall(0, "p", "a", `{}`).ToolCall(0, "q", "b", `{"z":3}`).Finish("tool_calls").Done(),
			[]agentik.ToolCall{{ID: "p", Name: "a", Arguments: agentik.RawJSON(`{}`)}, {ID: "q", Name: "b", Arguments: agentik.RawJSON(`{"z":3}`)}}},
		{"invalid args kept as string", llmtest.Stream().Role().ToolCall(0, "x", "a", `{"oops`).Finish("tool_calls").Done(),
			[]agentik.ToolCall{{ID: "x", Name: "a", Arguments: agentik.RawJSON(`"{\"oops"`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, s := newLLM(t)
			s.Enqueue(tt.reply)
			resp, _ := mustGenerate(t, l, hello)
			if len(resp.ToolCalls) != len(tt.want) {
				t.Fatalf("calls %+v", resp.ToolCalls)
			}
			for i, c := range resp.ToolCalls {
				w := tt.want[i]
				if c.ID != w.ID || c.Name != w.Name || string(c.Arguments) != string(w.Arguments) {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Arguments, w.ID, w.Name, w.Arguments)
				}
			}
		})
	}
}

func TestLengthWithTruncatedArgsFails(t *testing.T) {
	l, s := newLLM(t)
	s.Enqueue(llmtest.Stream().Role().ToolCall(0, "x", "a", `{"text":"abc`).Finish("length").Done())
	if _, _, err := generate(t, l, hello); err == nil || !strings.Contains(err.Error(), "output limit") {
		t.Fatalf("err %v", err)
	}
}

func TestUsageNullChoices(t *testing.T) {
	l, s := newLLM(t)
	s.Enqueue(llmtest.Stream().Role().Content("ok").Finish("stop").UsageNullChoices(7, 1).Done())
	resp, _ := mustGenerate(t, l, hello)
	if resp.Tokens != (agentik.TurnTokens{Input: 7, Output: 1}) {
		t.Fatalf("tokens %+v", resp.Tokens)
	}
}

func TestRetries(t *testing.T) {
	t.Run("500 then success", func(t *testing.T) {
		l, s := newLLM(t)
		s.Enqueue(llmtest.ServerError().WithHeader("Retry-After-Ms", "1"), llmtest.Text("ok"))
		if resp, _ := mustGenerate(t, l, hello); resp.Text != "ok" || len(s.Requests()) != 2 {
			t.Fatalf("%+v after %d requests", resp, len(s.Requests()))
		}
	})
	t.Run("429 retry-after then success", func(t *testing.T) {
		l, s := newLLM(t)
		s.Enqueue(llmtest.RateLimited("0"), llmtest.RateLimited("0"), llmtest.Text("ok"))
		if resp, _ := mustGenerate(t, l, hello); resp.Text != "ok" || len(s.Requests()) != 3 {
			t.Fatalf("%+v after %d requests", resp, len(s.Requests()))
		}
	})
	t.Run("retries exhausted", func(t *testing.T) {
		l, s := newLLM(t, func(o *openai.Options) { o.MaxRetries = 1 })
		s.Enqueue(llmtest.RateLimited("0"), llmtest.RateLimited("0"), llmtest.Text("never"))
		_, _, err := generate(t, l, hello)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || len(s.Requests()) != 2 {
			t.Fatalf("err %v after %d requests", err, len(s.Requests()))
		}
	})
	t.Run("retry-after wait is bounded by the timeout", func(t *testing.T) {
		l, s := newLLM(t, func(o *openai.Options) { o.Timeout = 100 * time.Millisecond })
		s.Enqueue(llmtest.RateLimited("30"), llmtest.Text("never"))
		_, _, err := generate(t, l, hello)
		if !errors.Is(err, context.DeadlineExceeded) || len(s.Requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(s.Requests()))
		}
	})
	t.Run("insufficient quota not retried", func(t *testing.T) {
		l, s := newLLM(t)
		s.Enqueue(llmtest.InsufficientQuota(), llmtest.Text("never"))
		_, _, err := generate(t, l, hello)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != "insufficient_quota" || len(s.Requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(s.Requests()))
		}
	})
	t.Run("400 not retried", func(t *testing.T) {
		l, s := newLLM(t)
		s.Enqueue(llmtest.APIError(400, "invalid_request_error", "", "bad"), llmtest.Text("never"))
		if _, _, err := generate(t, l, hello); err == nil || len(s.Requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(s.Requests()))
		}
	})
	t.Run("reset before first delta retried", func(t *testing.T) {
		l, s := newLLM(t)
		s.Enqueue(llmtest.Stream().Role().Reset(), llmtest.Text("ok"))
		if resp, _ := mustGenerate(t, l, hello); resp.Text != "ok" || len(s.Requests()) != 2 {
			t.Fatalf("%+v after %d requests", resp, len(s.Requests()))
		}
	})
}

func TestBrokenStreams(t *testing.T) {
	tests := []struct {
		name  string
		reply llmtest.Reply
		check func(error) bool
	}{
		{"reset mid-stream", llmtest.Stream().Role().Content("partial").Reset(), func(err error) bool { return err != nil }},
		{"malformed chunk", llmtest.Stream().Role().Content("a").Data(`{"choices":[{"delta":`).Finish("stop").Done(),
			func(err error) bool { return strings.Contains(err.Error(), "malformed") }},
		{"in-stream error", llmtest.Stream().Role().Content("a").StreamError("overloaded, try later").Done(),
			func(err error) bool {
				var apiErr *openai.APIError
				return errors.As(err, &apiErr) && apiErr.StatusCode == 200 && strings.Contains(err.Error(), "overloaded")
			}},
		{"no finish_reason with DONE", llmtest.Stream().Role().Content("a").Done(), func(err error) bool { return errors.Is(err, openai.ErrIncomplete) }},
		{"closed without DONE or finish", llmtest.Stream().Role().Content("a"), func(err error) bool { return errors.Is(err, openai.ErrIncomplete) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, s := newLLM(t)
			s.Enqueue(tt.reply, llmtest.Text("must not be used"))
			_, deltas, err := generate(t, l, hello)
			if err == nil || !tt.check(err) {
				t.Fatalf("err %v", err)
			}
			if len(s.Requests()) != 1 {
				t.Fatalf("retried after a delta was streamed: %d requests", len(s.Requests()))
			}
			if len(deltas) == 0 {
				t.Fatal("deltas before the failure were not delivered")
			}
		})
	}
}

func TestCancelWhileHanging(t *testing.T) {
	l, s := newLLM(t, func(o *openai.Options) { o.Timeout = time.Minute })
	g := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Content("partial").Pause(g).Hang())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.Generate(ctx, hello, nil)
		done <- err
	}()
	<-g.Reached()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Generate did not return after cancel")
	}
}

func TestIdleTimeout(t *testing.T) {
	l, s := newLLM(t, func(o *openai.Options) { o.Timeout = 100 * time.Millisecond })
	s.Enqueue(llmtest.Stream().Role().Hang())
	_, _, err := generate(t, l, hello)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

func TestContextOverflow(t *testing.T) {
	tests := []struct {
		name     string
		reply    llmtest.Reply
		overflow bool
	}{
		{"openai code", llmtest.ContextLengthExceeded(), true},
		{"vllm old top-level", llmtest.Error(400, `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 41648 tokens","type":"BadRequestError","param":null,"code":400}`), true},
		{"vllm new", llmtest.Error(400, `{"error":{"message":"This model's maximum context length is 32768 tokens.","type":"BadRequestError","param":null,"code":400}}`), true},
		{"deepseek", llmtest.APIError(400, "invalid_request_error", "invalid_request_error", "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens. Please reduce the length of the messages."), true},
		{"llama.cpp", llmtest.Error(400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`), true},
		{"anthropic style", llmtest.APIError(400, "invalid_request_error", "", "prompt is too long: 210266 tokens > 200000 maximum"), true},
		{"plain text body", llmtest.Error(400, "input exceeds the context window"), true},
		{"in stream", llmtest.Stream().Role().StreamError("context length exceeded: input exceeds context"), true},
		{"other 400", llmtest.APIError(400, "invalid_request_error", "", "Invalid value for 'messages'"), false},
		{"tpm 429", llmtest.APIError(429, "tokens", "rate_limit_exceeded", "Request too large: tokens per min exceeded the context of your plan"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, s := newLLM(t, func(o *openai.Options) { o.MaxRetries = -1 })
			s.Enqueue(tt.reply)
			_, _, err := generate(t, l, hello)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, agentik.ErrContextOverflow); got != tt.overflow {
				t.Fatalf("overflow = %v for %v", got, err)
			}
		})
	}
}

func TestNoKeyNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	l, s := newLLM(t, func(o *openai.Options) { o.APIKey = ""; o.Headers = map[string]string{"X-Title": "agentik"} })
	s.Enqueue(llmtest.Text("ok"))
	mustGenerate(t, l, hello)
	h := s.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("X-Title") != "agentik" {
		t.Fatalf("headers %v", h)
	}
}

func TestRequestFormatting(t *testing.T) {
	png := agentik.Image("image/png", []byte("\x89PNG"))
	req := agentik.ModelRequest{
		System: "sys",
		Messages: []agentik.ModelMessage{
			{Role: "summary", Content: []agentik.Content{agentik.Text("we talked")}},
			{Role: "user", Content: []agentik.Content{agentik.Text("look"), png}},
			{Role: "assistant", Reasoning: "hmm", ToolCalls: []agentik.ToolCall{
				{ID: "c1", Name: "shot", Arguments: agentik.RawJSON(`{"w":1}`)},
				{ID: "c2", Name: "fail", Arguments: nil},
			}},
			{Role: "tool", CallID: "c1", Name: "shot", Content: []agentik.Content{agentik.Text("here"), png}},
			{Role: "tool", CallID: "c2", Name: "fail", IsError: true, Content: []agentik.Content{agentik.Text("boom")}},
			{Role: "assistant", Content: []agentik.Content{agentik.Text("Done.")}},
		},
		Tools: []agentik.ToolSpec{
			{Name: "shot", Description: "screenshot", Parameters: agentik.RawJSON(`{"type":"object","properties":{"w":{"type":"integer"}}}`)},
			{Name: "bare"},
		},
	}
	l, s := newLLM(t, func(o *openai.Options) { o.ImageInput = true; o.SendReasoning = true; o.MaxTokens = 99 })
	s.Enqueue(llmtest.Text("ok"))
	mustGenerate(t, l, req)
	r := s.Requests()[0]
	roles := []string{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,system,user,assistant,tool,tool,user,assistant" {
		t.Fatalf("roles %s\n%s", got, r.Raw)
	}
	m := r.Messages
	if m[1].Text() != "Summary of the earlier conversation:\nwe talked" {
		t.Errorf("summary %q", m[1].Text())
	}
	dataURI := "data:image/png;base64," + png.Data
	if p := m[2].Parts(); m[2].IsString() || len(p) != 2 || p[0].Text != "look" || p[1].Type != "image_url" || p[1].ImageURL.URL != dataURI {
		t.Errorf("user parts %s", m[2].Content)
	}
	if string(m[3].Content) != `""` || len(m[3].ToolCalls) != 2 || m[3].ToolCalls[0].Function.Arguments != `{"w":1}` ||
		m[3].ToolCalls[1].Function.Arguments != `{}` || m[3].ToolCalls[0].Type != "function" || m[3].ReasoningContent != "hmm" {
		t.Errorf("assistant %+v", m[3])
	}
	if m[4].ToolCallID != "c1" || !m[4].IsString() || m[4].Text() != "here" || m[5].ToolCallID != "c2" || m[5].Text() != "Error: boom" {
		t.Errorf("tool messages %+v %+v", m[4], m[5])
	}
	var images int
	for _, p := range m[6].Parts() {
		if p.Type == "image_url" && p.ImageURL.URL == dataURI {
			images++
		}
	}
	if images != 1 {
		t.Errorf("tool image user message %s", m[6].Content)
	}
	if string(m[7].Content) != `"Done."` || m[7].ToolCalls != nil {
		t.Errorf("final assistant %s", m[7].Content)
	}
	if len(r.Tools) != 2 || r.Tools[0].Type != "function" || r.Tools[0].Function.Description != "screenshot" {
		t.Fatalf("tools %+v", r.Tools)
	}
	var bare map[string]any
	if err := json.Unmarshal(r.Tools[1].Function.Parameters, &bare); err != nil || bare["type"] != "object" || bare["properties"] == nil {
		t.Errorf("bare tool schema %s", r.Tools[1].Function.Parameters)
	}
	if r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 99 || r.MaxTokens != nil {
		t.Errorf("max tokens %s", r.Raw)
	}
}

func TestNoImageInputSendsNote(t *testing.T) {
	l, s := newLLM(t, func(o *openai.Options) { o.MaxTokens = 5; o.MaxTokensField = openai.MaxTokens })
	s.Enqueue(llmtest.Text("ok"))
	req := agentik.ModelRequest{Messages: []agentik.ModelMessage{
		{Role: "user", Content: []agentik.Content{agentik.Text("hi")}},
		{Role: "assistant", Reasoning: "secret thoughts", ToolCalls: []agentik.ToolCall{{ID: "c", Name: "shot", Arguments: agentik.RawJSON(`{}`)}}},
		{Role: "tool", CallID: "c", Name: "shot", Content: []agentik.Content{agentik.Image("image/png", []byte("x"))}},
	}}
	mustGenerate(t, l, req)
	r := s.Requests()[0]
	if strings.Contains(string(r.Raw), "image_url") || strings.Contains(string(r.Raw), "secret thoughts") {
		t.Fatalf("image or reasoning sent: %s", r.Raw)
	}
	if r.MaxTokens == nil || *r.MaxTokens != 5 || r.MaxCompletionTokens != nil {
		t.Fatalf("max tokens %s", r.Raw)
	}
}

func TestNewValidates(t *testing.T) {
	for _, o := range []openai.Options{
		{BaseURL: "http://x/v1"},
		{Model: "m", BaseURL: "ftp://x"},
		{Model: "m", MaxTokensField: "max"},
	} {
		if _, err := openai.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestErrorsNeverShowTheKey(t *testing.T) {
	l, s := newLLM(t)
	s.Enqueue(llmtest.APIError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: "+testKey))
	_, _, err := generate(t, l, hello) // generate fails the test on a leak
	if err == nil || !strings.Contains(err.Error(), "[redacted]") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err %v", err)
	}
}

// TestIdentify: the response's id and model are read only when asked.
func TestIdentify(t *testing.T) {
	for _, on := range []bool{false, true} {
		l, s := newLLM(t, func(o *openai.Options) { o.Identify = on })
		r := llmtest.Text("hi")
		r.Model = "served-model"
		s.Enqueue(r)
		resp, _ := mustGenerate(t, l, hello)
		if on && (resp.Model != "served-model" || !strings.HasPrefix(resp.ID, "chatcmpl-")) {
			t.Errorf("identified: %+v", resp)
		}
		if !on && (resp.Model != "" || resp.ID != "") {
			t.Errorf("not asked, yet %+v", resp)
		}
	}
}

// TestConnectionsReused: concurrent calls keep their connections to the
// model for the next ones (the net/http default keeps 2 idle per host), so
// a busy server does not dial, and with TLS handshake, per call.
func TestConnectionsReused(t *testing.T) {
	const parallel, rounds = 20, 3
	s := llmtest.NewServer()
	t.Cleanup(s.Close)
	s.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("one two three") })
	l, err := openai.New(openai.Options{BaseURL: s.URL(), Model: "m", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				if _, err := l.Generate(t.Context(), hello, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	conns := map[string]bool{}
	for _, r := range s.Requests() {
		conns[r.Remote] = true
	}
	// Without reuse: about parallel × rounds; a connection can still be
	// dialled while one being handed back is on its way to the pool.
	if len(conns) > parallel*3/2 {
		t.Fatalf("%d calls used %d connections", parallel*rounds, len(conns))
	}
	t.Logf("%d calls used %d connections", parallel*rounds, len(conns))
}

// TestSerialCallsShareOneConnection: each answer's stream is read to its
// end after [DONE], so the next call finds the connection in the pool
// (closed at [DONE], a few calls in a hundred dialled again, more under load).
func TestSerialCallsShareOneConnection(t *testing.T) {
	s := llmtest.NewServer()
	t.Cleanup(s.Close)
	s.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("one two three") })
	l, err := openai.New(openai.Options{BaseURL: s.URL(), Model: "m", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 200
	for range calls {
		if _, err := l.Generate(t.Context(), hello, nil); err != nil {
			t.Fatal(err)
		}
	}
	conns := map[string]bool{}
	for _, r := range s.Requests() {
		conns[r.Remote] = true
	}
	if len(conns) != 1 {
		t.Fatalf("%d calls one after another used %d connections", calls, len(conns))
	}
}

// TestAnswerKeptWhenTheStreamStaysOpen: a server that sends [DONE] and
// keeps the stream open is cut off (the wait past [DONE] is bounded by the
// watchdog), and the answer it sent is returned, not the cut-off's error.
func TestAnswerKeptWhenTheStreamStaysOpen(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"kept"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	l, err := openai.New(openai.Options{BaseURL: srv.URL, Model: "m", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := l.Generate(t.Context(), hello, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "kept" {
		t.Fatalf("answer %+v", resp)
	}
}

// TestRequestLeavesInOneWrite: a chat request of several KiB (its history)
// reaches the connection in one write, headers included.
func TestRequestLeavesInOneWrite(t *testing.T) {
	s := llmtest.NewServer()
	t.Cleanup(s.Close)
	s.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	var writes atomic.Int64
	tr := openai.NewTransport()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &writes}, nil
	}
	l, err := openai.New(openai.Options{BaseURL: s.URL(), Model: "m", Timeout: 10 * time.Second, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	req := hello
	req.Messages = nil
	for i := range 40 { // 40 turns of about 300 bytes: about 12 KiB of JSON
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		req.Messages = append(req.Messages, agentik.ModelMessage{Role: role, Content: []agentik.Content{agentik.Text(strings.Repeat(fmt.Sprintf("word%d ", i), 45))}})
	}
	const calls = 5
	for range calls {
		if _, err := l.Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Requests(); len(got) != calls || len(got[0].Raw) < 8<<10 {
		t.Fatalf("%d requests, the first of %d bytes: want %d of at least 8 KiB", len(got), len(got[0].Raw), calls)
	}
	if n := writes.Load(); n != calls {
		t.Fatalf("%d requests took %d writes", calls, n)
	}
}

// countingConn counts the writes to a connection. It hides the
// connection's ReadFrom, so every byte goes through Write.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}
