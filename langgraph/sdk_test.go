package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/tools"
)

const npmDir = "testdata/npm"

// sendMail is a tool the approval policy asks about.
type sendMail struct{}

func (sendMail) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "send_mail", Description: "Send a mail",
		Parameters: agentik.RawJSON(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`), Source: "builtin"}
}

func (sendMail) Call(_ context.Context, args agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("sent " + string(args))}}, nil
}

// env is one stack with the door on a real listener. Callers authenticate
// with x-api-key, which names their principal (the edge's token lookup is
// the process's; here the key is the principal).
type env struct {
	t   *testing.T
	st  *stacktest.Stack
	url string
}

func newEnv(t *testing.T, eopts ...func(*engine.Options)) *env {
	t.Helper()
	return newEnvWith(t, nil, eopts...)
}

// newEnvWith is newEnv with more options of the stack (its model's).
func newEnvWith(t *testing.T, more []stacktest.Option, eopts ...func(*engine.Options)) *env {
	t.Helper()
	testenv.NPM(t, npmDir)
	st := stacktest.New(t, append([]stacktest.Option{stacktest.Engine(func(o *engine.Options) {
		o.Tools = tools.NewRegistry(sendMail{})
		o.Approval = agentik.ApprovalPolicy{{Pattern: "send_*", Action: agentik.ApprovalAsk}}
		for _, f := range eopts {
			f(o)
		}
	})}, more...)...)
	h := New(Options{Agents: func(context.Context) []agentik.Agent { return []agentik.Agent{st.Engine} }, KeepAlive: time.Second})
	mux := http.NewServeMux()
	h.Mount(mux, "/langgraph", func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(agentik.WithPrincipal(r.Context(), r.Header.Get("X-Api-Key"))))
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{t: t, st: st, url: srv.URL + "/langgraph"}
}

// node runs one scenario of e2e.mjs as principal and decodes its output.
func (e *env) node(principal, scenario string, arg any, out any) {
	e.t.Helper()
	extra, _ := json.Marshal(arg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "e2e.mjs", e.url, principal, scenario, string(extra))
	cmd.Dir = npmDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("node %s: %v\n%s", scenario, err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		e.t.Fatalf("node %s: %v\n%s", scenario, err, b)
	}
}

// journal is the stored head path of a thread as principal reads it.
func (e *env) journal(principal, id string) []agentik.Message {
	return stacktest.Journal(e.t, e.st.Engine, id, principal)
}

type sseEvent struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
	ID    string          `json:"id"`
}

func events(evs []sseEvent, name string) []sseEvent {
	var out []sseEvent
	for _, e := range evs {
		if e.Event == name {
			out = append(out, e)
		}
	}
	return out
}

func lastValues(t *testing.T, evs []sseEvent) Values {
	t.Helper()
	vs := events(evs, "values")
	if len(vs) == 0 {
		t.Fatalf("no values event in %v", evs)
	}
	var v Values
	if err := json.Unmarshal(vs[len(vs)-1].Data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func text(m LCMessage) string {
	var s string
	json.Unmarshal(m.Content, &s)
	return s
}

// TestLangGraphSDKBasic: the official SDK's reads and a streamed run: the
// stream carries metadata first, the answer in pieces (messages-tuple),
// updates and values, and ends with end; the state, history, runs and
// search agree with the journal.
func TestLangGraphSDKBasic(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("general kenobi you are a bold one"))
	var out struct {
		Assistants   []Assistant
		Thread       Thread
		RunID        string
		Events       []sseEvent
		State        ThreadState
		History      []ThreadState
		Runs         []Run
		Run          Run
		Found        []Thread
		Patched      Thread
		AtCheckpoint ThreadState
		Ok           map[string]bool
		Info         int
		Assistant    Assistant
		Schemas      struct {
			GraphID     string `json:"graph_id"`
			StateSchema struct {
				Properties map[string]json.RawMessage
			} `json:"state_schema"`
		}
		Graph struct {
			Nodes []struct{ ID string }
		}
		Got Thread
	}
	e.node("alice", "basic", nil, &out)
	if len(out.Assistants) != 1 || out.Assistants[0].AssistantID != "agentik" || out.Assistants[0].GraphID != "agentik" {
		t.Fatalf("assistants %+v", out.Assistants)
	}
	if out.Assistant.AssistantID != "agentik" || out.Assistant.GraphID != "agentik" {
		t.Fatalf("assistant %+v", out.Assistant)
	}
	if _, ok := out.Schemas.StateSchema.Properties["messages"]; !ok || out.Schemas.GraphID != "agentik" {
		t.Fatalf("schemas %+v", out.Schemas)
	}
	if !slices.ContainsFunc(out.Graph.Nodes, func(n struct{ ID string }) bool { return n.ID == agentNode }) {
		t.Fatalf("graph %+v", out.Graph)
	}
	// threads.get is the created thread (read after the run, before the
	// update): same id, creation date and metadata, idle.
	if out.Got.ThreadID != out.Thread.ThreadID || !out.Got.CreatedAt.Equal(out.Thread.CreatedAt.Time) ||
		!reflect.DeepEqual(out.Got.Metadata, out.Thread.Metadata) || out.Got.Status != "idle" {
		t.Fatalf("threads.get %+v, created %+v", out.Got, out.Thread)
	}
	j := e.journal("alice", out.Thread.ThreadID)
	if len(j) != 2 || agentik.JoinText(j[0].Content) != "hello there" || agentik.JoinText(j[1].Content) != "general kenobi you are a bold one" {
		t.Fatalf("journal %+v", j)
	}
	if out.RunID != j[0].ID {
		t.Fatalf("run id %q, the user message is %q", out.RunID, j[0].ID)
	}
	if out.Events[0].Event != "metadata" || out.Events[len(out.Events)-1].Event != "end" {
		t.Fatalf("stream %v", out.Events)
	}
	var streamed strings.Builder
	for _, m := range events(out.Events, "messages") {
		var tuple []json.RawMessage
		json.Unmarshal(m.Data, &tuple)
		var chunk LCMessage
		json.Unmarshal(tuple[0], &chunk)
		streamed.WriteString(text(chunk))
	}
	if streamed.String() != "general kenobi you are a bold one" {
		t.Fatalf("streamed %q", streamed.String())
	}
	if len(events(out.Events, "updates")) != 1 {
		t.Fatalf("updates %v", events(out.Events, "updates"))
	}
	v := lastValues(t, out.Events)
	if len(v.Messages) != 2 || v.Messages[0].Type != "human" || v.Messages[1].Type != "ai" || v.Messages[1].ID != j[1].ID {
		t.Fatalf("values %+v", v)
	}
	if len(out.State.Values.Messages) != 2 || out.State.Checkpoint.CheckpointID != checkpointID(out.Thread.ThreadID, j[1].Seq) {
		t.Fatalf("state %+v", out.State)
	}
	// History: the answer, the input, the empty thread; newest first.
	if len(out.History) != 3 || len(out.History[0].Values.Messages) != 2 || len(out.History[1].Values.Messages) != 1 || len(out.History[2].Values.Messages) != 0 {
		t.Fatalf("history %+v", out.History)
	}
	if out.History[0].ParentCheckpoint == nil || out.History[0].ParentCheckpoint.CheckpointID != out.History[1].Checkpoint.CheckpointID {
		t.Fatalf("parent checkpoints %+v", out.History)
	}
	if len(out.AtCheckpoint.Values.Messages) != 1 {
		t.Fatalf("state at the input's checkpoint %+v", out.AtCheckpoint)
	}
	if len(out.Runs) != 1 || out.Runs[0].RunID != j[0].ID || out.Runs[0].Status != "success" || out.Run.Status != "success" {
		t.Fatalf("runs %+v %+v", out.Runs, out.Run)
	}
	if len(out.Found) != 1 || out.Found[0].ThreadID != out.Thread.ThreadID || out.Found[0].Status != "idle" {
		t.Fatalf("search %+v", out.Found)
	}
	if out.Patched.Metadata["title"] != "renamed" || out.Thread.Metadata["title"] != "first" {
		t.Fatalf("metadata %v → %v", out.Thread.Metadata, out.Patched.Metadata)
	}
	if !out.Ok["ok"] || out.Info != 200 {
		t.Fatalf("ok %v info %d", out.Ok, out.Info)
	}
}

// A streamed run whose subscriber lost deltas (the bus had no room for
// them) still carries the answer's text whole in its messages events, as
// the official SDK reads them: the rest comes from the stored message,
// with no gap and no repeat.
func TestLangGraphSDKLostDeltasArriveWhole(t *testing.T) {
	e := newEnv(t, stacktest.LoseDeltas)
	reply, want := stacktest.LossyAnswer(40)
	e.st.LLM.Enqueue(reply)
	var out struct{ Events []sseEvent }
	e.node("alice", "basic", nil, &out)
	var streamed strings.Builder
	for _, m := range events(out.Events, "messages") {
		var tuple []json.RawMessage
		json.Unmarshal(m.Data, &tuple)
		var chunk LCMessage
		json.Unmarshal(tuple[0], &chunk)
		streamed.WriteString(text(chunk))
	}
	if streamed.String() != want {
		t.Fatalf("streamed %q\nwant %q", streamed.String(), want)
	}
	if v := lastValues(t, out.Events); len(v.Messages) != 2 || text(v.Messages[1]) != want {
		t.Fatalf("values %+v", v)
	}
}

// TestLangGraphSDKWaitAndBackground: runs.wait answers the final values (on
// a thread and stateless); a background run is joined and then succeeded.
func TestLangGraphSDKWaitAndBackground(t *testing.T) {
	mem := memstore.New()
	e := newEnv(t, func(o *engine.Options) { o.Temporal = mem })
	e.st.LLM.Enqueue(llmtest.Text("waited"), llmtest.Text("stateless answer"), llmtest.Text("streamed without a thread"), llmtest.Text("kept"))
	var w struct {
		Thread          Thread
		Values          Values
		Stateless       Values
		StatelessStream []sseEvent
		Kept            Values
		BadCompletion   int
	}
	e.node("alice", "wait", nil, &w)
	// A stateless run's thread goes once its answer is given
	// (on_completion: delete, the default); on_completion: keep keeps it.
	temp, _, err := mem.ListConversations(context.Background(), "alice", 100, "")
	if err != nil || len(temp) != 1 || len(w.Kept.Messages) != 2 || text(w.Kept.Messages[1]) != "kept" {
		t.Fatalf("temporal threads left %+v (%v), want the kept one (%+v)", temp, err, w.Kept)
	}
	if w.BadCompletion != 422 {
		t.Fatalf("on_completion complete: %d, want 422", w.BadCompletion)
	}
	if v := lastValues(t, w.StatelessStream); len(v.Messages) != 2 || text(v.Messages[1]) != "streamed without a thread" {
		t.Fatalf("stateless stream %+v", v)
	}
	if len(w.Values.Messages) != 2 || text(w.Values.Messages[1]) != "waited" {
		t.Fatalf("wait %+v", w.Values)
	}
	if len(w.Stateless.Messages) != 2 || text(w.Stateless.Messages[1]) != "stateless answer" {
		t.Fatalf("stateless %+v", w.Stateless)
	}
	e.st.LLM.Enqueue(llmtest.Text("done in the background"))
	var b struct {
		Thread  Thread
		Run     Run
		Joined  Values
		After   Run
		Deleted int
		Count   int
	}
	e.node("alice", "background", nil, &b)
	if b.Deleted != 200 {
		t.Fatalf("deleting a finished run: %d", b.Deleted)
	}
	if b.Count != 2 { // the wait scenario's thread and this one (stateless runs are temporal)
		t.Fatalf("thread count %d", b.Count)
	}
	if b.Run.Status != "pending" && b.Run.Status != "running" && b.Run.Status != "success" {
		t.Fatalf("created run %+v", b.Run)
	}
	if len(b.Joined.Messages) != 2 || text(b.Joined.Messages[1]) != "done in the background" || b.After.Status != "success" {
		t.Fatalf("joined %+v after %+v", b.Joined, b.After)
	}
	j := e.journal("alice", b.Thread.ThreadID)
	if len(j) != 2 || j[0].ID != b.Run.RunID {
		t.Fatalf("journal %+v", j)
	}
}

// TestLangGraphSDKCancel: joinStream follows a running background run; a
// cancel with wait interrupts it, and the run says so.
func TestLangGraphSDKCancel(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Stream().Role().Content("first ").Hang())
	var out struct {
		Run     Run
		Seen    []sseEvent
		Running Run
		After   Run
	}
	e.node("alice", "cancel", nil, &out)
	if out.Running.Status != "running" {
		t.Fatalf("while streaming: %+v", out.Running)
	}
	if out.After.Status != "interrupted" {
		t.Fatalf("after cancel: %+v", out.After)
	}
	if len(events(out.Seen, "messages")) == 0 || out.Seen[len(out.Seen)-1].Event != "end" {
		t.Fatalf("joined stream %v", out.Seen)
	}
}

// TestLangGraphSDKApproval: a call that waits for approval ends the run as
// an interrupt in LangChain's HITL shape; command.resume answers it:
// approve runs the call, edit runs it with the edited arguments, reject
// gives the model the refusal.
func TestLangGraphSDKApproval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision map[string]any
		result   string
	}{
		{"approve", map[string]any{"type": "approve"}, `sent {"to":"bob"}`},
		{"edit", map[string]any{"type": "edit", "edited_action": map[string]any{"name": "send_mail", "args": map[string]any{"to": "carol"}}}, `sent {"to":"carol"}`},
		{"reject", map[string]any{"type": "reject", "message": "not now"}, agentik.DeniedText("not now")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.st.LLM.Enqueue(llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"bob"}`)), llmtest.Text("all done"),
				llmtest.ToolCalls(llmtest.Call("send_mail", `{"to":"carol"}`)))
			var out struct {
				First       []sseEvent
				Waiting     ThreadState
				Th          Thread
				Second      []sseEvent
				State       ThreadState
				UpdatesOnly []sseEvent
			}
			e.node("alice", "approval", map[string]any{"decision": tc.decision}, &out)
			v := lastValues(t, out.First)
			if len(v.Interrupt) != 1 || len(v.Interrupt[0].Value.ActionRequests) != 1 || v.Interrupt[0].Value.ActionRequests[0].Name != "send_mail" {
				t.Fatalf("first run's interrupt %+v", v)
			}
			if rc := v.Interrupt[0].Value.ReviewConfigs; len(rc) != 1 || strings.Join(rc[0].AllowedDecisions, ",") != "approve,edit,reject" {
				t.Fatalf("review configs %+v", rc)
			}
			if len(out.Waiting.Tasks) != 1 || len(out.Waiting.Tasks[0].Interrupts) != 1 || out.Waiting.Next[0] != agentNode || out.Th.Status != "interrupted" {
				t.Fatalf("waiting state %+v thread %+v", out.Waiting, out.Th)
			}
			final := lastValues(t, out.Second)
			if n := len(final.Messages); n != 4 || text(final.Messages[n-1]) != "all done" || final.Messages[2].Type != "tool" || text(final.Messages[2]) != tc.result {
				t.Fatalf("after resume %+v", final.Messages)
			}
			if calls := final.Messages[1].ToolCalls; len(calls) != 1 || calls[0].ID == "" || final.Messages[2].ToolCallID != calls[0].ID {
				t.Fatalf("the tool message's tool_call_id %q, the call %+v", final.Messages[2].ToolCallID, calls)
			}
			if len(out.State.Tasks) != 0 || len(out.State.Interrupts) != 0 {
				t.Fatalf("state after resume %+v", out.State)
			}
			// A stream without values: the call's update (an ai message with
			// its tool call), then the interrupt.
			ups := events(out.UpdatesOnly, "updates")
			if len(ups) != 2 || !strings.Contains(string(ups[0].Data), `"send_mail"`) || !strings.Contains(string(ups[1].Data), "__interrupt__") {
				t.Fatalf("updates without values: %v", out.UpdatesOnly)
			}
		})
	}
}

