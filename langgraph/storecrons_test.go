package langgraph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memory"
	"github.com/agentik/agentik/schedule"
)

// humanLimit is the limit of the test agent's human block.
const humanLimit = 40

// scEnv is a stack whose agent keeps memory blocks (rendered into its
// model calls) and schedules (fired by a running scheduler), behind the
// door on a real listener.
type scEnv struct {
	*env
	mem   *memory.Service
	sched *schedule.Service
}

// scConfig says which of the door's store and crons are on.
type scConfig struct{ memory, schedules bool }

// lateContext is the engine's context source of memory, which is made on
// the stack's store after the engine.
type lateContext struct{ m **memory.Service }

func (l lateContext) SystemContext(ctx context.Context) (string, error) {
	return (*l.m).SystemContext(ctx)
}

func newSCEnv(t *testing.T, c scConfig) *scEnv {
	t.Helper()
	testenv.NPM(t, npmDir)
	e := &scEnv{}
	st := stacktest.New(t, stacktest.Engine(func(o *engine.Options) {
		o.Context = append(o.Context, lateContext{&e.mem})
	}))
	e.env = &env{t: t, st: st}
	e.mem = memory.New(memory.Options{
		Store: st.Store,
		Bus:   st.Bus,
		Blocks: []agentik.MemoryBlock{
			{Label: "persona", Value: "I am a helpful assistant.", Limit: agentik.DefaultMemoryLimit, ReadOnly: true},
			{Label: "human", Limit: humanLimit},
		},
		Order: st.Engine.AgentWrite,
	})
	e.mem.Start()
	t.Cleanup(e.mem.Close)
	opts := Options{Agents: func(context.Context) []agentik.Agent { return []agentik.Agent{st.Engine} }, KeepAlive: time.Second}
	if c.memory {
		opts.Memory = func(string) agentik.Memory { return e.mem }
	}
	if c.schedules {
		e.sched = startSchedules(t, st)
		opts.Schedules = func(string) agentik.Schedules { return e.sched }
	}
	mux := http.NewServeMux()
	New(opts).Mount(mux, "/langgraph", func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(agentik.WithPrincipal(r.Context(), r.Header.Get("X-Api-Key"))))
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/langgraph"
	return e
}

