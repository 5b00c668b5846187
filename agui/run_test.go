package agui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/google/uuid"
)

// TestResentRunChangesNothing: a client that resends the thread stores
// nothing twice. A run with the answer it got (nothing new) calls no model;
// a run that ends at the question without its answer is a regenerate
// (CopilotKit's Regenerate cannot be told from it, docs/agui.md): the
// question is answered again on a new branch, not stored again.
func TestResentRunChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.llm.Enqueue(llmtest.Text("once"), llmtest.Text("twice"))
	in := input("thread-retry", "run-1", user("u1", "hello"))
	e.run(in)
	conv := ConversationID("", "thread-retry")
	answer := e.journal(conv)[1]
	r := e.run(input("thread-retry", "run-2", user("u1", "hello"), map[string]any{"id": answer.ID, "role": "assistant", "content": "once"}))
	if got := strings.Join(typesOf(r.events), ","); got != "RUN_STARTED,RUN_FINISHED" {
		t.Fatalf("run in step: %s", got)
	}
	if n := len(e.llm.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	in["runId"] = "run-3"
	r = e.run(in)
	if got := texts(r); got != "twice" {
		t.Fatalf("resent run: %s %q", strings.Join(typesOf(r.events), ","), got)
	}
	if msgs := e.journal(conv); journalTypes(msgs) != "user_message,assistant_message" {
		t.Fatalf("journal %s", journalTypes(msgs))
	}
	if all := e.allMessages(conv); journalTypes(all) != "user_message,assistant_message,assistant_message" {
		t.Fatalf("every branch: %s", journalTypes(all))
	}
}

// TestSnapshotOnEmptyMessages: a client with no messages (a reloaded UI)
// gets the server's history; user messages keep their AG-UI ids, the
// run's context part stays hidden, tool calls join their assistant message.
func TestSnapshotOnEmptyMessages(t *testing.T) {
	e := newEnv(t, withEcho)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("echo", `{"a":1}`).WithID("c1")), llmtest.Text("Fine."))
	in := input("thread-snap", "run-1", user("u1", "How are you?"))
	in["context"] = []any{map[string]any{"description": "user locale", "value": "en-GB"}}
	e.run(in)
	if got := e.llm.Requests()[0].LastUserText(); !strings.Contains(got, "How are you?") || !strings.Contains(got, "user locale: en-GB") {
		t.Fatalf("the model did not get the context: %q", got)
	}

	r := e.run(input("thread-snap", "run-2"))
	if got := strings.Join(typesOf(r.events), ","); got != "RUN_STARTED,MESSAGES_SNAPSHOT,RUN_FINISHED" {
		t.Fatalf("events %s", got)
	}
	golden(t, "snapshot.golden", transcript(r))
	var snap struct{ Messages []Message }
	json.Unmarshal([]byte(r.frames[1]), &snap)
	if len(snap.Messages) != 4 || snap.Messages[0].ID != "u1" || string(snap.Messages[0].Content) != `"How are you?"` ||
		len(snap.Messages[1].ToolCalls) != 1 || snap.Messages[2].ToolCallID != "c1" {
		t.Fatalf("snapshot %s", r.frames[1])
	}

	// An unknown thread with no messages: an empty snapshot, nothing created.
	r = e.run(input("thread-none", "run-1"))
	if r.frames[1] == "" || !strings.Contains(r.frames[1], `"messages":[]`) {
		t.Fatalf("unknown thread: %v", r.frames)
	}
	if _, err := e.eng.Conversation(testCtx(t), ConversationID("", "thread-none")); !agentik.IsNotFound(err) {
		t.Fatalf("an empty run created the thread: %v", err)
	}
}