// TestLangGraphSDKRejoin: a resumable stream has ids on its durable points;
// joinStream with Last-Event-ID replays exactly what came after that id.
func TestLangGraphSDKRejoin(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("resumed answer"))
	var out struct {
		RunID string
		First []sseEvent
		Rest  []sseEvent
	}
	e.node("alice", "rejoin", nil, &out)
	// An SSE client keeps the last id for the events after it: the ids
	// are those of the values events, one per stored message.
	var ids []string
	for _, ev := range events(out.First, "values") {
		ids = append(ids, ev.ID)
	}
	if len(ids) != 2 {
		t.Fatalf("ids %v in %v", ids, out.First)
	}
	vs := events(out.Rest, "values")
	if len(vs) != 1 || vs[0].ID != ids[1] || out.Rest[len(out.Rest)-1].Event != "end" {
		t.Fatalf("rejoined after %s: %v", ids[0], out.Rest)
	}
	if v := lastValues(t, out.Rest); len(v.Messages) != 2 || text(v.Messages[1]) != "resumed answer" {
		t.Fatalf("rejoined values %+v", v)
	}
}

// TestLangGraphSDKErrors: what is not there, another principal's, or not
// supported is a clear 404/409/422 and stores nothing: a refused run
// (unknown assistant or thread, bad input) calls no model, and a refused
// stateless run leaves no temporal conversation behind.
func TestLangGraphSDKErrors(t *testing.T) {
	mem := memstore.New()
	e := newEnv(t, func(o *engine.Options) { o.Temporal = mem })
	e.st.LLM.Enqueue(llmtest.Text("bob's answer"))
	var bob struct{ Thread Thread }
	e.node("bob", "wait", nil, &struct{ Thread *Thread }{&bob.Thread})
	before := e.journal("bob", bob.Thread.ThreadID)
	calls := len(e.st.LLM.Requests())
	var out map[string]json.RawMessage
	e.node("alice", "errors", map[string]any{"otherThread": bob.Thread.ThreadID}, &out)
	want := map[string]int{"unknownAssistant": 404, "unknownThread": 404, "otherThread": 404, "otherState": 404, "otherRun": 404,
		"badMode": 422, "badStrategy": 422, "noInterrupt": 409, "badCheckpoint": 404, "unknownRun": 404,
		"runUnknownAssistant": 404, "runUnknownThread": 404, "statelessUnknownAssistant": 404,
		"statelessSystem": 422, "statelessStreamSystem": 422, "statelessResume": 409, "statelessNoInput": 422}
	for k, code := range want {
		var got int
		if err := json.Unmarshal(out[k], &got); err != nil || got != code {
			t.Errorf("%s: %s, want %d", k, out[k], code)
		}
	}
	var th Thread
	json.Unmarshal(out["thread"], &th)
	if j := e.journal("alice", th.ThreadID); len(j) != 0 {
		t.Fatalf("refused runs stored %+v", j)
	}
	if after := e.journal("bob", bob.Thread.ThreadID); len(after) != len(before) {
		t.Fatalf("another principal's run changed bob's thread: %d → %d messages", len(before), len(after))
	}
	// The refused runs left alice no conversation but her one thread: no
	// temporal one of a refused stateless run, no thread of a run on an
	// unknown thread; and called no model.
	ctx := context.Background()
	if temp, _, err := mem.ListConversations(ctx, "alice", 100, ""); err != nil || len(temp) != 0 {
		t.Fatalf("refused stateless runs left %d temporal conversations (%v)", len(temp), err)
	}
	if kept, _, err := e.st.Store.ListConversations(ctx, "alice", 100, ""); err != nil || len(kept) != 1 || kept[0].ID != th.ThreadID {
		t.Fatalf("alice's conversations %+v (%v)", kept, err)
	}
	if n := len(e.st.LLM.Requests()); n != calls {
		t.Fatalf("refused runs called the model: %d → %d calls", calls, n)
	}
	var gone struct{ Gone int }
	e.node("alice", "remove", nil, &gone)
	if gone.Gone != 404 {
		t.Fatalf("deleted thread answers %d", gone.Gone)
	}
}

