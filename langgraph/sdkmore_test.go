package langgraph

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
)

func threadIDs(ts []Thread) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.ThreadID)
	}
	return strings.Join(s, ",")
}

// TestLangGraphSDKSearchValues: threads.search by values matches the
// top-level keys of a thread's values (a shared-state key, messages) by
// JSON equality; count agrees.
func TestLangGraphSDKSearchValues(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("found"))
	var out struct {
		Red, Blue                                                  Thread
		ByColor, ByTwo, None, WrongType, ByMessages, EmptyMessages []Thread
		Count                                                      int
	}
	e.node("alice", "searchValues", nil, &out)
	red, blue := out.Red.ThreadID, out.Blue.ThreadID
	for name, c := range map[string]struct {
		got  []Thread
		want string
	}{
		"byColor": {out.ByColor, red}, "byTwo": {out.ByTwo, red}, "none": {out.None, ""}, "wrongType": {out.WrongType, ""},
		"byMessages": {out.ByMessages, red}, "emptyMessages": {out.EmptyMessages, blue},
	} {
		if got := threadIDs(c.got); got != c.want {
			t.Errorf("%s: %s, want %s", name, got, c.want)
		}
	}
	if out.Count != 1 {
		t.Errorf("count by values %d", out.Count)
	}
}

// TestLangGraphSDKDeleteRun: deleting a finished run removes its record —
// it leaves the runs listing, and get, join and a second delete are 404 —
// while its messages stay in the thread; a running run is 409.
func TestLangGraphSDKDeleteRun(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("one answer"), llmtest.Stream().Role().Content("slow ").Hang())
	var out struct {
		Done, Slow                         Run
		Running, Deleted, Again, Get, Join int
		List                               []Run
		State                              ThreadState
	}
	e.node("alice", "deleteRun", nil, &out)
	if out.Running != 409 || out.Deleted != 200 || out.Again != 404 || out.Get != 404 || out.Join != 404 {
		t.Fatalf("running %d, deleted %d, again %d, get %d, join %d", out.Running, out.Deleted, out.Again, out.Get, out.Join)
	}
	if len(out.List) != 1 || out.List[0].RunID != out.Slow.RunID {
		t.Fatalf("runs after the delete %+v", out.List)
	}
	if ms := out.State.Values.Messages; len(ms) < 3 || ms[0].ID != out.Done.RunID || text(ms[1]) != "one answer" {
		t.Fatalf("the deleted run's messages left the state: %+v", ms)
	}
	if j := e.journal("alice", out.State.Checkpoint.ThreadID); len(j) < 3 || j[0].ID != out.Done.RunID {
		t.Fatalf("journal %+v", j)
	}
}

// TestLangGraphSDKMultitask: while a run runs, reject is 409 and stores
// nothing, enqueue waits (pending) and is answered after the running run,
// interrupt cuts the running run and answers the new input.
func TestLangGraphSDKMultitask(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Stream().Role().Content("slow ").Hang(), llmtest.Text("queued answer"),
		llmtest.Stream().Role().Content("slow again ").Hang(), llmtest.Text("after the cut"))
	var out struct {
		Thread                                                   Thread
		Rejected                                                 int
		Queued, QueuedBefore, SlowAfter, QueuedAfter, Slow2After Run
		QueuedValues, Cut                                        Values
	}
	e.node("alice", "multitask", nil, &out)
	if out.Rejected != 409 {
		t.Fatalf("reject while running: %d", out.Rejected)
	}
	if out.QueuedBefore.Status != "pending" || out.QueuedAfter.Status != "success" || out.SlowAfter.Status != "interrupted" {
		t.Fatalf("queued before %s after %s; slow after %s", out.QueuedBefore.Status, out.QueuedAfter.Status, out.SlowAfter.Status)
	}
	if ms := out.QueuedValues.Messages; text(ms[len(ms)-1]) != "queued answer" {
		t.Fatalf("queued run's values %+v", ms)
	}
	// The cut answer is written when it is cut: after the message that cut it.
	if ms := out.Cut.Messages; len(ms) < 3 || text(ms[len(ms)-3]) != "cut in" || text(ms[len(ms)-2]) != "slow again " || text(ms[len(ms)-1]) != "after the cut" || out.Slow2After.Status != "interrupted" {
		t.Fatalf("interrupt: %+v, the cut run %s", ms, out.Slow2After.Status)
	}
	for _, m := range e.journal("alice", out.Thread.ThreadID) {
		if m.Type == agentik.MsgUser && agentik.JoinText(m.Content) == "rejected" {
			t.Fatalf("the rejected run's message was stored")
		}
	}
	if n := len(e.st.LLM.Requests()); n != 4 {
		t.Fatalf("%d model calls", n)
	}
}

