package ws

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
)

func TestTurnStreamsChunksThenEnd(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(llmtest.Text("Hello there, friend"))
	c := s.dial(&DialOptions{Title: "greeting"})
	st := c.Status()
	if st.ConversationID == "" || st.Working {
		t.Fatalf("status %+v", st)
	}
	if err := c.Send(testCtx(t), "hi"); err != nil {
		t.Fatal(err)
	}
	var chunks int
	var text strings.Builder
	for {
		m := next(t, c)
		if tc, ok := m.(*TextChunk); ok {
			chunks++
			text.WriteString(tc.Text)
			continue
		}
		end, ok := m.(*End)
		if !ok {
			t.Fatalf("unexpected %#v", m)
		}
		// llmtest.Text reports usage 10 prompt + 1 per word.
		if end.TokensUsed != 13 || end.Reason != EndCompleted {
			t.Fatalf("end %+v", end)
		}
		break
	}
	if text.String() != "Hello there, friend" || chunks < 2 {
		t.Fatalf("text %q in %d chunks", text.String(), chunks)
	}
	j := s.journal(st.ConversationID, "")
	if len(j) != 2 || j[0].Type != agentik.MsgUser || agentik.JoinText(j[0].Content) != "hi" ||
		j[0].Context == nil || j[0].Context.Origin.Channel != "websocket" || j[1].Type != agentik.MsgAssistant {
		t.Fatalf("journal %+v", j)
	}
	info, _ := s.eng.Conversation(testCtx(t), st.ConversationID)
	if ci, _ := info.Info(testCtx(t)); ci.Title != "greeting" {
		t.Fatalf("title %q", ci.Title)
	}
}

func TestWireShapesAreTheSeeds(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(llmtest.Text("ok"))
	ctx := testCtx(t)
	c, _, err := websocket.Dial(ctx, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() map[string]any {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := jsonUnmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return m
	}
	if m := read(); m["type"] != "STATUS" {
		t.Fatalf("first frame %v", m)
	}
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"USER_MESSAGE","text":"hi"}`))
	m := read()
	if m["type"] != "AGENT_EVENT" || m["subtype"] != "TEXT_CHUNK" || m["text"] != "ok" {
		t.Fatalf("chunk %v", m)
	}
	m = read()
	if m["type"] != "AGENT_EVENT" || m["subtype"] != "END" || m["tokens_used"] != float64(11) {
		t.Fatalf("end %v", m)
	}
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"NOPE"}`))
	m = read()
	if m["type"] != "ERROR" || m["code"] != CodeUnknownType || m["details"] == "" {
		t.Fatalf("error %v", m)
	}
}