// TestLangGraphSDKBranches: a run from the checkpoint after a human message
// answers it again on a new branch; a run from the checkpoint before it
// with new input is an edit; the old branches stay in the history (every
// checkpoint, with parents that form the tree) and in the journal; the
// model saw exactly the head path each time; copy forks the head path.
func TestLangGraphSDKBranches(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Text("answer one"), llmtest.Text("answer two"), llmtest.Text("answer two again"), llmtest.Text("answer to the edit"))
	var out struct {
		Thread      Thread
		Before      []ThreadState
		Regenerated Values
		Edited      Values
		History     []ThreadState
		HeadOnly    []ThreadState
		State       ThreadState
		Old         ThreadState
		Copy        Thread
		CopyState   ThreadState
	}
	e.node("alice", "branch", nil, &out)
	texts := func(ms []LCMessage) string {
		var s []string
		for _, m := range ms {
			s = append(s, text(m))
		}
		return strings.Join(s, "|")
	}
	if got := texts(out.Regenerated.Messages); got != "first question|answer one|second question|answer two again" {
		t.Fatalf("regenerated %s", got)
	}
	if got := texts(out.Edited.Messages); got != "first question|answer one|second question, edited|answer to the edit" {
		t.Fatalf("edited %s", got)
	}
	if got := texts(out.State.Values.Messages); got != texts(out.Edited.Messages) {
		t.Fatalf("state %s", got)
	}
	if got := texts(out.Old.Values.Messages); got != "first question|answer one|second question" {
		t.Fatalf("old checkpoint %s", got)
	}
	// The model saw the head path: the regenerate's request ends with the
	// second question once, the edit's with the edited one and not the old.
	reqs := e.st.LLM.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls", len(reqs))
	}
	for i, want := range []struct {
		users int
		last  string
	}{{1, "first question"}, {2, "second question"}, {2, "second question"}, {2, "second question, edited"}} {
		if n, last := userMessages(reqs[i]), lastUser(reqs[i]); n != want.users || last != want.last {
			t.Errorf("call %d saw %d user messages ending %q, want %d ending %q", i, n, last, want.users, want.last)
		}
	}
	// History: every checkpoint of every branch, each child pointing at
	// its parent; three answers hang off the first answer's subtree.
	ids := map[string]bool{}
	for _, s := range out.History {
		ids[s.Checkpoint.CheckpointID] = true
	}
	for _, s := range out.History {
		if s.ParentCheckpoint != nil && !ids[s.ParentCheckpoint.CheckpointID] {
			t.Fatalf("checkpoint %s has an unknown parent %s", s.Checkpoint.CheckpointID, s.ParentCheckpoint.CheckpointID)
		}
	}
	if len(out.History) != len(out.Before)+3 {
		t.Fatalf("history %d states, before the branches %d", len(out.History), len(out.Before))
	}
	// The head path alone: the history of the current checkpoint, each
	// state a prefix of the head path, newest first, down to the empty one.
	head := texts(out.State.Values.Messages)
	for i, st := range out.HeadOnly {
		if got := texts(st.Values.Messages); !strings.HasPrefix(head, got) || (i > 0 && len(st.Values.Messages) >= len(out.HeadOnly[i-1].Values.Messages)) {
			t.Fatalf("head-path history state %d: %q (head %q)", i, got, head)
		}
	}
	if n := len(out.HeadOnly); n < 3 || len(out.HeadOnly[n-1].Values.Messages) != 0 || out.HeadOnly[0].Checkpoint.CheckpointID != out.State.Checkpoint.CheckpointID {
		t.Fatalf("head-path history %d states", n)
	}
	j := e.journal("alice", out.Thread.ThreadID)
	if len(j) != 4 {
		t.Fatalf("head path %d messages", len(j))
	}
	if got := texts(out.CopyState.Values.Messages); out.Copy.ThreadID == out.Thread.ThreadID || got != texts(out.Edited.Messages) {
		t.Fatalf("copy %s: %s", out.Copy.ThreadID, got)
	}
}