// startSchedules runs a scheduler over the stack's store (polling it
// often) and returns the agent's schedules API: at most 2 schedules a
// principal, 2s the shortest interval.
func startSchedules(t *testing.T, st *stacktest.Stack) *schedule.Service {
	sched := schedule.New(schedule.Options{
		Store:    st.Store,
		Agent:    func(string) (agentik.Agent, bool) { return st.Engine, true },
		ForAgent: func(string) agentik.ScheduleStore { return st.Store },
		Poll:     50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sched.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return schedule.NewService(st.Engine, st.Store, sched, schedule.ServiceOptions{MinInterval: 2 * time.Second, Limit: 2})
}

// sc runs one scenario of storecrons.mjs as principal and decodes its
// output.
func (e *scEnv) sc(principal, scenario string, arg any, out any) {
	e.t.Helper()
	extra, _ := json.Marshal(arg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "storecrons.mjs", e.url, principal, scenario, string(extra))
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

// refusal is a failed SDK call: its HTTP status and message.
type refusal struct {
	Status  int
	Message string
}

func (r refusal) is(status int, words string) bool {
	return r.Status == status && strings.Contains(r.Message, words)
}

type searchedItems struct{ Items []Item }

func keys(s searchedItems) []string {
	var out []string
	for _, it := range s.Items {
		out = append(out, it.Key)
	}
	return out
}

// TestLangGraphSDKStore: the SDK's store is the caller's memory blocks:
// a put is the block's new value in the native memory and in the model's
// next context; reads, searches and namespaces show the blocks; the
// block's limit (413), read-only flag (409), text-only values and fixed
// labels are kept; another principal neither sees nor changes them; a
// delete resets the block.
func TestLangGraphSDKStore(t *testing.T) {
	e := newSCEnv(t, scConfig{memory: true})
	e.st.LLM.Enqueue(llmtest.Text("you like green tea"))
	const tea = "Alice likes green tea"
	var out struct {
		Put                                            any
		Got                                            Item
		Found, Missed, Filtered, All, Paged, Elsewhere searchedItems
		Namespaces, NoNamespaces                       struct{ Namespaces [][]string }
		TooLong, ReadOnly, NotText, ExtraKeys, NewKey  refusal
		UnknownKey, OtherNamespace                     refusal
		Values                                         Values
	}
	e.sc("alice", "store", map[string]any{"text": tea, "query": "GREEN tea", "limit": humanLimit}, &out)
	b, err := e.mem.Block(context.Background(), "alice", "human")
	if err != nil || b.Value != tea || b.UpdatedBy != "alice" {
		t.Fatalf("native block %+v %v", b, err)
	}
	if out.Put != nil || out.Got.Key != "human" || out.Got.Value["value"] != tea || len(out.Got.Namespace) != 1 || out.Got.Namespace[0] != "memory" ||
		out.Got.UpdatedAt != b.UpdatedAt.String() {
		t.Fatalf("put %v, got %+v", out.Put, out.Got)
	}
	if k := keys(out.Found); len(k) != 1 || k[0] != "human" || len(out.Missed.Items) != 0 {
		t.Fatalf("query found %v, missed %v", k, keys(out.Missed))
	}
	if k := keys(out.Filtered); len(k) != 1 || k[0] != "human" {
		t.Fatalf("filter found %v", k)
	}
	if k := keys(out.All); len(k) != 2 || k[0] != "persona" || k[1] != "human" || out.All.Items[0].Value["value"] != "I am a helpful assistant." {
		t.Fatalf("all %+v", out.All)
	}
	if k := keys(out.Paged); len(k) != 1 || k[0] != "human" || len(out.Elsewhere.Items) != 0 {
		t.Fatalf("paged %v, elsewhere %v", k, keys(out.Elsewhere))
	}
	if len(out.Namespaces.Namespaces) != 1 || out.Namespaces.Namespaces[0][0] != "memory" || len(out.NoNamespaces.Namespaces) != 0 {
		t.Fatalf("namespaces %v, with prefix users %v", out.Namespaces, out.NoNamespaces)
	}
	for name, r := range map[string]bool{
		"too long":        out.TooLong.is(413, "limit"),
		"read-only":       out.ReadOnly.is(409, "read-only"),
		"not text":        out.NotText.is(422, "text"),
		"extra keys":      out.ExtraKeys.is(422, "text"),
		"new key":         out.NewKey.is(404, "ideas"),
		"unknown key":     out.UnknownKey.is(404, "ideas"),
		"other namespace": out.OtherNamespace.is(422, "one namespace is"),
	} {
		if !r {
			t.Errorf("%s: %+v", name, out)
		}
	}
	if b, _ := e.mem.Block(context.Background(), "alice", "human"); b.Value != tea {
		t.Fatalf("a refused put changed the block: %q", b.Value)
	}
	// The model's context of the run after the put holds the new value.
	reqs := e.st.LLM.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), tea) || !strings.Contains(string(reqs[0].Raw), "<memory>") {
		t.Fatalf("the model's context lacks the block: %s", reqs[0].Raw)
	}

	// bob has blocks of his own: alice's value is not his, his put is not hers.
	var other struct {
		Got   Item
		Found searchedItems
	}
	e.sc("bob", "storeOther", map[string]any{"text": "Bob drinks coffee", "query": "tea"}, &other)
	if other.Got.Value["value"] != "" || len(other.Found.Items) != 0 {
		t.Fatalf("bob sees %+v %+v", other.Got, other.Found)
	}
	if b, _ := e.mem.Block(context.Background(), "alice", "human"); b.Value != tea {
		t.Fatalf("bob's put changed alice's block: %q", b.Value)
	}
	if b, _ := e.mem.Block(context.Background(), "bob", "human"); b.Value != "Bob drinks coffee" {
		t.Fatalf("bob's block %q", b.Value)
	}

	var del struct{ After Item }
	e.sc("alice", "storeDelete", nil, &del)
	if del.After.Value["value"] != "" {
		t.Fatalf("after delete %+v", del.After)
	}
	if b, _ := e.mem.Block(context.Background(), "alice", "human"); b.Value != "" {
		t.Fatalf("deleted block %q", b.Value)
	}
	if b, _ := e.mem.Block(context.Background(), "bob", "human"); b.Value != "Bob drinks coffee" {
		t.Fatalf("alice's delete reset bob's block: %q", b.Value)
	}
}

// TestLangGraphSDKStoreOff: without memory (and schedules) every store
// call is a 404 whose detail says memory is off, crons are 404 and /info
// says crons: false.
func TestLangGraphSDKStoreOff(t *testing.T) {
	e := newSCEnv(t, scConfig{})
	var out struct {
		Put, Get, Del, Search, Namespaces, Crons refusal
		Info                                     struct{ Flags map[string]bool }
	}
	e.sc("alice", "storeOff", nil, &out)
	for name, r := range map[string]refusal{"put": out.Put, "get": out.Get, "delete": out.Del, "search": out.Search, "namespaces": out.Namespaces} {
		if !r.is(404, "memory is off") || !strings.Contains(r.Message, `"detail"`) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if !out.Crons.is(404, "crons are off") || out.Info.Flags["crons"] {
		t.Fatalf("crons %+v, info %+v", out.Crons, out.Info)
	}
}

// waitFor polls cond (the scheduler runs on its own goroutine and clock)
// until it holds, failing t after 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sentRun waits for a run of alice's schedule id whose message was sent.
func (e *scEnv) sentRun(id string) agentik.ScheduleRun {
	e.t.Helper()
	ctx := agentik.WithPrincipal(context.Background(), "alice")
	var sent agentik.ScheduleRun
	waitFor(e.t, "a sent run of "+id, func() bool {
		runs, err := e.sched.ScheduleRuns(ctx, id)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, r := range runs {
			if r.Outcome == agentik.RunSent {
				sent = r
				return true
			}
		}
		return false
	})
	return sent
}

// TestLangGraphSDKCrons: the SDK's crons are the agent's schedules: one on
// a thread and a stateless one are made (the schedules API's limit,
// minimum interval and checks answer the refused ones), searched and
// counted; the stateless one fires on its own into a new thread, the
// thread's one (run now by the schedules API) makes a run on its thread
// that the SDK lists and joins; another principal sees and changes none
// of them; update and delete reach the schedules.
func TestLangGraphSDKCrons(t *testing.T) {
	e := newSCEnv(t, scConfig{schedules: true})
	e.st.LLM.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("report done") })
	var out struct {
		Thread                                Thread
		OnThread, Stateless                   Cron
		OverLimit, TooOften, BadExpr, NoInput refusal
		EndTime, OtherAssistant               refusal
		All, ByThread                         []Cron
		Count                                 int
		Info                                  struct{ Flags map[string]bool }
	}
	e.sc("alice", "crons", map[string]any{"every": "@every 2s", "tooOften": "@every 1s"}, &out)
	tid := out.Thread.ThreadID
	c := out.OnThread
	if c.CronID == "" || c.AssistantID != "agentik" || c.ThreadID == nil || *c.ThreadID != tid || c.Schedule != "0 0 1 1 *" ||
		c.Timezone == nil || *c.Timezone != "Europe/Paris" || c.NextRunDate == nil || c.UserID != "alice" || !c.Enabled ||
		c.Payload["multitask_strategy"] != "enqueue" {
		t.Fatalf("cron on the thread %+v", c)
	}
	alice := agentik.WithPrincipal(context.Background(), "alice")
	sc, err := e.sched.GetSchedule(alice, c.CronID)
	if err != nil || sc.Cron != "0 0 1 1 *" || sc.ConversationID != tid || sc.Timezone != "Europe/Paris" || sc.IfBusy != agentik.BusyEnqueue ||
		agentik.JoinText(sc.Content) != "the daily report" || !sc.NextRunAt.Equal(c.NextRunDate.Time) {
		t.Fatalf("its schedule %+v %v", sc, err)
	}
	if s := out.Stateless; s.ThreadID != nil || s.Schedule != "@every 2s" || s.OnRunCompleted != "keep" {
		t.Fatalf("stateless cron %+v", s)
	}
	for name, r := range map[string]bool{
		"over the limit":  out.OverLimit.is(429, "2"),
		"too often":       out.TooOften.is(422, "minimum"),
		"bad expression":  out.BadExpr.is(422, "cron expression"),
		"no input":        out.NoInput.is(422, "message"),
		"end_time":        out.EndTime.is(422, "end_time"),
		"other assistant": out.OtherAssistant.is(404, "nobody"),
	} {
		if !r {
			t.Errorf("%s: %+v", name, out)
		}
	}
	if len(out.All) != 2 || out.All[0].CronID != c.CronID || out.All[1].CronID != out.Stateless.CronID ||
		len(out.ByThread) != 1 || out.ByThread[0].CronID != c.CronID || out.Count != 2 || !out.Info.Flags["crons"] {
		t.Fatalf("search %+v, by thread %+v, count %d, info %v", out.All, out.ByThread, out.Count, out.Info)
	}

	// The stateless cron fires on its own: a new thread of alice's.
	run := e.sentRun(out.Stateless.CronID)
	j := e.journal("alice", run.ConversationID)
	if len(j) == 0 || agentik.JoinText(j[0].Content) != "tick" || j[0].Context == nil || j[0].Context.Origin == nil ||
		j[0].Context.Origin.Channel != agentik.OriginSchedule || j[0].Context.Origin.ScheduleID != out.Stateless.CronID {
		t.Fatalf("the stateless cron's thread %+v", j)
	}
	// The thread's cron, run now, makes a run on the thread.
	if _, err := e.sched.RunSchedule(alice, c.CronID); err != nil {
		t.Fatal(err)
	}
	run = e.sentRun(c.CronID)
	if run.ConversationID != tid {
		t.Fatalf("the thread's cron ran in %s", run.ConversationID)
	}

	var other struct {
		Found                 []Cron
		Count                 int
		Del, Update, OnThread refusal
	}
	e.sc("bob", "cronsOther", map[string]any{"cron": c.CronID, "thread": tid}, &other)
	if len(other.Found) != 0 || other.Count != 0 || other.Del.Status != 404 || other.Update.Status != 404 || other.OnThread.Status != 404 {
		t.Fatalf("bob %+v", other)
	}

	var after struct {
		Runs    []Run
		Joined  Values
		State   ThreadState
		Updated Cron
		Gone    refusal
		Left    []Cron
	}
	e.sc("alice", "cronsAfter", map[string]any{"thread": tid, "onThread": c.CronID, "stateless": out.Stateless.CronID}, &after)
	if len(after.Runs) != 1 || after.Runs[0].RunID != run.MessageID {
		t.Fatalf("runs %+v, the cron's message %s", after.Runs, run.MessageID)
	}
	if m := after.State.Values.Messages; len(m) != 2 || text(m[0]) != "the daily report" || text(m[1]) != "report done" {
		t.Fatalf("state %+v", after.State.Values)
	}
	if after.Updated.Schedule != "0 9 * * 1" || after.Gone.Status != 404 || len(after.Left) != 0 {
		t.Fatalf("updated %+v, gone %+v, left %+v", after.Updated, after.Gone, after.Left)
	}
	if list, err := e.sched.ListSchedules(alice); err != nil || len(list) != 0 {
		t.Fatalf("schedules left %+v %v", list, err)
	}
}
