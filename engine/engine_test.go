package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// harness is a real engine on a real SQLite file, talking to a scripted
// OpenAI-compatible server over HTTP through the real adapter.
type harness struct {
	t     *testing.T
	llm   *llmtest.Server
	store *sqlite.Store
	path  string
	eng   *engine.Engine
	ctx   context.Context

	llmTimeout time.Duration
	hook       func(point, replyTo string) // engine.SetHook, before Start
}

type option func(*engine.Options)

func newHarness(t *testing.T, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background(), llmTimeout: 30 * time.Second}
	t.Cleanup(h.llm.Close)
	h.start(opts...)
	return h
}

func (h *harness) start(opts ...option) {
	t := h.t
	t.Helper()
	st, err := sqlite.Open(h.ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	llm, err := openai.New(openai.Options{BaseURL: h.llm.URL(), Model: "test-model", MaxRetries: 2, Timeout: h.llmTimeout})
	if err != nil {
		t.Fatal(err)
	}
	o := engine.Options{
		Store: st, Temporal: memstore.New(), Bus: bus.New(), LLM: llm,
		Tools:        tools.NewRegistry(tools.CurrentTime{}),
		SystemPrompt: "You are a test agent.",
		ToolTimeout:  5 * time.Second,
	}
	for _, f := range opts {
		f(&o)
	}
	eng, err := engine.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if h.hook != nil {
		engine.SetHook(eng, h.hook)
	}
	if err := eng.Start(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	t.Cleanup(h.stop)
}

// stop shuts the engine down and closes the store (idempotent).
func (h *harness) stop() {
	if h.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h.eng.Shutdown(ctx)
	h.store.Close()
	h.eng = nil
}

func (h *harness) conversation() (agentik.Conversation, agentik.Stream[agentik.Event]) {
	h.t.Helper()
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Title: "t"})
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := h.eng.Conversation(h.ctx, info.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	s, err := c.Events(h.ctx, agentik.LiveOnly)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { s.Close() })
	return c, s
}

func (h *harness) send(c agentik.Conversation, text string, policy ...string) agentik.SendResult {
	h.t.Helper()
	req := agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}}
	if len(policy) > 0 {
		req.IfBusy = policy[0]
	}
	res, err := c.Send(h.ctx, req)
	if err != nil {
		h.t.Fatalf("send %q: %v", text, err)
	}
	return res
}

// until collects events until one satisfies stop (included) or 60 s pass
// (a bound for a loaded machine, not a measurement).
func until(t *testing.T, s agentik.Stream[agentik.Event], stop func(agentik.Event) bool) []agentik.Event {
	t.Helper()
	var got []agentik.Event
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-s.C():
			if !ok {
				t.Fatalf("stream ended (%v) after %s", s.Err(), types(got))
			}
			got = append(got, ev)
			if stop(ev) {
				return got
			}
		case <-timeout:
			t.Fatalf("timed out after %s", types(got))
		}
	}
}

func endOf(id string) func(agentik.Event) bool {
	return func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd && ev.ReplyTo == id }
}

func types(evs []agentik.Event) string {
	var b []string
	for _, ev := range evs {
		b = append(b, ev.Type)
	}
	return strings.Join(b, ",")
}

// compact drops repeated append_text so sequences read like the SPEC.
func compact(evs []agentik.Event) string {
	var b []string
	for _, ev := range evs {
		if ev.Type == agentik.EvAppendText && len(b) > 0 && b[len(b)-1] == "append_text" {
			continue
		}
		b = append(b, ev.Type)
	}
	return strings.Join(b, ",")
}

func journal(t *testing.T, c agentik.Conversation) []agentik.Message {
	t.Helper()
	page, err := c.Messages(context.Background(), agentik.MessagesRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return page.Messages
}

func journalTypes(msgs []agentik.Message) string {
	var b []string
	for _, m := range msgs {
		b = append(b, m.Type)
	}
	return strings.Join(b, ",")
}

func TestPlainTurn(t *testing.T) {
	h := newHarness(t)
	h.llm.Enqueue(llmtest.Text("Hello there, human."))
	c, s := h.conversation()
	res := h.send(c, "hi")
	if res.Seq != 1 || !agentik.ValidID(res.MessageID) {
		t.Fatalf("send result %+v", res)
	}
	evs := until(t, s, endOf(res.MessageID))
	if got, want := compact(evs), "user_message,working,start_response,append_text,assistant_message,end"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	var text string
	var prev int64
	for _, ev := range evs {
		if ev.Type == agentik.EvAppendText {
			text += ev.Text
		}
		if ev.Cursor != 0 {
			if ev.Cursor <= prev {
				t.Fatalf("cursors not increasing: %d after %d", ev.Cursor, prev)
			}
			prev = ev.Cursor
		}
	}
	if text != "Hello there, human." {
		t.Fatalf("streamed %q", text)
	}
	end := evs[len(evs)-1]
	if end.Reason != agentik.EndCompleted || end.Tokens == nil || end.Tokens.Input != 10 {
		t.Fatalf("end %+v", end)
	}
	msgs := journal(t, c)
	if journalTypes(msgs) != "user_message,assistant_message" || msgs[1].ReplyTo != res.MessageID || msgs[1].Seq != 2 ||
		agentik.JoinText(msgs[1].Content) != "Hello there, human." || msgs[1].Tokens == nil {
		t.Fatalf("journal %+v", msgs)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 1 || len(reqs[0].Messages) != 2 || reqs[0].Messages[0].Role != "system" || reqs[0].Messages[1].Text() != "hi" {
		t.Fatalf("model request %+v", reqs)
	}
	info, _ := c.Info(h.ctx)
	if info.Working || info.Tokens == nil || info.Tokens.Output == 0 {
		t.Fatalf("info after turn %+v", info)
	}
}

func TestToolTurn(t *testing.T) {
	h := newHarness(t)
	h.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"Europe/Paris"}`).WithID("call_a")),
		llmtest.Text("It is late."))
	c, s := h.conversation()
	res := h.send(c, "what time is it?")
	evs := until(t, s, endOf(res.MessageID))
	if got, want := compact(evs), "user_message,working,tool_call,tool_result,start_response,append_text,assistant_message,end"; got != want {
		t.Fatalf("events %s\nwant %s", got, want)
	}
	msgs := journal(t, c)
	if journalTypes(msgs) != "user_message,tool_call,tool_result,assistant_message" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
	call, result := msgs[1], msgs[2]
	if call.CallID != "call_a" || call.Name != "current_time" || string(call.Arguments) != `{"timezone":"Europe/Paris"}` {
		t.Fatalf("tool call %+v", call)
	}
	if result.IsError || !strings.Contains(agentik.JoinText(result.Content), "+01:00") {
		t.Fatalf("tool result %+v", result)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	if names := reqs[0].ToolNames(); len(names) != 1 || names[0] != "current_time" {
		t.Fatalf("offered tools %v", names)
	}
	second := reqs[1].Messages
	last := second[len(second)-1]
	if len(second) != 4 || second[2].Role != "assistant" || len(second[2].ToolCalls) != 1 || last.Role != "tool" || last.ToolCallID != "call_a" {
		t.Fatalf("second request messages %+v", second)
	}
}

// pairTool returns only once two calls of it run at the same time.
type pairTool struct {
	mu      sync.Mutex
	arrived int
	both    chan struct{}
}

func (p *pairTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "pair", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (p *pairTool) Call(ctx context.Context, _ agentik.RawJSON) (agentik.ToolResult, error) {
	p.mu.Lock()
	p.arrived++
	if p.arrived == 2 {
		close(p.both)
	}
	p.mu.Unlock()
	select {
	case <-p.both:
		return agentik.ToolResult{Content: []agentik.Content{agentik.Text("together")}}, nil
	case <-ctx.Done():
		return agentik.ToolResult{}, ctx.Err()
	}
}

func TestParallelToolCallsRunConcurrently(t *testing.T) {
	pair := &pairTool{both: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) { o.Tools = tools.NewRegistry(pair) })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pair", `{}`), llmtest.Call("pair", `{}`)), llmtest.Text("done"))
	c, s := h.conversation()
	res := h.send(c, "go")
	until(t, s, endOf(res.MessageID))
	msgs := journal(t, c)
	if journalTypes(msgs) != "user_message,tool_call,tool_call,tool_result,tool_result,assistant_message" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
	for _, m := range msgs[3:5] {
		if m.IsError || agentik.JoinText(m.Content) != "together" {
			t.Fatalf("a call did not run concurrently: %+v", m)
		}
	}
	second := h.llm.Requests()[1].Messages
	if len(second) != 5 || second[3].Role != "tool" || second[4].Role != "tool" || second[3].ToolCallID == second[4].ToolCallID {
		t.Fatalf("tool results fed back: %+v", second)
	}
}

func TestMaxToolRoundsThenUsable(t *testing.T) {
	h := newHarness(t, func(o *engine.Options) { o.MaxToolRounds = 2 })
	h.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`)),
		llmtest.ToolCalls(llmtest.Call("current_time", `{}`)),
		llmtest.Text("fine now"))
	c, s := h.conversation()
	res := h.send(c, "loop")
	evs := until(t, s, endOf(res.MessageID))
	if evs[len(evs)-1].Reason != agentik.EndError {
		t.Fatalf("end %+v", evs[len(evs)-1])
	}
	msgs := journal(t, c)
	last := msgs[len(msgs)-1]
	if last.Type != agentik.MsgError || last.Code != agentik.CodeToolRoundsExceeded || last.ReplyTo != res.MessageID {
		t.Fatalf("last journal entry %+v", last)
	}
	res2 := h.send(c, "again")
	evs = until(t, s, endOf(res2.MessageID))
	if evs[len(evs)-1].Reason != agentik.EndCompleted {
		t.Fatalf("conversation not usable after failure: %s", types(evs))
	}
}