func TestBadFramesAnswerErrorStoreNothingKeepConnection(t *testing.T) {
	s := newStack(t, Options{MaxMessageBytes: 1024}, nil)
	c := s.dial(nil)
	ctx := testCtx(t)
	raw := func(typ websocket.MessageType, b string) {
		t.Helper()
		if err := c.c.Write(ctx, typ, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		typ  websocket.MessageType
		body string
		code string
	}{
		{websocket.MessageText, `not json`, CodeMalformed},
		{websocket.MessageText, `[1,2]`, CodeMalformed},
		{websocket.MessageText, `null`, CodeMalformed},
		{websocket.MessageText, `{"text":"no type"}`, CodeMalformed},
		{websocket.MessageText, `{"type":7}`, CodeMalformed},
		{websocket.MessageText, `{"type":"SHOUT","text":"x"}`, CodeUnknownType},
		{websocket.MessageText, `{"type":"USER_MESSAGE"}`, CodeInvalid},
		{websocket.MessageText, `{"type":"USER_MESSAGE","text":""}`, CodeInvalid},
		{websocket.MessageText, `{"type":"USER_MESSAGE","text":42}`, CodeInvalid},
		{websocket.MessageText, `{"type":"USER_MESSAGE","text":null}`, CodeInvalid},
		{websocket.MessageText, `{"type":"USER_MESSAGE","text":"x","if_busy":"maybe"}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","approved":true}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"","approved":true}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":["c"],"approved":true}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"` + strings.Repeat("c", 300) + `","approved":true}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"c"}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"c","approved":"yes"}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"c","approved":true,"reason":1}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"c","approved":true,"arguments":[1]}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"c","approved":false,"arguments":{}}`, CodeInvalid},
		{websocket.MessageText, `{"type":"APPROVAL","call_id":"c","approved":true}`, agentik.ENotFound},
		{websocket.MessageBinary, `{"type":"USER_MESSAGE","text":"binary"}`, CodeBinary},
		{websocket.MessageText, `{"type":"USER_MESSAGE","text":"` + strings.Repeat("a", 5000) + `"}`, CodeTooLarge},
	}
	for _, tc := range cases {
		raw(tc.typ, tc.body)
		wantError(t, c, tc.code)
	}
	if j := s.journal(c.ConversationID(), ""); len(j) != 0 {
		t.Fatalf("bad frames stored %d messages", len(j))
	}
	// Still usable.
	s.llm.Enqueue(llmtest.Text("still here"))
	c.Send(ctx, "hello")
	if text, _, others := answer(t, c); text != "still here" || len(others) != 0 {
		t.Fatalf("%q %v", text, others)
	}
}

func TestAttachAndOwnership(t *testing.T) {
	s := newStack(t, Options{}, map[string]string{"ta": "alice", "tb": "bob"})
	ctx := testCtx(t)
	if _, err := Dial(ctx, s.url, nil); errCode(err) != agentik.EUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	if _, err := Dial(ctx, s.url, &DialOptions{Token: "nope"}); errCode(err) != agentik.EUnauthorized {
		t.Fatalf("bad token: %v", err)
	}
	a := s.dial(&DialOptions{Token: "ta"})
	id := a.ConversationID()
	s.llm.Enqueue(llmtest.Text("first answer"))
	a.Send(ctx, "one")
	answer(t, a)
	a.Close()
	// The engine keeps the finished turn as running for a moment after END;
	// a subscriber joining then is sent its text again. Attach once idle.
	s.waitIdle(id, "alice")

	again := s.dial(&DialOptions{Token: "ta", ConversationID: id})
	if again.ConversationID() != id {
		t.Fatalf("attached to %s, want %s", again.ConversationID(), id)
	}
	s.llm.Enqueue(llmtest.Text("second answer"))
	again.Send(ctx, "two")
	if text, _, _ := answer(t, again); text != "second answer" {
		t.Fatalf("%q", text)
	}
	// The model saw the history of the first connection.
	reqs := s.llm.Requests()
	if last := reqs[len(reqs)-1]; len(last.Messages) < 3 {
		t.Fatalf("model context %+v", last.Messages)
	}
	if _, err := Dial(ctx, s.url, &DialOptions{Token: "tb", ConversationID: id}); errCode(err) != agentik.ENotFound {
		t.Fatalf("other principal: %v", err)
	}
	if _, err := Dial(ctx, s.url, &DialOptions{Token: "ta", ConversationID: "01NOPE"}); errCode(err) != agentik.ENotFound {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := Dial(ctx, s.url, &DialOptions{Token: "ta", Events: []string{"telepathy"}}); errCode(err) != agentik.EInvalid {
		t.Fatalf("unknown extension: %v", err)
	}
}

func errCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "not an *Error: " + errString(err)
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestBusyMessagesAreQueuedInOrder(t *testing.T) {
	s := newStack(t, Options{}, nil)
	gate := llmtest.NewGate()
	defer gate.Release()
	s.llm.Enqueue(
		llmtest.Stream().Role().Content("first ").Pause(gate).Content("done").Finish("stop").Done(),
		llmtest.Text("second done"),
	)
	c := s.dial(nil)
	ctx := testCtx(t)
	c.Send(ctx, "one")
	<-gate.Reached()
	c.Send(ctx, "two")
	// The second message is stored while the first turn runs.
	waitFor(t, func() bool { return len(s.journal(c.ConversationID(), "")) == 2 })
	gate.Release()
	if text, end, _ := answer(t, c); text != "first done" || end.Reason != EndCompleted {
		t.Fatalf("first: %q %+v", text, end)
	}
	if text, _, _ := answer(t, c); text != "second done" {
		t.Fatalf("second: %q", text)
	}
	// Idle again: reject lets the message through. (The engine still counts
	// the conversation as working for a moment after END: wait for idle.)
	s.waitIdle(c.ConversationID(), "")
	s.llm.Enqueue(llmtest.Text("third"))
	c.SendMessage(ctx, &UserMessage{Text: "three", IfBusy: "reject"})
	if text, _, _ := answer(t, c); text != "third" {
		t.Fatalf("third: %q", text)
	}
}

func TestBusyRejectAnswersErrorBusy(t *testing.T) {
	s := newStack(t, Options{IfBusy: agentik.BusyReject}, nil)
	gate := llmtest.NewGate()
	defer gate.Release()
	s.llm.Enqueue(llmtest.Stream().Role().Content("slow").Pause(gate).Finish("stop").Done())
	c := s.dial(nil)
	ctx := testCtx(t)
	c.Send(ctx, "one")
	<-gate.Reached()
	c.Send(ctx, "two")
	// The chunk and the refusal race; both must come, the chunk once.
	var sawBusy bool
	var text string
	for !sawBusy || text == "" {
		switch m := next(t, c).(type) {
		case *TextChunk:
			text += m.Text
		case *Error:
			sawBusy = m.Code == agentik.EBusy
		default:
			t.Fatalf("%#v", m)
		}
	}
	gate.Release()
	if rest, _, _ := answer(t, c); text+rest != "slow" {
		t.Fatalf("%q", text+rest)
	}
	if j := s.journal(c.ConversationID(), ""); len(j) != 2 {
		t.Fatalf("rejected message stored: %d entries", len(j))
	}
}

func TestInterruptEndsTurnInterrupted(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(llmtest.Stream().Role().Content("partial").Hang())
	c := s.dial(nil)
	ctx := testCtx(t)
	c.Send(ctx, "go")
	if m := next(t, c); m.(*TextChunk).Text != "partial" {
		t.Fatalf("%#v", m)
	}
	c.Interrupt(ctx)
	_, end, _ := answer(t, c)
	if end.Reason != EndInterrupted {
		t.Fatalf("end %+v", end)
	}
}

func TestToolActivityIsOptIn(t *testing.T) {
	s := newStack(t, Options{}, nil)
	seed := s.dial(nil)
	ext := s.dial(&DialOptions{ConversationID: seed.ConversationID(), Events: []string{ExtTools, ExtReasoning}})
	if got := ext.Status().Events; len(got) != 2 {
		t.Fatalf("status events %v", got)
	}
	s.llm.Enqueue(
		llmtest.Stream().Role().Reasoning("let me ", "check").ToolCall(0, "call_t1", "current_time", `{"timezone":`, `"UTC"}`).
			Finish("tool_calls").Usage(10, 5).Done(),
		llmtest.Text("It is noon"),
	)
	seed.Send(testCtx(t), "time?")
	text, end, others := answer(t, seed)
	if text != "It is noon" || len(others) != 0 || end.TokensUsed != 15+13 {
		t.Fatalf("seed client: %q %+v %#v", text, end, others)
	}
	text, _, others = answer(t, ext)
	if text != "It is noon" || len(others) != 4 {
		t.Fatalf("extended client: %q %#v", text, others)
	}
	if r1, r2 := others[0].(*ReasoningChunk), others[1].(*ReasoningChunk); r1.Text+r2.Text != "let me check" {
		t.Fatalf("reasoning %q %q", r1.Text, r2.Text)
	}
	call := others[2].(*ToolCall)
	res := others[3].(*ToolResult)
	if call.CallID != "call_t1" || call.Name != "current_time" || string(call.Arguments) != `{"timezone":"UTC"}` ||
		res.CallID != "call_t1" || res.IsError || !strings.Contains(res.Text, "T") {
		t.Fatalf("tool activity %+v %+v", call, res)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIdleTimeoutSaysGoodbye(t *testing.T) {
	s := newStack(t, Options{IdleTimeout: 300 * time.Millisecond}, nil)
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Stream().Role().Content("long").Pause(gate).Content(" turn").Finish("stop").Done())
	c := s.dial(nil)
	ctx := testCtx(t)
	c.Send(ctx, "go")
	<-gate.Reached()
	next(t, c) // "long"
	// A running turn is not idleness: wait past the timeout, then finish.
	select {
	case m := <-c.Messages():
		t.Fatalf("message while a turn runs past the idle timeout: %#v", m)
	case <-time.After(900 * time.Millisecond):
	}
	gate.Release()
	if text, _, _ := answer(t, c); text != " turn" {
		t.Fatalf("%q", text)
	}
	start := time.Now()
	m := next(t, c)
	if g, ok := m.(*GracefulDisconnect); !ok || g.Reason != "idle" {
		t.Fatalf("want GRACEFUL_DISCONNECT idle, got %#v", m)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("idle timeout far too late")
	}
	<-c.Done()
	if !errors.Is(c.Err(), ErrGracefulDisconnect) {
		t.Fatalf("err %v", c.Err())
	}
	waitFor(t, func() bool { return s.sessions() == 0 })
}

func TestDeadPeerIsDropped(t *testing.T) {
	s := newStack(t, Options{PingInterval: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond}, nil)
	ctx := testCtx(t)
	// A client that completes the handshake and reads STATUS, then never
	// reads again: it answers no ping.
	c, _, err := websocket.Dial(ctx, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if s.sessions() != 1 {
		t.Fatalf("%d sessions", s.sessions())
	}
	waitFor(t, func() bool { return s.sessions() == 0 })
	// A live client that reads is kept across many ping intervals.
	live := s.dial(nil)
	select {
	case m := <-live.Messages():
		t.Fatalf("unexpected %#v (%v)", m, live.Err())
	case <-time.After(500 * time.Millisecond):
	}
	if s.sessions() != 1 {
		t.Fatalf("live client dropped: %d sessions", s.sessions())
	}
}

func TestShutdownSaysGoodbyeAfterRunningTurn(t *testing.T) {
	s := newStack(t, Options{}, nil)
	gate := llmtest.NewGate()
	defer gate.Release()
	s.llm.Enqueue(llmtest.Stream().Role().Content("almost").Pause(gate).Content(" done").Finish("stop").Done())
	busy := s.dial(nil)
	idle := s.dial(nil)
	ctx := testCtx(t)
	busy.Send(ctx, "go")
	<-gate.Reached()
	next(t, busy)

	s.srv.BeginShutdown()
	if g, ok := next(t, idle).(*GracefulDisconnect); !ok || g.Reason != "shutdown" {
		t.Fatalf("idle connection: %#v", g)
	}
	if _, err := Dial(ctx, s.url, nil); errCode(err) != agentik.EUnavailable {
		t.Fatalf("dial during shutdown: %v", err)
	}
	busy.Send(ctx, "refused")
	wantError(t, busy, agentik.EUnavailable)
	gate.Release()
	if text, end, _ := answer(t, busy); text != " done" || end.Reason != EndCompleted {
		t.Fatalf("%q %+v", text, end)
	}
	if g, ok := next(t, busy).(*GracefulDisconnect); !ok || g.Reason != "shutdown" {
		t.Fatalf("busy connection: %#v", g)
	}
	done := make(chan error, 1)
	go func() { done <- s.srv.Shutdown(ctx) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if j := s.journal(busy.ConversationID(), ""); len(j) != 2 {
		t.Fatalf("message refused during shutdown was stored: %d entries", len(j))
	}
}

func TestDeletedConversationEndsConnection(t *testing.T) {
	s := newStack(t, Options{}, nil)
	c := s.dial(nil)
	if err := s.eng.DeleteConversation(testCtx(t), c.ConversationID()); err != nil {
		t.Fatal(err)
	}
	wantError(t, c, agentik.ENotFound)
	<-c.Done()
}

func TestReconnectReattaches(t *testing.T) {
	s := newStack(t, Options{IdleTimeout: 100 * time.Millisecond}, nil)
	c := s.dial(nil)
	id := c.ConversationID()
	if _, ok := next(t, c).(*GracefulDisconnect); !ok {
		t.Fatal("no goodbye")
	}
	<-c.Done()
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	c2, err := c.Reconnect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.ConversationID() != id {
		t.Fatalf("reconnected to %s, want %s", c2.ConversationID(), id)
	}
	s.llm.Enqueue(llmtest.Text("welcome back"))
	c2.Send(ctx, "hi")
	if text, _, _ := answer(t, c2); text != "welcome back" {
		t.Fatalf("%q", text)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// A session whose subscriber lost deltas (the bus had no room for them)
// still gets the answer's text whole in its TEXT_CHUNKs: the rest comes
// from the stored message, with no gap and no repeat.
func TestLostDeltasArriveWhole(t *testing.T) {
	s := newStack(t, Options{}, nil, stacktest.LoseDeltas)
	reply, want := stacktest.LossyAnswer(40)
	s.llm.Enqueue(reply)
	c := s.dial(nil)
	if err := c.Send(testCtx(t), "hi"); err != nil {
		t.Fatal(err)
	}
	text, end, _ := answer(t, c)
	if text != want || end.Reason != EndCompleted {
		t.Fatalf("text %q (end %+v)\nwant %q", text, end, want)
	}
}