// TestThreadIDs: a UUID threadId names the caller's own conversation of that
// id; any other thread lives at an id derived from the caller and the name,
// so equal names of two callers never meet.
func TestThreadIDs(t *testing.T) {
	e := newEnvAuth(t, anyToken{})
	if r := e.post(`{"threadId":"t","runId":"r","messages":[]}`); r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"unauthorized"`) {
		t.Fatalf("no credentials: %d %s", r.status, r.body)
	}

	e.llm.Enqueue(llmtest.Text("for alice"), llmtest.Text("for bob"), llmtest.Text("uuid thread"))
	body := func(thread, text string) string {
		b, _ := json.Marshal(input(thread, "run-1", user("u-"+text, text)))
		return string(b)
	}
	for _, who := range []string{"alice", "bob"} {
		if r := e.post(body("shared-name", who), "Authorization", "Bearer "+who); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", who, r.status, r.body)
		}
	}
	a, b := ConversationID("alice", "shared-name"), ConversationID("bob", "shared-name")
	if a == b || a != ConversationID("alice", "shared-name") || !agentik.ValidID(a) {
		t.Fatalf("ids %s %s", a, b)
	}
	if got := agentik.JoinText(e.journal(a, "alice")[0].Content); got != "alice" {
		t.Fatalf("alice's thread holds %q", got)
	}

	// A UUID threadId of the caller's conversation is that conversation,
	// shared with the native API.
	aliceCtx := agentik.WithPrincipal(testCtx(t), "alice")
	info, err := e.eng.CreateConversation(aliceCtx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	thread := info.ID
	if r := e.post(body(thread, "hi"), "Authorization", "Bearer alice"); r.status != http.StatusOK {
		t.Fatalf("uuid thread: %d %s", r.status, r.body)
	}
	if msgs := e.journal(thread, "alice"); len(msgs) != 2 {
		t.Fatalf("native view of the thread: %s", journalTypes(msgs))
	}
	// Another caller cannot write into it, nor learn that it exists: the
	// same thread id gives it a thread of its own, as an unused id would,
	// and neither id becomes visible to it in the native API.
	e.llm.Enqueue(llmtest.Text("mallory 1"), llmtest.Text("mallory 2"))
	unused := "0b4a3f8e-4c1d-4e7a-9a51-3f2d7c9e8b11"
	for _, id := range []string{thread, unused} {
		if r := e.post(body(id, "intrude"), "Authorization", "Bearer mallory"); r.status != http.StatusOK {
			t.Fatalf("thread %s for mallory: %d %s", id, r.status, r.body)
		}
		if got := agentik.JoinText(e.journal(ConversationID("mallory", id), "mallory")[0].Content); got != "intrude" {
			t.Fatalf("mallory's thread %s holds %q", id, got)
		}
		if _, err := e.eng.Conversation(agentik.WithPrincipal(testCtx(t), "mallory"), id); !agentik.IsNotFound(err) {
			t.Fatalf("thread id %s is visible to mallory: %v", id, err)
		}
	}
	if msgs := e.journal(thread, "alice"); len(msgs) != 2 {
		t.Fatalf("intruder changed the thread: %s", journalTypes(msgs))
	}
}

// TestThreadIDsCannotBeTaken: whatever conversations another caller made
// first — through AG-UI with the ids a thread resolves to, or ids taken
// before the per-caller derivation existed — a caller's run gets a thread
// of its own (200, never 500) and its snapshot shows its own messages only.
func TestThreadIDsCannotBeTaken(t *testing.T) {
	e := newEnvAuth(t, tokenIsPrincipal{})
	body := func(thread, run string, msgs ...map[string]any) string {
		b, _ := json.Marshal(input(thread, run, msgs...))
		return string(b)
	}
	legacy := func(principal, thread string) string {
		return uuid.NewSHA1(uuid.MustParse("5d0f3c4e-8a57-4c44-9f6e-2b7a0e1c9d13"), []byte(principal+"\x00"+thread)).String()
	}
	uuidThread := "7d1e4b1c-2f3a-4b5c-8d6e-9f0a1b2c3d4e"
	// Bob, first: runs named by every id alice's threads resolve to today
	// and did before, and the UUID thread itself.
	var squat []string
	for _, thread := range []string{"notes", uuidThread} {
		squat = append(squat, thread, legacy("alice", thread), ConversationID("alice", thread))
	}
	for i, id := range squat {
		e.llm.Enqueue(llmtest.Text("bob's"))
		if r := e.post(body(id, "r", user(fmt.Sprintf("b%d", i), "bob was here")), "Authorization", "Bearer bob"); r.status != http.StatusOK {
			t.Fatalf("bob's run %s: %d %s", id, r.status, r.body)
		}
	}
	// And conversations at those ids made before the derivation existed
	// (as the old code let any caller do).
	bob := agentik.WithPrincipal(testCtx(t), "bob")
	for _, id := range squat[1:] {
		if id == uuidThread {
			continue
		}
		if _, err := e.eng.CreateConversation(bob, agentik.CreateRequest{ID: id}); err != nil && agentik.ErrorCode(err) != agentik.EConflict {
			t.Fatal(err)
		}
	}
	for _, thread := range []string{"notes", uuidThread} {
		e.llm.Enqueue(llmtest.Text("for alice"))
		r := e.post(body(thread, "r1", user("a1", "alice's question")), "Authorization", "Bearer alice")
		if r.status != http.StatusOK || r.events[len(r.events)-1]["type"] != RunFinished {
			t.Fatalf("alice's run on %s: %d %s", thread, r.status, r.body)
		}
		snap := e.post(body(thread, "r2"), "Authorization", "Bearer alice")
		if snap.status != http.StatusOK || !strings.Contains(string(snap.body), "alice's question") || strings.Contains(string(snap.body), "bob was here") {
			t.Fatalf("alice's snapshot of %s: %d %s", thread, snap.status, snap.body)
		}
	}
}

// openRun posts input and returns a reader over the live stream.
func (e *env) openRun(ctx context.Context, in any) (*http.Response, *bufio.Reader) {
	e.t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("status %d", resp.StatusCode)
	}
	return resp, bufio.NewReader(resp.Body)
}

// readUntil reads frames until one contains want.
func readUntil(t *testing.T, br *bufio.Reader, want string) string {
	t.Helper()
	var seen strings.Builder
	for {
		line, err := br.ReadString('\n')
		seen.WriteString(line)
		if strings.Contains(line, want) {
			return seen.String()
		}
		if err != nil {
			t.Fatalf("stream ended before %q: %v\n%s", want, err, seen.String())
		}
	}
}

// waitDurable replays the conversation's durable events until one matches.
func (e *env) waitDurable(convID string, match func(agentik.Event) bool) agentik.Event {
	e.t.Helper()
	ctx := testCtx(e.t)
	conv, err := e.eng.Conversation(ctx, convID)
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := conv.Events(ctx, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer s.Close()
	for ev := range s.C() {
		if match(ev) {
			return ev
		}
	}
	e.t.Fatalf("event stream ended: %v", s.Err())
	return agentik.Event{}
}

// TestDisconnect: with the continue policy a client that goes away costs the
// turn nothing; with interrupt (the default, AG-UI's abortRun) the turn is
// interrupted and its partial answer kept. Either way it is all durable.
func TestDisconnect(t *testing.T) {
	for _, policy := range []string{DisconnectContinue, DisconnectInterrupt} {
		t.Run(policy, func(t *testing.T) {
			e := newEnv(t, func(_ *engine.Options, o *Options) { o.OnDisconnect = policy })
			gate := llmtest.NewGate()
			t.Cleanup(gate.Release)
			e.llm.Enqueue(llmtest.Stream().Role().Content("partial ").Pause(gate).Content("rest").Finish("stop").Done())
			ctx, cancel := context.WithCancel(testCtx(t))
			resp, br := e.openRun(ctx, input("thread-dc", "run-1", user("u1", "talk")))
			readUntil(t, br, `"delta":"partial "`)
			cancel()
			resp.Body.Close()
			conv := ConversationID("", "thread-dc")
			if policy == DisconnectContinue {
				<-gate.Reached()
				gate.Release()
				ev := e.waitDurable(conv, func(ev agentik.Event) bool { return ev.Type == agentik.EvAssistantMessage })
				if ev.Message.Interrupted || agentik.JoinText(ev.Message.Content) != "partial rest" {
					t.Fatalf("answer %+v", ev.Message)
				}
				return
			}
			ev := e.waitDurable(conv, func(ev agentik.Event) bool { return ev.Type == agentik.EvInterrupted })
			if ev.Reason != agentik.ReasonUser {
				t.Fatalf("interrupted %+v", ev)
			}
			if msgs := e.journal(conv); journalTypes(msgs) != "user_message,assistant_message" || !msgs[1].Interrupted {
				t.Fatalf("journal %s", journalTypes(msgs))
			}
		})
	}
}

// TestKeepAlive: a silent stream carries SSE comments, which the AG-UI
// client ignores, and the run still ends cleanly.
func TestKeepAlive(t *testing.T) {
	e := newEnv(t, func(_ *engine.Options, o *Options) { o.KeepAlive = 5 * time.Millisecond })
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(llmtest.Stream().Role().Pause(gate).Content("late").Finish("stop").Done())
	resp, br := e.openRun(testCtx(t), input("thread-ka", "run-1", user("u1", "wait")))
	defer resp.Body.Close()
	readUntil(t, br, ": keep-alive")
	gate.Release()
	readUntil(t, br, RunFinished)
}

// TestForeignTurnIsNotInTheRun: a run queued behind a turn sent through the
// native API streams only its own turn.
func TestForeignTurnIsNotInTheRun(t *testing.T) {
	e := newEnv(t)
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(llmtest.Stream().Role().Content("native ").Pause(gate).Content("answer").Finish("stop").Done(), llmtest.Text("agui answer"))
	ctx := testCtx(t)
	thread := "6f1b1c2a-3d4e-4f50-8a6b-7c8d9e0f1a2b"
	if _, err := e.eng.CreateConversation(ctx, agentik.CreateRequest{ID: thread}); err != nil {
		t.Fatal(err)
	}
	conv, _ := e.eng.Conversation(ctx, thread)
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("native")}}); err != nil {
		t.Fatal(err)
	}
	<-gate.Reached()
	done := make(chan response, 1)
	go func() {
		b, _ := json.Marshal(input(thread, "run-1", user("u1", "agui")))
		done <- e.post(string(b))
	}()
	// The run is subscribed and queued once its user message is in the journal.
	e.waitDurable(thread, func(ev agentik.Event) bool {
		return ev.Type == agentik.EvUserMessage && ev.Message.Context != nil && ev.Message.Context.Metadata[MetaMessageID] == "u1"
	})
	gate.Release()
	r := <-done
	_, r.events = parseFrames(t, r.body)
	verifyRun(t, r.events, thread, "run-1")
	var text strings.Builder
	for _, ev := range r.events {
		if ev["type"] == TextMessageContent {
			text.WriteString(ev["delta"].(string))
		}
	}
	if text.String() != "agui answer" {
		t.Fatalf("run text %q (%v)", text.String(), typesOf(r.events))
	}
}

// TestStaleToolResultsWithNewMessage: a tool message for a call the server
// no longer waits for does not block a new user message.
func TestStaleToolResultsWithNewMessage(t *testing.T) {
	e := newEnv(t)
	e.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("pick_color", `{}`).WithID("call_ui")), llmtest.Text("ok"), llmtest.Text("second"))
	in := input("thread-stale", "run-1", user("u1", "pick"))
	in["tools"] = []any{pickColor}
	e.run(in)
	// The user types instead of answering: the waiting turn is abandoned.
	e.run(input("thread-stale", "run-2", user("u1", "pick"), user("u2", "never mind")))
	// A late tool message beside a new message is ignored, not an error.
	r := e.run(input("thread-stale", "run-3", user("u1", "pick"), user("u2", "never mind"),
		map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_ui", "content": "late"}, user("u3", "again")))
	if r.events[len(r.events)-1]["type"] != RunFinished {
		t.Fatalf("run 3: %v", typesOf(r.events))
	}
	msgs := e.journal(ConversationID("", "thread-stale"))
	if got := journalTypes(msgs); got != "user_message,tool_call,user_message,assistant_message,user_message,assistant_message" {
		t.Fatalf("journal %s", got)
	}
}

// anyToken is an edge.Tokens that takes every token for the principal of
// its name.
type anyToken struct{}

func (anyToken) Lookup(token string) (string, bool)               { return token, token != "" }
func (anyToken) Allows(string, string) bool                       { return true }
func (anyToken) Watch(string, string, string, func()) func() bool { return func() bool { return true } }

// tokenIsPrincipal is an edge.Tokens that takes every token, none
// included, for the principal of its name.
type tokenIsPrincipal struct{}

func (tokenIsPrincipal) Lookup(token string) (string, bool) { return token, true }
func (tokenIsPrincipal) Allows(string, string) bool         { return true }
func (tokenIsPrincipal) Watch(string, string, string, func()) func() bool {
	return func() bool { return true }
}

// A run whose subscriber lost deltas (the bus had no room for them) still
// streams the answer's text whole in its TEXT_MESSAGE_CONTENT events: the
// rest comes from the stored message, with no gap and no repeat.
func TestLostDeltasArriveWhole(t *testing.T) {
	e := newEnv(t, func(o *engine.Options, _ *Options) { stacktest.LoseDeltas(o) })
	reply, want := stacktest.LossyAnswer(40)
	e.llm.Enqueue(reply)
	r := e.run(input("thread-lossy", "run-1", user("u1", "hello")))
	if got := texts(r); got != want {
		t.Fatalf("streamed %q\nwant %q", got, want)
	}
}