func TestModelFailures(t *testing.T) {
	cases := []struct {
		name    string
		replies []llmtest.Reply
		code    string // "" = the turn completes
	}{
		{"500 then success", []llmtest.Reply{llmtest.APIError(500, "server_error", "", "boom"), llmtest.Text("ok")}, ""},
		{"429 then success", []llmtest.Reply{llmtest.RateLimited("0"), llmtest.Text("ok")}, ""},
		{"500 three times", []llmtest.Reply{llmtest.APIError(500, "server_error", "", "a"), llmtest.APIError(500, "server_error", "", "b"), llmtest.APIError(500, "server_error", "", "c")}, agentik.CodeLLMError},
		{"reset mid-stream", []llmtest.Reply{llmtest.Stream().Role().Content("Hel").Reset()}, agentik.CodeLLMError},
		{"malformed chunk", []llmtest.Reply{llmtest.Stream().Role().Content("Hel").Raw("data: {not json\n\n")}, agentik.CodeLLMError},
		{"no finish", []llmtest.Reply{llmtest.Stream().Role().Content("Hel")}, agentik.CodeLLMError},
		{"context overflow", []llmtest.Reply{llmtest.APIError(400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 8192 tokens.")}, agentik.CodeContextOverflow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.llm.Enqueue(tc.replies...)
			c, s := h.conversation()
			res := h.send(c, "hi")
			evs := until(t, s, endOf(res.MessageID))
			msgs := journal(t, c)
			last := msgs[len(msgs)-1]
			if tc.code == "" {
				if last.Type != agentik.MsgAssistant || evs[len(evs)-1].Reason != agentik.EndCompleted {
					t.Fatalf("want an answer, got %s / %+v", types(evs), last)
				}
				return
			}
			if last.Type != agentik.MsgError || last.Code != tc.code || evs[len(evs)-1].Reason != agentik.EndError {
				t.Fatalf("want error %s, got %+v (%s)", tc.code, last, types(evs))
			}
			if !strings.Contains(types(evs), "error") {
				t.Fatalf("no durable error event: %s", types(evs))
			}
			h.llm.Enqueue(llmtest.Text("recovered"))
			res2 := h.send(c, "again")
			evs = until(t, s, endOf(res2.MessageID))
			if evs[len(evs)-1].Reason != agentik.EndCompleted {
				t.Fatalf("not usable after failure: %s", types(evs))
			}
		})
	}
}

func TestModelTimeout(t *testing.T) {
	h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background(), llmTimeout: 200 * time.Millisecond}
	t.Cleanup(h.llm.Close)
	h.start()
	h.llm.Enqueue(llmtest.Stream().Role().Hang())
	c, s := h.conversation()
	res := h.send(c, "hi")
	until(t, s, endOf(res.MessageID))
	msgs := journal(t, c)
	if last := msgs[len(msgs)-1]; last.Code != agentik.CodeLLMTimeout {
		t.Fatalf("last %+v", last)
	}
}

func TestInterruptMidStreamKeepsPartialAnswer(t *testing.T) {
	h := newHarness(t)
	gate := llmtest.NewGate()
	h.llm.Enqueue(llmtest.Stream().Role().Content("Hello ", "wor").Pause(gate).Content("ld").Finish("stop").Done())
	c, s := h.conversation()
	res := h.send(c, "hi")
	until(t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvAppendText && ev.Text == "wor" })
	<-gate.Reached()
	ok, err := c.Interrupt(h.ctx)
	if err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	evs := until(t, s, endOf(res.MessageID))
	if got := compact(evs); got != "assistant_message,interrupted,end" {
		t.Fatalf("events %s", got)
	}
	if evs[1].Reason != agentik.ReasonUser || evs[2].Reason != agentik.EndInterrupted {
		t.Fatalf("reasons %+v %+v", evs[1], evs[2])
	}
	msgs := journal(t, c)
	if len(msgs) != 2 || !msgs[1].Interrupted || agentik.JoinText(msgs[1].Content) != "Hello wor" {
		t.Fatalf("journal %+v", msgs)
	}
	gate.Release()
	if ok, _ := c.Interrupt(h.ctx); ok {
		t.Fatal("interrupt of an idle conversation reported true")
	}
}

// blockTool blocks until its context ends and says when it started.
type blockTool struct{ started chan struct{} }