// TestLangGraphSDKStreamModes: the older messages mode carries the
// answer's metadata and growing partials; events carries on_chain_start,
// one on_chat_model_stream per piece and on_chain_end with the output.
func TestLangGraphSDKStreamModes(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Stream().Role().Content("old ", "mode").Finish("stop").Usage(1, 2).Done(),
		llmtest.Stream().Role().Content("events ", "answer").Finish("stop").Usage(1, 2).Done())
	var out struct {
		Messages, Events []sseEvent
	}
	e.node("alice", "modes", nil, &out)
	if len(events(out.Messages, "messages/metadata")) != 1 {
		t.Fatalf("messages mode: %v", out.Messages)
	}
	parts := events(out.Messages, "messages/partial")
	var last []LCMessage
	if len(parts) != 2 || json.Unmarshal(parts[1].Data, &last) != nil || len(last) != 1 || text(last[0]) != "old mode" {
		t.Fatalf("partials %v", parts)
	}
	// The answer whole, under its partials' id, once: after the last
	// partial, before the end.
	var whole []LCMessage
	done := events(out.Messages, "messages/complete")
	if len(done) != 1 || json.Unmarshal(done[0].Data, &whole) != nil || len(whole) != 1 ||
		whole[0].Type != "ai" || text(whole[0]) != "old mode" || whole[0].ID != last[0].ID {
		t.Fatalf("messages/complete %v, partials %v", done, parts)
	}
	var order []string
	for _, e := range out.Messages {
		if e.Event == "messages/partial" || e.Event == "messages/complete" {
			order = append(order, e.Event)
		}
	}
	if len(order) != 3 || order[2] != "messages/complete" {
		t.Fatalf("messages/complete is not after the partials: %v", order)
	}
	evs := events(out.Events, "events")
	type lcEvent struct {
		Event string
		Name  string
		RunID string `json:"run_id"`
		Data  struct {
			Chunk  LCMessage
			Output Values
		}
	}
	var got []lcEvent
	for _, ev := range evs {
		var x lcEvent
		if err := json.Unmarshal(ev.Data, &x); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	if len(got) != 4 || got[0].Event != "on_chain_start" || got[3].Event != "on_chain_end" || got[0].RunID == "" {
		t.Fatalf("events %v", out.Events)
	}
	if got[1].Event != "on_chat_model_stream" || text(got[1].Data.Chunk)+text(got[2].Data.Chunk) != "events answer" {
		t.Fatalf("model stream events %+v", got[1:3])
	}
	if ms := got[3].Data.Output.Messages; len(ms) != 4 || text(ms[3]) != "events answer" {
		t.Fatalf("on_chain_end output %+v", ms)
	}
	if out.Events[0].Event != "metadata" || out.Events[len(out.Events)-1].Event != "end" {
		t.Fatalf("stream %v", out.Events)
	}
}

// TestLangGraphSDKCreateNamed: a thread created with thread_id has it;
// creating it again is 409 with if_exists raise and the existing thread
// with do_nothing, and nothing new is made.
func TestLangGraphSDKCreateNamed(t *testing.T) {
	e := newEnv(t)
	const id = "5f0c6a1e-2b7d-4c1a-9e3f-8a2b4c6d8e0f"
	var out struct {
		Created, Kept Thread
		Raise, Count  int
	}
	e.node("alice", "createNamed", map[string]any{"threadId": id}, &out)
	if out.Created.ThreadID != id || out.Created.Metadata["title"] != "named" {
		t.Fatalf("created %+v", out.Created)
	}
	if out.Raise != 409 || out.Kept.ThreadID != id || out.Kept.Metadata["title"] != "named" || out.Count != 1 {
		t.Fatalf("raise %d, kept %+v, count %d", out.Raise, out.Kept, out.Count)
	}
}

