package agui

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

func TestDialectOf(t *testing.T) {
	for v, want := range map[string]Dialect{
		"":     Dialect00, // @ag-ui/client 0.0.x (CopilotKit 1.74/1.75) sends none
		"0.0":  Dialect00,
		"0.1":  Dialect00,
		"1.0":  Dialect10,
		"1.3":  Dialect10,
		"2.0":  Dialect10, // newer than the facade: the newest it speaks
		"junk": Dialect10, // the field exists only from 1.0 on
	} {
		if got := DialectOf(RunInput{ProtocolVersion: v}); got != want {
			t.Errorf("protocolVersion %q: %v, want %v", v, got, want)
		}
	}
	in, err := DecodeInput([]byte(`{"threadId":"t","runId":"r","messages":[],"protocolVersion":"1.0"}`))
	if err != nil || DialectOf(in) != Dialect10 {
		t.Fatalf("decoded %+v %v", in, err)
	}
	in, err = DecodeInput([]byte(`{"threadId":"t","runId":"r","messages":[]}`))
	if err != nil || DialectOf(in) != Dialect00 {
		t.Fatalf("decoded %+v %v", in, err)
	}
}

// input00 builds a RunAgentInput as @ag-ui/client 0.0.59's HttpAgent (the
// one inside the CopilotKit runtime) sends it: no protocolVersion.
func input00(thread, run string, msgs ...map[string]any) map[string]any {
	in := input(thread, run, msgs...)
	delete(in, "protocolVersion")
	return in
}

// TestGoldenDialects: the same runs — a frontend tool call, its result, and
// a turn interrupted from outside (the native API) while it streams — as a
// 1.0 client and as a pre-1.0 client see them. The pre-1.0 client gets no
// outcome its strict schema would refuse (@ag-ui/core 0.0.59: success
// without pendingToolCallIds, no "cancelled"); everything else is the same.
func TestGoldenDialects(t *testing.T) {
	for _, d := range []struct {
		name  string
		input func(thread, run string, msgs ...map[string]any) map[string]any
		file  string
	}{{"1.0", input, "dialect_1.0.golden"}, {"0.0", input00, "dialect_0.0.golden"}} {
		t.Run(d.name, func(t *testing.T) {
			e := newEnv(t)
			e.llm.Enqueue(
				llmtest.ToolCalls(llmtest.Call("pick_color", `{"hint":"warm"}`).WithID("call_ui")),
				llmtest.Text("You picked blue."),
				llmtest.Stream().Role().Content("Counting ", "one, ").Hang())
			in := d.input("thread-dialect", "run-1", user("u1", "Pick a color"))
			in["tools"] = []any{pickColor}
			r1 := e.run(in)
			in2 := d.input("thread-dialect", "run-2", user("u1", "Pick a color"),
				map[string]any{"id": "m1", "role": "assistant", "toolCalls": []any{
					map[string]any{"id": "call_ui", "type": "function", "function": map[string]any{"name": "pick_color", "arguments": `{"hint":"warm"}`}}}},
				map[string]any{"id": "t1", "role": "tool", "toolCallId": "call_ui", "content": "blue"})
			in2["tools"] = []any{pickColor}
			r2 := e.run(in2)

			// The third run streams until the turn is interrupted through
			// the native API (another tab, an operator, A2A cancel).
			in3 := d.input("thread-dialect", "run-3", user("u1", "Pick a color"), user("u2", "Count"))
			resp, br := e.openRun(testCtx(t), in3)
			head := readUntil(t, br, `"delta":"one, "`)
			conv, err := e.eng.Conversation(testCtx(t), ConversationID("", "thread-dialect"))
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := conv.Interrupt(testCtx(t)); !ok || err != nil {
				t.Fatalf("interrupt: %v %v", ok, err)
			}
			rest, _ := io.ReadAll(br)
			resp.Body.Close()
			r3 := response{status: 200}
			r3.frames, r3.events = parseFrames(t, []byte(head+string(rest)))
			b3, _ := json.Marshal(in3)
			var ids struct{ ThreadID, RunID string }
			json.Unmarshal(b3, &ids)
			verifyRun(t, r3.events, ids.ThreadID, ids.RunID)

			golden(t, d.file, transcript(r1, r2, r3))
			finish := func(r response) map[string]any { return r.events[len(r.events)-1] }
			for i, r := range []response{r1, r2, r3} {
				if finish(r)["type"] != RunFinished {
					t.Fatalf("run %d ends %v", i+1, finish(r))
				}
			}
			outcome := func(r response) string { b, _ := json.Marshal(finish(r)["outcome"]); return string(b) }
			if d.name == "1.0" {
				if outcome(r1) != `{"pendingToolCallIds":["call_ui"],"type":"success"}` || outcome(r3) != `{"type":"cancelled"}` {
					t.Fatalf("1.0 outcomes %s %s", outcome(r1), outcome(r3))
				}
			} else {
				for i, r := range []response{r1, r2, r3} {
					if _, ok := finish(r)["outcome"]; ok {
						t.Fatalf("pre-1.0 run %d has an outcome: %s", i+1, outcome(r))
					}
				}
			}
			if got := journalTypes(e.journal(ConversationID("", "thread-dialect"))); got != "user_message,tool_call,tool_result,assistant_message,user_message,assistant_message" {
				t.Fatalf("journal %s", got)
			}
		})
	}
}