func (b blockTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "block", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (b blockTool) Call(ctx context.Context, _ agentik.RawJSON) (agentik.ToolResult, error) {
	close(b.started)
	<-ctx.Done()
	return agentik.ToolResult{}, ctx.Err()
}

func TestInterruptMidTool(t *testing.T) {
	bt := blockTool{started: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) { o.Tools = tools.NewRegistry(bt); o.ToolTimeout = time.Hour })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("block", `{}`)))
	c, s := h.conversation()
	res := h.send(c, "block")
	<-bt.started
	if ok, _ := c.Interrupt(h.ctx); !ok {
		t.Fatal("interrupt reported idle")
	}
	evs := until(t, s, endOf(res.MessageID))
	// The call that was running has its result — cut short — in the
	// journal before the turn closes (issue 44.1).
	if got := compact(evs); !strings.HasSuffix(got, "tool_call,tool_failed,interrupted,end") {
		t.Fatalf("events %s", got)
	}
	if len(h.llm.Requests()) != 1 {
		t.Fatal("the model was called again after the interrupt")
	}
	msgs := journal(t, c)
	last := msgs[len(msgs)-1]
	if last.Type != agentik.MsgToolResult || !last.IsError || agentik.JoinText(last.Content) != agentik.ToolInterruptedText {
		t.Fatalf("journal %s: last %+v", journalTypes(msgs), last)
	}
	// The model of the next turn sees the call and how it ended.
	h.llm.Enqueue(llmtest.Text("ok"))
	res = h.send(c, "again")
	until(t, s, endOf(res.MessageID))
	req := h.llm.Requests()[1]
	var sawCall, sawResult bool
	for _, m := range req.Messages {
		sawCall = sawCall || (m.Role == "assistant" && len(m.ToolCalls) == 1 && m.ToolCalls[0].Function.Name == "block")
		sawResult = sawResult || (m.Role == "tool" && strings.Contains(m.Text(), agentik.ToolInterruptedText))
	}
	if !sawCall || !sawResult {
		t.Fatalf("the next request does not show the cut round: %+v", req.Messages)
	}
}

func TestToolTimeoutIsAResultTheModelSees(t *testing.T) {
	bt := blockTool{started: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) { o.Tools = tools.NewRegistry(bt); o.ToolTimeout = 100 * time.Millisecond })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("block", `{}`), llmtest.Call("nope", `{}`)), llmtest.Text("sorry"))
	c, s := h.conversation()
	res := h.send(c, "block")
	evs := until(t, s, endOf(res.MessageID))
	if n := strings.Count(types(evs), "tool_failed"); n != 2 {
		t.Fatalf("want two tool_failed, got %s", types(evs))
	}
	second := h.llm.Requests()[1].Messages
	var texts []string
	for _, m := range second {
		if m.Role == "tool" {
			texts = append(texts, m.Text())
		}
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "did not answer") || !strings.Contains(texts[1], "unknown tool") {
		t.Fatalf("tool messages %q", texts)
	}
}

func TestBusyPolicies(t *testing.T) {
	t.Run("enqueue", func(t *testing.T) {
		h := newHarness(t)
		gate := llmtest.NewGate()
		h.llm.Enqueue(llmtest.Stream().Role().Content("first").Pause(gate).Finish("stop").Done(), llmtest.Text("second"))
		c, s := h.conversation()
		r1 := h.send(c, "one")
		<-gate.Reached()
		r2 := h.send(c, "two")
		if r2.Seq != 2 {
			t.Fatalf("queued message seq %d", r2.Seq)
		}
		gate.Release()
		until(t, s, endOf(r2.MessageID))
		msgs := journal(t, c)
		if journalTypes(msgs) != "user_message,user_message,assistant_message,assistant_message" ||
			msgs[2].ReplyTo != r1.MessageID || msgs[3].ReplyTo != r2.MessageID {
			t.Fatalf("journal %+v", msgs)
		}
		reqs := h.llm.Requests()
		if n := len(reqs[0].Messages); n != 2 {
			t.Fatalf("turn 1 saw %d messages", n)
		}
		m := reqs[1].Messages
		if len(m) != 4 || m[1].Text() != "one" || m[2].Role != "assistant" || m[3].Text() != "two" {
			t.Fatalf("turn 2 context %+v", m)
		}
	})
	t.Run("reject", func(t *testing.T) {
		h := newHarness(t)
		gate := llmtest.NewGate()
		h.llm.Enqueue(llmtest.Stream().Role().Content("first").Pause(gate).Finish("stop").Done())
		c, s := h.conversation()
		r1 := h.send(c, "one")
		<-gate.Reached()
		_, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("two")}, IfBusy: agentik.BusyReject})
		if agentik.ErrorCode(err) != agentik.EBusy {
			t.Fatalf("reject: %v", err)
		}
		gate.Release()
		until(t, s, endOf(r1.MessageID))
		if got := journalTypes(journal(t, c)); got != "user_message,assistant_message" {
			t.Fatalf("journal %s", got)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		h := newHarness(t)
		gate := llmtest.NewGate()
		h.llm.Enqueue(llmtest.Stream().Role().Content("first").Pause(gate).Finish("stop").Done(), llmtest.Text("second"))
		c, s := h.conversation()
		r1 := h.send(c, "one")
		until(t, s, func(ev agentik.Event) bool { return ev.Text == "first" })
		r2 := h.send(c, "two", agentik.BusyInterrupt)
		evs := until(t, s, endOf(r2.MessageID))
		var sawInterrupt bool
		for _, ev := range evs {
			if ev.Type == agentik.EvInterrupted && ev.ReplyTo == r1.MessageID && ev.Reason == agentik.ReasonBusyPolicy {
				sawInterrupt = true
			}
		}
		if !sawInterrupt {
			t.Fatalf("no busy_policy interrupt: %s", types(evs))
		}
		msgs := journal(t, c)
		if journalTypes(msgs) != "user_message,user_message,assistant_message,assistant_message" || !msgs[2].Interrupted || msgs[3].Interrupted {
			t.Fatalf("journal %+v", msgs)
		}
		gate.Release()
	})
}

func TestInvalidSendStoresNothing(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	bad := []agentik.SendRequest{
		{},
		{Content: []agentik.Content{{Type: "text"}}},
		{Content: []agentik.Content{{Type: "audio"}}},
		{Content: []agentik.Content{agentik.Image("image/png", []byte{1})}}, // the model takes no images
		{Content: []agentik.Content{agentik.Text("x")}, IfBusy: "sometimes"},
	}
	for _, req := range bad {
		if _, err := c.Send(h.ctx, req); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("%+v: %v", req, err)
		}
	}
	if n := len(journal(t, c)); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
}