// userMessages counts the user messages a model call carried.
func userMessages(r llmtest.Request) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "user" {
			n++
		}
	}
	return n
}

func lastUser(r llmtest.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// TestLangGraphSDKRollback: a run with multitask_strategy rollback while
// another runs cuts the running one and takes its place: the state holds
// the new exchange only, the cut run is interrupted, and its message stays
// in the history on its own branch.
func TestLangGraphSDKRollback(t *testing.T) {
	e := newEnv(t)
	e.st.LLM.Enqueue(llmtest.Stream().Role().Content("slow ").Hang(), llmtest.Text("fresh answer"))
	var out struct {
		Thread  Thread
		Values  Values
		Old     Run
		History []ThreadState
	}
	e.node("alice", "rollback", nil, &out)
	var got []string
	for _, m := range out.Values.Messages {
		got = append(got, m.Type+":"+text(m))
	}
	if strings.Join(got, "|") != "human:new question|ai:fresh answer" {
		t.Fatalf("values after the rollback: %v", got)
	}
	if out.Old.Status != "interrupted" {
		t.Fatalf("the rolled-back run: %+v", out.Old)
	}
	found := false
	for _, s := range out.History {
		for _, m := range s.Values.Messages {
			found = found || text(m) == "slow question"
		}
	}
	if !found {
		t.Fatalf("the rolled-back question is not in the history")
	}
}