// TestLangGraphSDKBadRuns: another thread's checkpoint id, even without
// its thread_id (both threads have the same seqs), is 404 wherever an id
// is taken — a run (checkpoint_id, checkpoint, stateless), the state at a
// checkpoint (GET and POST), history's before and checkpoint, a copy — and
// stores nothing and calls no model; the empty thread's checkpoint still
// reads. Resume decisions of an unknown type, of the wrong number or for
// another tool are 422 and leave the interrupt waiting.
func TestLangGraphSDKBadRuns(t *testing.T) {
	mem := memstore.New()
	e := newEnv(t, func(o *engine.Options) { o.Temporal = mem })
	e.st.LLM.Enqueue(llmtest.Text("elsewhere answer"), llmtest.Text("here answer"), llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`)))
	var out struct {
		Mine, Other, Copy                     Thread
		OtherState, CopyState, Empty          ThreadState
		MineHistory                           []ThreadState
		OtherCheckpoint, OtherCheckpointRegen int
		Foreign                               map[string]int
		UnknownType, TooMany, None, OtherTool int
		Waiting, After                        ThreadState
	}
	e.node("alice", "badRuns", nil, &out)
	if out.OtherCheckpoint != 404 || out.OtherCheckpointRegen != 404 {
		t.Fatalf("another thread's checkpoint: %d, %d", out.OtherCheckpoint, out.OtherCheckpointRegen)
	}
	// The other thread's id names a seq mine has too: only its tag tells.
	otherSeq, _ := parseCheckpoint(out.Other.ThreadID, out.OtherState.Checkpoint.CheckpointID)
	if !slices.ContainsFunc(out.MineHistory, func(s ThreadState) bool {
		seq, ok := parseCheckpoint(out.Mine.ThreadID, s.Checkpoint.CheckpointID)
		return ok && seq == otherSeq
	}) {
		t.Fatalf("mine has no checkpoint at the other's seq %d: %+v", otherSeq, out.MineHistory)
	}
	foreign := []string{"getState", "postState", "runCheckpointId", "runRegenCheckpointId", "runCheckpoint", "streamCheckpointId",
		"historyBefore", "historyBeforeId", "historyCheckpoint", "statelessCheckpointId", "copyGetState"}
	for _, k := range foreign {
		if out.Foreign[k] != 404 {
			t.Errorf("%s: %d, want 404", k, out.Foreign[k])
		}
	}
	if len(out.Foreign) != len(foreign) || t.Failed() {
		t.Fatalf("foreign checks %v", out.Foreign) // the scenario stopped there
	}
	if other := e.journal("alice", out.Other.ThreadID); len(other) != 2 {
		t.Fatalf("the other thread %+v", other)
	}
	if temp, _, err := mem.ListConversations(context.Background(), "alice", 100, ""); err != nil || len(temp) != 0 {
		t.Fatalf("the refused stateless run left %+v (%v)", temp, err)
	}
	if len(out.Empty.Values.Messages) != 0 || out.Empty.Checkpoint.CheckpointID != out.MineHistory[len(out.MineHistory)-1].Checkpoint.CheckpointID {
		t.Fatalf("the empty thread's checkpoint %+v", out.Empty)
	}
	if out.CopyState.Checkpoint.ThreadID != out.Copy.ThreadID || out.CopyState.Checkpoint.CheckpointID == out.MineHistory[0].Checkpoint.CheckpointID ||
		len(out.CopyState.Values.Messages) != 2 {
		t.Fatalf("the copy's state %+v (mine %+v)", out.CopyState.Checkpoint, out.MineHistory[0].Checkpoint)
	}
	for name, code := range map[string]int{"unknownType": out.UnknownType, "tooMany": out.TooMany, "none": out.None, "otherTool": out.OtherTool} {
		if code != 422 {
			t.Errorf("%s: %d, want 422", name, code)
		}
	}
	if len(out.After.Interrupts) != 1 || out.After.Checkpoint.CheckpointID != out.Waiting.Checkpoint.CheckpointID {
		t.Fatalf("after the bad resumes %+v (waiting %+v)", out.After, out.Waiting)
	}
	j := e.journal("alice", out.Mine.ThreadID)
	if len(j) != 4 || agentik.JoinText(j[0].Content) != "here" || agentik.JoinText(j[2].Content) != "mail bob" || j[3].Type != agentik.MsgToolCall {
		t.Fatalf("journal %+v", j)
	}
	if n := len(e.st.LLM.Requests()); n != 3 {
		t.Fatalf("%d model calls", n)
	}
}

// TestLangGraphSDKImage: an image content block sent through the SDK
// reaches the model as an image_url data URL and comes back in the state.
func TestLangGraphSDKImage(t *testing.T) {
	e := newEnvWith(t, []stacktest.Option{stacktest.Model(func(o *openai.Options) { o.ImageInput = true })},
		func(o *engine.Options) { o.ImageInput = true })
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2)))
	b64 := base64.StdEncoding.EncodeToString(buf.Bytes())
	url := "data:image/png;base64," + b64
	e.st.LLM.Enqueue(llmtest.Text("a grey square"))
	var out struct {
		Values Values
		State  ThreadState
	}
	e.node("alice", "image", map[string]any{"png": b64}, &out)
	for name, ms := range map[string][]LCMessage{"values": out.Values.Messages, "state": out.State.Values.Messages} {
		var blocks []lcBlock
		if len(ms) != 2 || json.Unmarshal(ms[0].Content, &blocks) != nil || len(blocks) != 2 {
			t.Fatalf("%s: %+v", name, ms)
		}
		var u struct{ URL string }
		json.Unmarshal(blocks[1].ImageURL, &u)
		if blocks[0].Text != "what is this?" || blocks[1].Type != "image_url" || u.URL != url {
			t.Fatalf("%s: blocks %+v", name, blocks)
		}
	}
	reqs := e.st.LLM.Requests()
	found := false
	for _, m := range reqs[0].Messages {
		for _, p := range m.Parts() {
			found = found || (m.Role == "user" && p.Type == "image_url" && p.ImageURL != nil && p.ImageURL.URL == url)
		}
	}
	if !found {
		t.Fatalf("the model did not get the image: %s", reqs[0].Raw)
	}
}

// TestLangGraphLimits: the per-principal message rate applies at this door:
// over it a run is 429 with Retry-After in the door's error shape, and
// stores nothing; another principal is not limited by it.
func TestLangGraphLimits(t *testing.T) {
	e := newEnv(t, func(o *engine.Options) { o.MessagesPerMinute = 1 })
	e.st.LLM.Enqueue(llmtest.Text("first"), llmtest.Text("bob's"))
	post := func(key, path, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	thread := func(key string) string {
		res, b := post(key, "/threads", "{}")
		var th Thread
		if res.StatusCode != 200 || json.Unmarshal(b, &th) != nil {
			t.Fatalf("create: %d %s", res.StatusCode, b)
		}
		return th.ThreadID
	}
	run := `{"assistant_id":"agentik","input":{"messages":[{"type":"human","content":"hi"}]}}`
	tid := thread("alice")
	if res, b := post("alice", "/threads/"+tid+"/runs/wait", run); res.StatusCode != 200 {
		t.Fatalf("first run: %d %s", res.StatusCode, b)
	}
	res, b := post("alice", "/threads/"+tid+"/runs/wait", run)
	var body errorBody
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || json.Unmarshal(b, &body) != nil || body.Code != agentik.ERateLimited || body.Detail == "" {
		t.Fatalf("over the rate: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	if j := e.journal("alice", tid); len(j) != 2 {
		t.Fatalf("the refused run stored messages: %+v", j)
	}
	bt := thread("bob")
	if res, b := post("bob", "/threads/"+bt+"/runs/wait", run); res.StatusCode != 200 {
		t.Fatalf("bob: %d %s", res.StatusCode, b)
	}
}

// TestLangGraphSDKHistoryInput: a run's system messages and the earlier
// messages of a history a client resends go to the model as context of
// the user message (the agent's own instructions stay its own), and the
// thread shows only what the person wrote; input that ends with a tool or
// an ai message is refused with nothing stored.
func TestLangGraphSDKHistoryInput(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("Vous êtes Ada."), llmtest.Text("Hi."))
	var out struct {
		Stateless, Values Values
		State             ThreadState
		Tool, AiOnly      int
	}
	e.node("alice", "history", nil, &out)
	reqs := e.st.LLM.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	first := reqs[0].Messages[len(reqs[0].Messages)-1].Text()
	for _, want := range []string{"What is my name?", "<earlier_messages>\nuser: My name is Ada.\nassistant: Hello Ada.\n</earlier_messages>", "<instructions>\nAnswer in French.\n</instructions>"} {
		if !strings.Contains(first, want) {
			t.Fatalf("the model's user message %q lacks %q", first, want)
		}
	}
	for _, m := range reqs[0].Messages {
		if m.Role == "system" && strings.Contains(m.Text(), "Answer in French.") {
			t.Fatalf("a run's system message became the agent's: %q", m.Text())
		}
	}
	if len(out.Stateless.Messages) != 2 || text(out.Stateless.Messages[0]) != "What is my name?" || text(out.Stateless.Messages[1]) != "Vous êtes Ada." {
		t.Fatalf("stateless values %+v", out.Stateless)
	}
	if !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Text(), "<instructions>\nBe brief.\n</instructions>") {
		t.Fatalf("the thread run's instructions did not reach the model: %+v", reqs[1].Messages)
	}
	for _, v := range [][]LCMessage{out.Values.Messages, out.State.Values.Messages} {
		if len(v) != 2 || text(v[0]) != "hi" || text(v[1]) != "Hi." {
			t.Fatalf("the thread shows %+v, want the person's text and the answer", v)
		}
	}
	if out.Tool != 422 || out.AiOnly != 422 {
		t.Fatalf("input ending with a tool message: %d, with an ai message: %d, want 422", out.Tool, out.AiOnly)
	}
	if len(e.st.LLM.Requests()) != 2 {
		t.Fatal("a refused run called the model")
	}
}