func TestCrashRecoveryResumesOpenTurns(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	h.stop()

	// A message acknowledged by a process that died before answering.
	st, err := sqlite.Open(h.ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	m := agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("are you there?")}}
	if _, _, err := st.Commit(h.ctx, agentik.Write{ConversationID: c.ID(), Events: []agentik.Event{agentik.MessageEvent(&m)}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h.llm.Enqueue(llmtest.Text("yes, back"))
	h.start()
	c2, err := h.eng.Conversation(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c2.Events(h.ctx, 0)
	defer s.Close()
	until(t, s, endOf(m.ID))
	msgs := journal(t, c2)
	if journalTypes(msgs) != "user_message,assistant_message" || msgs[1].ReplyTo != m.ID {
		t.Fatalf("journal %+v", msgs)
	}
	open, _ := h.store.OpenTurns(h.ctx)
	if len(open) != 0 {
		t.Fatalf("open turns left: %+v", open)
	}
}

func TestRestartInterruptPolicyClosesOpenTurns(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	h.stop()
	st, _ := sqlite.Open(h.ctx, h.path)
	m := agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("x")}}
	st.Commit(h.ctx, agentik.Write{ConversationID: c.ID(), Events: []agentik.Event{agentik.MessageEvent(&m)}})
	st.Close()
	h.start(func(o *engine.Options) { o.OnRestart = engine.RestartInterrupt })
	evs, _ := h.store.Events(h.ctx, c.ID(), 0, 100)
	last := evs[len(evs)-1]
	if last.Type != agentik.EvInterrupted || last.Reason != agentik.ReasonRestart || last.ReplyTo != m.ID {
		t.Fatalf("last event %+v", last)
	}
	if len(h.llm.Requests()) != 0 {
		t.Fatal("the model was called")
	}
}

func TestEventsReplayResumeAndLiveJoin(t *testing.T) {
	h := newHarness(t)
	h.llm.Enqueue(llmtest.Text("one two three"))
	c, s := h.conversation()
	r1 := h.send(c, "first")
	until(t, s, endOf(r1.MessageID))

	all, err := c.Events(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := until(t, all, func(ev agentik.Event) bool { return ev.Type == agentik.EvAssistantMessage })
	all.Close()
	if types(got) != "user_message,assistant_message" {
		t.Fatalf("replay %s", types(got))
	}
	resume, _ := c.Events(h.ctx, got[0].Cursor)
	defer resume.Close()
	if ev := <-resume.C(); ev.Cursor != got[1].Cursor {
		t.Fatalf("resume delivered %+v, want cursor %d", ev, got[1].Cursor)
	}

	// Join a running turn: working, then the partial text as one delta.
	gate := llmtest.NewGate()
	h.llm.Enqueue(llmtest.Stream().Role().Content("par", "tial").Pause(gate).Content(" end").Finish("stop").Done())
	r2 := h.send(c, "second")
	until(t, s, func(ev agentik.Event) bool { return ev.Text == "tial" })
	<-gate.Reached()
	join, _ := c.Events(h.ctx, agentik.LiveOnly)
	defer join.Close()
	gate.Release()
	evs := until(t, join, endOf(r2.MessageID))
	if compact(evs) != "working,start_response,append_text,assistant_message,end" || evs[2].Text != "partial" || evs[3].Text != " end" {
		t.Fatalf("join %s %+v", types(evs), evs)
	}
	// The resumed stream saw the second turn without repeats.
	evs = until(t, resume, endOf(r2.MessageID))
	var cursors []int64
	for _, ev := range evs {
		if ev.Cursor != 0 {
			cursors = append(cursors, ev.Cursor)
		}
	}
	if len(cursors) != 2 || cursors[0] <= got[1].Cursor {
		t.Fatalf("resume cursors %v", cursors)
	}
}

func TestTemporalConversationNeverReachesTheStore(t *testing.T) {
	h := newHarness(t)
	h.llm.Enqueue(llmtest.Text("ephemeral"))
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Temporal: true})
	if err != nil || !info.Temporal {
		t.Fatalf("%+v %v", info, err)
	}
	c, _ := h.eng.Conversation(h.ctx, info.ID)
	s, _ := c.Events(h.ctx, agentik.LiveOnly)
	defer s.Close()
	res := h.send(c, "hi")
	until(t, s, endOf(res.MessageID))
	if got := journalTypes(journal(t, c)); got != "user_message,assistant_message" {
		t.Fatalf("journal %s", got)
	}
	if _, err := h.store.GetConversation(h.ctx, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("temporal conversation in the store: %v", err)
	}
	if err := h.eng.DeleteConversation(h.ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.Conversation(h.ctx, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestOtherPrincipalsSeeNothing(t *testing.T) {
	h := newHarness(t)
	alice := agentik.WithPrincipal(h.ctx, "alice")
	bob := agentik.WithPrincipal(h.ctx, "bob")
	info, err := h.eng.CreateConversation(alice, agentik.CreateRequest{Title: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.Conversation(bob, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("bob got alice's conversation: %v", err)
	}
	if _, err := h.eng.RenameConversation(bob, info.ID, "x"); !agentik.IsNotFound(err) {
		t.Fatalf("bob renamed: %v", err)
	}
	if err := h.eng.DeleteConversation(bob, info.ID); !agentik.IsNotFound(err) {
		t.Fatalf("bob deleted: %v", err)
	}
	list, _ := h.eng.ListConversations(bob, agentik.ListRequest{})
	if len(list.Conversations) != 0 {
		t.Fatalf("bob lists %+v", list)
	}
	list, _ = h.eng.ListConversations(alice, agentik.ListRequest{})
	if len(list.Conversations) != 1 || list.Conversations[0].Title != "secret" {
		t.Fatalf("alice lists %+v", list)
	}
}

func TestAgentEventsInOrder(t *testing.T) {
	h := newHarness(t)
	s, err := h.eng.Events(h.ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, _ := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{})
	h.eng.RenameConversation(h.ctx, info.ID, "renamed")
	h.eng.DeleteConversation(h.ctx, info.ID)
	var got []string
	var prev int64
	for len(got) < 3 {
		ev := <-s.C()
		if ev.Cursor <= prev {
			t.Fatalf("cursor %d after %d", ev.Cursor, prev)
		}
		prev = ev.Cursor
		got = append(got, ev.Type)
	}
	if strings.Join(got, ",") != "created,renamed,deleted" {
		t.Fatalf("agent events %v", got)
	}
	replay, _ := h.eng.Events(h.ctx, 0)
	defer replay.Close()
	if ev := <-replay.C(); ev.Type != agentik.AgentEvCreated || ev.Conversation == nil || ev.Conversation.ID != info.ID {
		t.Fatalf("replay %+v", ev)
	}
}

func TestShutdownInterruptsRunningTurnAndEndsStreams(t *testing.T) {
	h := newHarness(t)
	gate := llmtest.NewGate()
	h.llm.Enqueue(llmtest.Stream().Role().Content("half").Pause(gate).Finish("stop").Done())
	c, s := h.conversation()
	res := h.send(c, "hi")
	until(t, s, func(ev agentik.Event) bool { return ev.Text == "half" })
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond) // the drain timeout
	defer cancel()
	if err := h.eng.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	gate.Release()
	var evs []agentik.Event
	for ev := range s.C() {
		evs = append(evs, ev)
	}
	if !strings.Contains(types(evs), "interrupted") {
		t.Fatalf("stream %s", types(evs))
	}
	if _, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("late")}}); agentik.ErrorCode(err) != agentik.EUnavailable {
		t.Fatalf("send after shutdown: %v", err)
	}
	stored, _ := h.store.Events(h.ctx, c.ID(), 0, 100)
	last := stored[len(stored)-1]
	if last.Type != agentik.EvInterrupted || last.Reason != agentik.ReasonShutdown || last.ReplyTo != res.MessageID {
		t.Fatalf("last stored event %+v", last)
	}
}