// TestRegenerateAnswersAgain: CopilotKit's Regenerate cuts the thread
// after the user message and runs it again. The run answers that message
// again on a new branch (SPEC §18): the model is called again, with the
// head path up to the question only, the new answer streams as usual and
// the old one stays in the journal, a sibling of the new.
func TestRegenerateAnswersAgain(t *testing.T) {
	e := newEnv(t)
	e.llm.Enqueue(llmtest.Text("Hello there"), llmtest.Text("Second answer"))
	e.run(input00("thread-regen", "run-1", user("u1", "Hi")))
	r := e.run(input00("thread-regen", "run-2", user("u1", "Hi")))
	golden(t, "regenerate.golden", transcript(r))
	if got := strings.Join(typesOf(r.events), ","); strings.Contains(got, MessagesSnapshot) || !strings.Contains(got, TextMessageContent) {
		t.Fatalf("regenerate: %s", got)
	}
	if got := texts(r); got != "Second answer" {
		t.Fatalf("regenerated answer %q", got)
	}
	reqs := e.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model called %d times", len(reqs))
	}
	for _, m := range reqs[1].Messages {
		if strings.Contains(m.Text(), "Hello there") {
			t.Fatalf("the model was shown the answer it replaces: %+v", reqs[1].Messages)
		}
	}
	conv := ConversationID("", "thread-regen")
	head := e.journal(conv)
	if got := journalTypes(head); got != "user_message,assistant_message" || agentik.JoinText(head[1].Content) != "Second answer" {
		t.Fatalf("head path %s %+v", got, head)
	}
	all := e.allMessages(conv)
	if len(all) != 3 || agentik.JoinText(all[1].Content) != "Hello there" || all[1].Parent != all[0].Seq || all[2].Parent != all[0].Seq {
		t.Fatalf("every branch: %+v", all)
	}

	// A client in step (it sends the new answer back) gets no snapshot and
	// no regenerate; a new message is answered on the head path.
	e.llm.Enqueue(llmtest.Text("More to say"))
	r = e.run(input00("thread-regen", "run-3", user("u1", "Hi"),
		map[string]any{"id": "m-any", "role": "assistant", "content": "Second answer"}, user("u2", "More")))
	if got := strings.Join(typesOf(r.events), ","); strings.Contains(got, MessagesSnapshot) || texts(r) != "More to say" {
		t.Fatalf("next run: %s %q", got, texts(r))
	}
	if got := journalTypes(e.journal(conv)); got != "user_message,assistant_message,user_message,assistant_message" {
		t.Fatalf("journal %s", got)
	}
	if n := len(e.llm.Requests()); n != 3 {
		t.Fatalf("model called %d times", n)
	}

	// A run whose new messages were stored as one turn's input: cutting
	// after the last of them regenerates that turn.
	e.llm.Enqueue(llmtest.Text("Both answered"), llmtest.Text("Both answered again"))
	e.run(input00("thread-regen-2", "run-1", user("a", "One"), user("b", "Two")))
	r = e.run(input00("thread-regen-2", "run-2", user("a", "One"), user("b", "Two")))
	if got := texts(r); got != "Both answered again" {
		t.Fatalf("regenerate after a two-message run: %q %v", got, r.frames)
	}
	if n := len(e.llm.Requests()); n != 5 {
		t.Fatalf("model called %d times", n)
	}
}

// TestRegenerateWhileAnswering: a run that ends at a user message whose
// turn is still running is not a regenerate (its turn is open): it reports,
// and the model is not called again.
func TestRegenerateWhileAnswering(t *testing.T) {
	e := newEnv(t)
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	e.llm.Enqueue(llmtest.Stream().Role().Content("Half, ").Pause(gate).Content("whole.").Finish("stop").Done())
	conv := ConversationID("", "thread-busy")
	done := make(chan response, 1)
	go func() {
		b, _ := json.Marshal(input00("thread-busy", "run-1", user("u1", "Hi")))
		done <- e.post(string(b))
	}()
	<-gate.Reached()
	r := e.run(input00("thread-busy", "run-2", user("u1", "Hi")))
	if got := strings.Join(typesOf(r.events), ","); strings.Contains(got, TextMessageStart) {
		t.Fatalf("a second answer was started: %s", got)
	}
	gate.Release()
	first := <-done
	_, first.events = parseFrames(t, first.body)
	if got := texts(first); got != "Half, whole." {
		t.Fatalf("first run: %q", got)
	}
	if n := len(e.llm.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	if all := e.allMessages(conv); len(all) != 2 {
		t.Fatalf("journal: %+v", all)
	}
}