func TestConcurrentConversations(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{})
			if err != nil {
				failed.Add(1)
				return
			}
			c, _ := h.eng.Conversation(h.ctx, info.ID)
			s, _ := c.Events(h.ctx, agentik.LiveOnly)
			defer s.Close()
			for j := 0; j < 3; j++ {
				res, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}})
				if err != nil {
					failed.Add(1)
					return
				}
				for ev := range s.C() {
					if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
						if ev.Reason != agentik.EndCompleted {
							failed.Add(1)
						}
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d failures", failed.Load())
	}
}

func TestArgumentsNotJSONNeverCorruptTheJournal(t *testing.T) {
	h := newHarness(t)
	h.llm.Enqueue(llmtest.Stream().Role().ToolCall(0, "call_x", "current_time", `{"timezone":`).Finish("tool_calls").Done(), llmtest.Text("ok"))
	c, s := h.conversation()
	res := h.send(c, "x")
	until(t, s, endOf(res.MessageID))
	for _, m := range journal(t, c) {
		if m.Type == agentik.MsgToolCall && !json.Valid(m.Arguments) {
			t.Fatalf("journal holds invalid JSON %s", m.Arguments)
		}
		if m.Type == agentik.MsgToolResult && !m.IsError {
			t.Fatalf("a call with broken arguments ran: %+v", m)
		}
	}
}

func TestClientToolRoundTrip(t *testing.T) {
	h := newHarness(t)
	pick := agentik.ToolSpec{Name: "pick_color", Description: "Ask the user to pick a color", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	h.llm.Enqueue(
		llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_ui"), llmtest.Call("current_time", `{}`).WithID("call_srv")),
		llmtest.Text("You picked blue."))
	c, s := h.conversation()
	res, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("pick")}, ClientTools: []agentik.ToolSpec{pick}})
	if err != nil {
		t.Fatal(err)
	}
	evs := until(t, s, endOf(res.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndClientTools {
		t.Fatalf("end %+v (%s)", end, types(evs))
	}
	if names := h.llm.Requests()[0].ToolNames(); len(names) != 2 || names[1] != "pick_color" {
		t.Fatalf("offered %v", names)
	}
	// Wrong results are refused and change nothing.
	for _, bad := range [][]agentik.ClientToolResult{
		{{CallID: "call_srv", Content: []agentik.Content{agentik.Text("x")}}},
		{{CallID: "nope"}},
	} {
		if _, err := c.Send(h.ctx, agentik.SendRequest{ToolResults: bad}); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Fatalf("bad results %+v: %v", bad, err)
		}
	}
	before := len(journal(t, c))
	res2, err := c.Send(h.ctx, agentik.SendRequest{ToolResults: []agentik.ClientToolResult{{CallID: "call_ui", Content: []agentik.Content{agentik.Text("blue")}}}})
	if err != nil || res2.MessageID != res.MessageID {
		t.Fatalf("results: %+v %v", res2, err)
	}
	evs = until(t, s, endOf(res.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
		t.Fatalf("continued turn %s", types(evs))
	}
	msgs := journal(t, c)
	if len(msgs) != before+2 || msgs[before].Type != agentik.MsgToolResult || msgs[before].CallID != "call_ui" ||
		msgs[len(msgs)-1].Type != agentik.MsgAssistant || msgs[len(msgs)-1].ReplyTo != res.MessageID {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
	second := h.llm.Requests()[1].Messages
	var toolIDs []string
	for _, m := range second {
		if m.Role == "tool" {
			toolIDs = append(toolIDs, m.ToolCallID+"="+m.Text())
		}
	}
	if len(toolIDs) != 2 || toolIDs[0] != "call_ui=blue" || !strings.HasPrefix(toolIDs[1], "call_srv=") {
		t.Fatalf("tool results fed back %v", toolIDs)
	}
}

func TestNewMessageAbandonsWaitingClientTurn(t *testing.T) {
	h := newHarness(t)
	pick := agentik.ToolSpec{Name: "pick", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pick", `{}`)), llmtest.Text("fresh"))
	c, s := h.conversation()
	res, _ := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("a")}, ClientTools: []agentik.ToolSpec{pick}})
	until(t, s, endOf(res.MessageID))
	res2 := h.send(c, "never mind")
	evs := until(t, s, endOf(res2.MessageID))
	var abandoned bool
	for _, ev := range evs {
		if ev.Type == agentik.EvInterrupted && ev.ReplyTo == res.MessageID {
			abandoned = true
		}
	}
	if !abandoned {
		t.Fatalf("waiting turn not closed: %s", types(evs))
	}
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns %+v", open)
	}
	if _, err := c.Send(h.ctx, agentik.SendRequest{ToolResults: []agentik.ClientToolResult{{CallID: "x"}}}); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("late results: %v", err)
	}
}

func TestCreateWithGivenID(t *testing.T) {
	h := newHarness(t)
	id := agentik.NewID()
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{ID: id})
	if err != nil || info.ID != id {
		t.Fatalf("%+v %v", info, err)
	}
	if _, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{ID: id}); agentik.ErrorCode(err) != agentik.EConflict {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{ID: "thread-1"}); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("bad id: %v", err)
	}
}

func TestDeleteEndsStreamsWithClosing(t *testing.T) {
	h := newHarness(t)
	c, s := h.conversation()
	if err := h.eng.DeleteConversation(h.ctx, c.ID()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range s.C() {
		got = append(got, ev.Type)
	}
	if strings.Join(got, ",") != agentik.EvConversationClosing || !agentik.IsNotFound(s.Err()) {
		t.Fatalf("stream got %v, err %v", got, s.Err())
	}
}

func TestIdleTemporalConversationIsClosed(t *testing.T) {
	h := newHarness(t, func(o *engine.Options) { o.TemporalIdle = 20 * time.Millisecond })
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Temporal: true})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := h.eng.Conversation(h.ctx, info.ID)
		if agentik.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle temporal conversation still there: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling for a timer-driven sweep
	}
}

func TestSlowSubscriberIsCutOffWithoutStallingTheTurn(t *testing.T) {
	h := newHarness(t)
	words := make([]string, 3000)
	for i := range words {
		words[i] = "w "
	}
	h.llm.Enqueue(llmtest.Stream().Role().Content(words...).Finish("stop").Done())
	c, s := h.conversation()
	slow, err := c.Events(h.ctx, agentik.LiveOnly) // never read until the turn ends
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	res := h.send(c, "talk")
	until(t, s, endOf(res.MessageID)) // the turn completes while slow reads nothing
	n := 0
	for range slow.C() {
		n++
	}
	if slow.Err() != agentik.ErrSlowSubscriber {
		t.Fatalf("slow subscriber ended with %v after %d events", slow.Err(), n)
	}
	// It resumes by cursor and misses no durable event.
	again, _ := c.Events(h.ctx, 0)
	defer again.Close()
	evs := until(t, again, func(ev agentik.Event) bool { return ev.Type == agentik.EvAssistantMessage })
	if types(evs) != "user_message,assistant_message" {
		t.Fatalf("resume %s", types(evs))
	}
}

func TestPerPrincipalLimits(t *testing.T) {
	h := newHarness(t, func(o *engine.Options) { o.MaxConcurrentTurns = 1; o.MessagesPerMinute = 3 })
	gate := llmtest.NewGate()
	defer gate.Release()
	h.llm.Enqueue(llmtest.Stream().Role().Content("x").Pause(gate).Finish("stop").Done())
	alice := agentik.WithPrincipal(h.ctx, "alice")
	open := func(ctx context.Context) agentik.Conversation {
		info, err := h.eng.CreateConversation(ctx, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := h.eng.Conversation(ctx, info.ID)
		return c
	}
	msg := agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}}
	a1, a2 := open(alice), open(alice)
	if _, err := a1.Send(alice, msg); err != nil {
		t.Fatal(err)
	}
	<-gate.Reached()
	// A second conversation would be a second concurrent turn.
	_, err := a2.Send(alice, msg)
	if agentik.ErrorCode(err) != agentik.ERateLimited || agentik.RetryAfter(err) <= 0 {
		t.Fatalf("concurrent turns: %v", err)
	}
	if n := len(journal(t, a2)); n != 0 {
		t.Fatalf("refused message stored (%d)", n)
	}
	// Queuing on the running conversation is fine, until the rate runs out.
	if _, err := a1.Send(alice, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Send(alice, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Send(alice, msg); agentik.ErrorCode(err) != agentik.ERateLimited {
		t.Fatalf("fourth message in a minute: %v", err)
	}
	// Another principal has its own budget.
	bob := agentik.WithPrincipal(h.ctx, "bob")
	h.llm.Enqueue(llmtest.Text("bob"))
	if _, err := open(bob).Send(bob, msg); err != nil {
		t.Fatalf("bob: %v", err)
	}
}

// TestEndedTurnFreesItsCount: a turn stops counting against its owner's
// concurrent turns when its end is published, not when its loop later lets
// go of the conversation: a client that saw the end may start a turn in
// another conversation at once.
func TestEndedTurnFreesItsCount(t *testing.T) {
	at, release := make(chan string, 1), make(chan struct{})
	h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background(),
		llmTimeout: 30 * time.Second, hook: func(p, replyTo string) {
			if p == "ended" {
				at <- replyTo
				<-release
			}
		}}
	t.Cleanup(h.llm.Close)
	h.start(func(o *engine.Options) { o.MaxConcurrentTurns = 1 })
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free) // before the engine stops, on failure too
	h.llm.Enqueue(llmtest.Text("one"), llmtest.Text("two"))
	alice := agentik.WithPrincipal(h.ctx, "alice")
	open := func() agentik.Conversation {
		info, err := h.eng.CreateConversation(alice, agentik.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := h.eng.Conversation(alice, info.ID)
		return c
	}
	msg := agentik.SendRequest{Content: []agentik.Content{agentik.Text("hi")}}
	a1, a2 := open(), open()
	r, err := a1.Send(alice, msg)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-at; got != r.MessageID { // a1's loop holds here, after the end
		t.Fatalf("ended %s, want %s", got, r.MessageID)
	}
	if _, err := a2.Send(alice, msg); err != nil {
		t.Fatalf("a turn in another conversation after the end: %v", err)
	}
	free()
	<-at // a2's turn ended too
}

func TestInterruptTurnTargetsOneTurn(t *testing.T) {
	h := newHarness(t)
	gate := llmtest.NewGate()
	h.llm.Enqueue(llmtest.Stream().Role().Content("first").Pause(gate).Finish("stop").Done(), llmtest.Text("third"))
	c, s := h.conversation()
	r1 := h.send(c, "one")
	until(t, s, func(ev agentik.Event) bool { return ev.Text == "first" })
	r2 := h.send(c, "two")
	r3 := h.send(c, "three")
	ti := c
	// The queued turn is withdrawn and closed; the running one goes on.
	if ok, err := ti.InterruptTurn(h.ctx, r2.MessageID); !ok || err != nil {
		t.Fatalf("withdraw queued: %v %v", ok, err)
	}
	evs := until(t, s, endOf(r2.MessageID))
	if last := evs[len(evs)-2]; last.Type != agentik.EvInterrupted || last.ReplyTo != r2.MessageID {
		t.Fatalf("withdrawn turn: %s", types(evs))
	}
	gate.Release()
	until(t, s, endOf(r3.MessageID))
	msgs := journal(t, c)
	var replies []string
	for _, m := range msgs {
		if m.Type == agentik.MsgAssistant {
			replies = append(replies, m.ReplyTo)
		}
	}
	if len(replies) != 2 || replies[0] != r1.MessageID || replies[1] != r3.MessageID {
		t.Fatalf("answered %v, want turns 1 and 3", replies)
	}
	if ok, _ := ti.InterruptTurn(h.ctx, r1.MessageID); ok {
		t.Fatal("a finished turn reported interrupted")
	}
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns %+v", open)
	}
}

// ownTimeout is a blocking tool with its own, shorter timeout.
type ownTimeout struct{ blockTool }

func (ownTimeout) Timeout() time.Duration { return 50 * time.Millisecond }

func TestToolsOwnTimeoutOverridesTheDefault(t *testing.T) {
	bt := ownTimeout{blockTool{started: make(chan struct{})}}
	h := newHarness(t, func(o *engine.Options) { o.Tools = tools.NewRegistry(bt); o.ToolTimeout = time.Hour })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("block", `{}`)), llmtest.Text("ok"))
	c, s := h.conversation()
	res := h.send(c, "x")
	evs := until(t, s, endOf(res.MessageID))
	if !strings.Contains(types(evs), "tool_failed") {
		t.Fatalf("events %s", types(evs))
	}
	for _, m := range journal(t, c) {
		if m.Type == agentik.MsgToolResult && !strings.Contains(agentik.JoinText(m.Content), "50ms") {
			t.Fatalf("result %q does not name the tool's own timeout", agentik.JoinText(m.Content))
		}
	}
}

func TestListWhileSendingDoesNotDeadlock(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := h.eng.ListConversations(h.ctx, agentik.ListRequest{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var senders sync.WaitGroup
	for i := 0; i < 10; i++ {
		senders.Add(1)
		go func() {
			defer senders.Done()
			c, s := h.conversation()
			for j := 0; j < 3; j++ {
				res := h.send(c, "hi")
				until(t, s, endOf(res.MessageID))
			}
		}()
	}
	senders.Wait()
	close(stop)
	wg.Wait()
}

func TestInterruptDuringToolKeepsTextOnce(t *testing.T) {
	bt := blockTool{started: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) { o.Tools = tools.NewRegistry(bt); o.ToolTimeout = time.Hour })
	h.llm.Enqueue(llmtest.Stream().Role().Content("Let me check.").ToolCall(0, "call_b", "block", "{}").Finish("tool_calls").Done())
	c, s := h.conversation()
	res := h.send(c, "go")
	<-bt.started
	c.Interrupt(h.ctx)
	until(t, s, endOf(res.MessageID))
	n := 0
	for _, m := range journal(t, c) {
		if m.Type == agentik.MsgAssistant {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the text before the tool call was journaled %d times: %s", n, journalTypes(journal(t, c)))
	}
}

// The text a model writes before its tool calls is stored as an
// assistant message marked continued: it does not close the turn, which
// stays open in the store while its tools run (a crash then finds it
// unclosed and recovers it), and closes with its real answer.
func TestTextBeforeAToolRoundLeavesTheTurnOpen(t *testing.T) {
	bt := blockTool{started: make(chan struct{})}
	h := newHarness(t, func(o *engine.Options) { o.Tools = tools.NewRegistry(bt); o.ToolTimeout = time.Hour })
	h.llm.Enqueue(llmtest.Stream().Role().Content("Let me check.").ToolCall(0, "call_b", "block", "{}").Finish("tool_calls").Done())
	c, s := h.conversation()
	res := h.send(c, "go")
	<-bt.started
	open, err := h.store.OpenTurns(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].ID != res.MessageID {
		t.Fatalf("open turns while the tool runs: %+v, want the turn of %s", open, res.MessageID)
	}
	var text *agentik.Message
	for _, m := range journal(t, c) {
		if m.Type == agentik.MsgAssistant {
			text = &m
		}
	}
	if text == nil || !text.Continued || text.ClosesTurn() {
		t.Fatalf("the text before the tool call: %+v", text)
	}
	c.Interrupt(h.ctx)
	until(t, s, endOf(res.MessageID))
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns after the end: %+v", open)
	}
}

func TestQueuedTurnClosesTheTurnWaitingForClientTools(t *testing.T) {
	h := newHarness(t)
	pick := agentik.ToolSpec{Name: "pick", Parameters: agentik.RawJSON(`{"type":"object"}`)}
	gate := llmtest.NewGate()
	h.llm.Enqueue(llmtest.Stream().Role().Pause(gate).ToolCall(0, "call_p", "pick", "{}").Finish("tool_calls").Done(), llmtest.Text("second"))
	c, s := h.conversation()
	r1, _ := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("a")}, ClientTools: []agentik.ToolSpec{pick}})
	<-gate.Reached()
	r2 := h.send(c, "b") // queued behind the turn that will wait for the client
	gate.Release()
	evs := until(t, s, endOf(r2.MessageID))
	var closed bool
	for _, ev := range evs {
		if ev.Type == agentik.EvInterrupted && ev.ReplyTo == r1.MessageID && ev.Reason == agentik.ReasonBusyPolicy {
			closed = true
		}
	}
	if !closed {
		t.Fatalf("the waiting turn was not closed: %s", types(evs))
	}
	if open, _ := h.store.OpenTurns(h.ctx); len(open) != 0 {
		t.Fatalf("open turns %+v", open)
	}
}

func TestBadTitlesAreRefused(t *testing.T) {
	h := newHarness(t)
	info, _ := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Title: "ok"})
	for _, bad := range []string{"a\x00b", "\xff", strings.Repeat("x", 1025)} {
		if _, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Title: bad}); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("create %q: %v", bad, err)
		}
		if _, err := h.eng.RenameConversation(h.ctx, info.ID, bad); agentik.ErrorCode(err) != agentik.EInvalid {
			t.Errorf("rename %q: %v", bad, err)
		}
	}
	got, _ := h.eng.Conversation(h.ctx, info.ID)
	if i, _ := got.Info(h.ctx); i.Title != "ok" {
		t.Fatalf("title changed to %q", i.Title)
	}
}

// TestPulledStreamsCostNoGoroutine: streams read with Next (as the SSE
// facade reads them) run no goroutine of the engine's; each gets the
// replay, then every live event once, in order, sharing each live event
// (one encoding for all); Shutdown ends them even when a reader stops
// pulling.
func TestPulledStreamsCostNoGoroutine(t *testing.T) {
	h := newHarness(t)
	h.llm.Enqueue(llmtest.Text("one two"))
	c, s := h.conversation()
	r1 := h.send(c, "first")
	until(t, s, endOf(r1.MessageID))

	const n = 200
	// next pulls one event, waiting on Ready and Done as a reader does.
	next := func(p agentik.PullStream[agentik.Event]) (*agentik.Shared[agentik.Event], bool) {
		timeout := time.After(60 * time.Second)
		for {
			if ev, ended := p.Next(); ev != nil || ended {
				return ev, ended
			}
			select {
			case <-p.Ready():
			case <-p.Done():
			case <-timeout:
				t.Fatal("no event within 60 s")
			}
		}
	}
	before := goroutinesButDatabase()
	streams := make([]agentik.PullStream[agentik.Event], n)
	for i := range streams {
		st, err := c.Events(h.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := st.(agentik.PullStream[agentik.Event])
		if !ok {
			t.Fatalf("an engine stream is a %T, not a PullStream", st)
		}
		streams[i] = p
		for _, want := range []string{agentik.EvUserMessage, agentik.EvAssistantMessage} {
			ev, ended := next(p)
			if ended || ev.Type != want || ev.Cursor == 0 {
				t.Fatalf("stream %d replayed %+v (ended %v), want %s", i, ev, ended, want)
			}
			if b, err := ev.JSON(); err != nil || !strings.Contains(string(b), `"cursor":`) {
				t.Fatalf("replayed JSON %s, %v", b, err)
			}
		}
	}
	if grown := goroutinesButDatabase() - before; grown > n/10 {
		t.Fatalf("%d pulled streams started %d goroutines", n, grown)
	}

	r2 := h.send(c, "second")
	var first []*agentik.Shared[agentik.Event]
	for i, p := range streams[1:] {
		var got []*agentik.Shared[agentik.Event]
		for {
			ev, ended := next(p)
			if ended {
				t.Fatalf("stream %d ended: %v", i, p.Err())
			}
			got = append(got, ev)
			if ev.Type == agentik.EvEnd {
				break
			}
		}
		if first == nil {
			first = got
			v, _ := got[0].Value()
			if got[0].Type != agentik.EvUserMessage || v.Message.ID != r2.MessageID {
				t.Fatalf("first live event %+v", v)
			}
			continue
		}
		if len(got) != len(first) {
			t.Fatalf("stream %d got %d events, another %d", i, len(got), len(first))
		}
		for j := range got {
			if got[j] != first[j] {
				t.Fatalf("stream %d event %d (%s) is not the one the others got", i, j, got[j].Type)
			}
		}
	}
	// streams[0] never pulled the second turn: Shutdown does not wait for it
	// longer than its drain bound, and it ends.
	h.stop()
	for {
		ev, ended := next(streams[0])
		if ended {
			break
		}
		if ev == nil {
			t.Fatal("nil event from a stream that has not ended")
		}
	}
	for _, p := range streams {
		p.Close()
	}
}

// goroutinesButDatabase counts the goroutines but those database/sql and the
// SQLite driver run for a while around each query or transaction with a
// context (they watch the context, and end some time after the query):
// their number at one instant depends on the scheduler, not on the code
// under test.
func goroutinesButDatabase() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if g != "" && !strings.Contains(g, "modernc.org/sqlite.") && !strings.Contains(g, "database/sql.") {
			count++
		}
	}
	return count
}

// TestLongAnswerAllocatesLinearly: what a turn allocates grows with the
// length of its answer, not with its square. The turn once rebuilt the
// answer so far at every delta: 20,000 deltas (the bench's relay) copied
// 800 MB, and relayed 27,000-35,000 deltas/s where the model sent 88,000.
func TestLongAnswerAllocatesLinearly(t *testing.T) {
	h := newHarness(t)
	c, _ := h.conversation()
	turn := func(n int) uint64 {
		pieces := make([]string, n)
		for i := range pieces {
			pieces[i] = "tok "
		}
		h.llm.Enqueue(llmtest.Stream().Role().Content(pieces...).Finish("stop").Usage(10, n).Done())
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := h.send(c, "go on")
		answered(t, c, res.MessageID)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	turn(100) // connections and caches
	small, large := turn(2000), turn(8000)
	// Linear: about 4 times as much for 4 times the deltas. Rebuilding the
	// answer at every delta adds 2n² bytes (8 MB at 2,000 deltas, 128 MB at
	// 8,000): a ratio of about 10.
	ratio := float64(large) / float64(small)
	t.Logf("2,000 deltas: %d bytes; 8,000 deltas: %d bytes (%.1f times)", small, large, ratio)
	if ratio > 6 {
		t.Fatalf("2,000 deltas allocated %d bytes, 8,000 deltas %d: %.1f times as much", small, large, ratio)
	}
}

// answered waits for the durable answer to message id. A reader this far
// behind thousands of deltas may be dropped as too slow: it resumes from
// the last cursor it saw, as clients do.
func answered(t *testing.T, c agentik.Conversation, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	after := int64(0)
	for {
		s, err := c.Events(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		for ev := range s.C() {
			after = max(after, ev.Cursor)
			if ev.Type == agentik.EvAssistantMessage && ev.Message != nil && ev.Message.ReplyTo == id {
				s.Close()
				return
			}
		}
		err = s.Err()
		s.Close()
		if !errors.Is(err, agentik.ErrSlowSubscriber) {
			t.Fatalf("no answer to %s: the stream ended (%v)", id, err)
		}
	}
}

// A busy-policy interrupt cuts the current turn even when its loop has
// taken it and not started it yet (its model call, sent early, may already
// be answering): that turn is withdrawn, closed interrupted{busy_policy},
// and the new message — or the regenerate — is answered. Before, the new
// message waited behind a turn that was never cut.
func TestBusyInterruptWithdrawsTheTurnAboutToStart(t *testing.T) {
	for _, how := range []string{"send", "regenerate"} {
		t.Run(how, func(t *testing.T) {
			taken, release := make(chan string, 4), make(chan struct{})
			h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background(),
				llmTimeout: 30 * time.Second}
			t.Cleanup(h.llm.Close)
			hold := make(chan bool, 1) // the next turn taken waits for release
			h.hook = func(p, replyTo string) {
				if p != "taken" {
					return
				}
				select {
				case <-hold:
					taken <- replyTo
					<-release
				default:
				}
			}
			h.start()
			free := sync.OnceFunc(func() { close(release) })
			t.Cleanup(free)
			never := llmtest.NewGate() // the cut turn's answer never goes on
			t.Cleanup(never.Release)
			h.llm.Handle(func(r llmtest.Request) llmtest.Reply {
				last := r.Messages[len(r.Messages)-1].Text()
				if last == "slow" {
					return llmtest.Stream().Role().Content("slow ").Pause(never).Content("answer").Finish("stop").Done()
				}
				return llmtest.Text(fmt.Sprintf("answer %d to %s", len(r.Messages), last))
			})
			c, s := h.conversation()
			first := h.send(c, "first")
			until(t, s, endOf(first.MessageID))
			hold <- true
			slow := h.send(c, "slow")
			if got := <-taken; got != slow.MessageID {
				t.Fatalf("taken %s, want %s", got, slow.MessageID)
			}
			var next agentik.SendResult
			if how == "send" {
				next = h.send(c, "next", agentik.BusyInterrupt)
			} else {
				var err error
				if next, err = c.Regenerate(h.ctx, agentik.RegenerateRequest{Seq: first.Seq, IfBusy: agentik.BusyInterrupt}); err != nil {
					t.Fatal(err)
				}
			}
			free()
			evs := until(t, s, endOf(slow.MessageID))
			end := evs[len(evs)-1]
			if end.Reason != agentik.EndInterrupted {
				t.Fatalf("the turn about to start ended %s: %s", end.Reason, types(evs))
			}
			if cut := evs[len(evs)-2]; cut.Type != agentik.EvInterrupted || cut.Reason != agentik.ReasonBusyPolicy {
				t.Fatalf("the turn about to start was closed by %s %q", cut.Type, cut.Reason)
			}
			evs = until(t, s, endOf(next.MessageID))
			if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
				t.Fatalf("the %s ended %s: %s", how, end.Reason, types(evs))
			}
			for _, ev := range evs {
				if ev.Type == agentik.EvWorking && ev.ReplyTo == slow.MessageID {
					t.Fatalf("the withdrawn turn started: %s", types(evs))
				}
			}
		})
	}
}

// A turn its loop has taken and not started yet, then withdrawn by an
// exact-turn interrupt, is over when its end is published: the
// conversation reads idle although the loop still holds it (A2A's cancel
// reads the task right after the end; under load it read "working").
func TestWithdrawnTurnAboutToStartIsNotWorking(t *testing.T) {
	taken, release := make(chan string, 1), make(chan struct{})
	h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background()}
	t.Cleanup(h.llm.Close)
	h.hook = func(p, replyTo string) {
		if p == "taken" {
			taken <- replyTo
			<-release
		}
	}
	h.start()
	free := sync.OnceFunc(func() { close(release) })
	t.Cleanup(free)
	h.llm.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("answer") })
	c, s := h.conversation()
	res := h.send(c, "cancel me before I start")
	if got := <-taken; got != res.MessageID {
		t.Fatalf("taken %s, want %s", got, res.MessageID)
	}
	done, err := c.(agentik.TurnInterrupter).InterruptTurn(h.ctx, res.MessageID)
	if err != nil || !done {
		t.Fatalf("InterruptTurn = %v, %v", done, err)
	}
	evs := until(t, s, endOf(res.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndInterrupted {
		t.Fatalf("ended %s: %s", end.Reason, types(evs))
	}
	info, err := c.Info(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Working {
		t.Fatal("the conversation reads working after its only turn was withdrawn")
	}
	free()
	next := h.send(c, "and now?")
	evs = until(t, s, endOf(next.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndCompleted {
		t.Fatalf("the next turn ended %s: %s", end.Reason, types(evs))
	}
	for _, ev := range evs {
		if ev.Type == agentik.EvWorking && ev.ReplyTo == res.MessageID {
			t.Fatalf("the withdrawn turn started: %s", types(evs))
		}
	}
}
