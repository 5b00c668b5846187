package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// holdingStore holds the commit of the user message `text` until `until`
// is closed — failing it if that takes 10 s — then runs `during` and fails
// the commit if `fail` is set.
type holdingStore struct {
	*sqlite.Store
	text   string
	until  <-chan struct{}
	during func()
	fail   bool
}

func (s *holdingStore) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	held := slices.ContainsFunc(w.Events, func(ev agentik.Event) bool {
		return ev.Message != nil && ev.Message.Type == agentik.MsgUser && textOf(ev.Message.Content) == s.text
	})
	if held {
		select {
		case <-s.until:
		case <-time.After(10 * time.Second):
			return nil, nil, errors.New("held 10 s: the model was not called while the message committed")
		}
		if s.during != nil {
			s.during()
		}
		if s.fail {
			return nil, nil, agentik.Errorf(agentik.EUnavailable, "refused")
		}
	}
	return s.Store.Commit(ctx, w)
}

// textOf joins a message's text parts.
func textOf(content []agentik.Content) string {
	var b strings.Builder
	for _, p := range content {
		b.WriteString(p.Text)
	}
	return b.String()
}

// lastUser is the text of a model request's last user message as sent.
func lastUser(req llmtest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return string(req.Messages[i].Content)
		}
	}
	return ""
}

// modelAt answers every request with "re: <last user message>", closing
// reached when a request for `text` arrives; that request's reply waits at
// gate.
type modelAt struct {
	text    string
	gate    *llmtest.Gate
	once    sync.Once
	reached chan struct{}
}

func newModelAt(text string) *modelAt {
	return &modelAt{text: text, gate: llmtest.NewGate(), reached: make(chan struct{})}
}

func (m *modelAt) reply(req llmtest.Request) llmtest.Reply {
	u := lastUser(req)
	if strings.Contains(u, m.text) {
		m.once.Do(func() { close(m.reached) })
		return llmtest.Stream().Role().Pause(m.gate).Content("re: ", m.text).Finish("stop").Done()
	}
	return llmtest.Text("re: other")
}

// TestModelCalledWhileTheMessageCommits: the model call that answers a
// message to an idle conversation goes out while the message commits (the
// commit here waits for it), and the turn takes it over: one request, its
// answer streamed after the message's event, as always.
func TestModelCalledWhileTheMessageCommits(t *testing.T) {
	m := newModelAt("second")
	h := newHarness(t, func(o *engine.Options) {
		o.Store = &holdingStore{Store: o.Store.(*sqlite.Store), text: "second", until: m.reached}
	})
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	first := h.send(c, "first")
	until(t, s, endOf(first.MessageID))

	second := h.send(c, "second")
	m.gate.Release()
	evs := until(t, s, endOf(second.MessageID))
	if got := compact(evs); got != "user_message,working,start_response,append_text,assistant_message,end" {
		t.Fatalf("events %s", got)
	}
	if got := textOf(evs[len(evs)-2].Message.Content); got != "re: second" {
		t.Fatalf("answer %q", got)
	}
	if n := len(h.llm.Requests()); n != 2 {
		t.Fatalf("%d model requests, want one per turn", n)
	}
}

// memoryReading is a holdingStore that counts its working-memory reads.
type memoryReading struct {
	holdingStore
	reads sync.Map // conversation id -> *atomic.Int64
}

func (s *memoryReading) Memory(ctx context.Context, id string) ([]agentik.MemoryEntry, error) {
	n, _ := s.reads.LoadOrStore(id, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return s.holdingStore.Memory(ctx, id)
}

// TestFirstTurnCalledEarly: a conversation made by this process has no
// working memory to read, so its first message's model call goes out while
// the message commits (the commit here waits for it), and its memory is
// not read from the store; its second turn, too, works from what the first
// left in the cache.
func TestFirstTurnCalledEarly(t *testing.T) {
	m := newModelAt("first")
	var st *memoryReading
	h := newHarness(t, func(o *engine.Options) {
		st = &memoryReading{holdingStore: holdingStore{Store: o.Store.(*sqlite.Store), text: "first", until: m.reached}}
		o.Store = st
	})
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	first := h.send(c, "first")
	m.gate.Release()
	if got := compact(until(t, s, endOf(first.MessageID))); got != "user_message,working,start_response,append_text,assistant_message,end" {
		t.Fatalf("events %s", got)
	}
	second := h.send(c, "second")
	until(t, s, endOf(second.MessageID))
	if n, ok := st.reads.Load(c.ID()); ok {
		t.Fatalf("working memory read %d times", n.(*atomic.Int64).Load())
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want one per turn", len(reqs))
	}
	var got []string
	for _, msg := range reqs[1].Messages {
		got = append(got, msg.Role+" "+string(msg.Content))
	}
	if want := []string{`system "You are a test agent."`, `user "first"`, `assistant "re: first"`, `user "second"`}; !slices.Equal(got, want) {
		t.Fatalf("second request's messages %q, want %q", got, want)
	}
}

// startingSource is a tool source still starting until ready is closed:
// its Tools waits for that, as an MCP source does at start-up.
type startingSource struct{ ready chan struct{} }

func (s startingSource) Tools(ctx context.Context) []agentik.Tool {
	if !s.Starting() {
		return []agentik.Tool{tools.CurrentTime{}}
	}
	select {
	case <-s.ready:
		return []agentik.Tool{tools.CurrentTime{}}
	case <-ctx.Done():
		return nil
	}
}

func (s startingSource) Starting() bool {
	select {
	case <-s.ready:
		return false
	default:
		return true
	}
}

// earlyCounting counts the calls an EarlyStarter LLM is asked to send early.
type earlyCounting struct {
	agentik.LLM
	n atomic.Int64
}

func (l *earlyCounting) StartEarly(ctx context.Context, req agentik.ModelRequest) agentik.EarlyCall {
	l.n.Add(1)
	return l.LLM.(agentik.EarlyStarter).StartEarly(ctx, req)
}

// TestNoEarlyCallWhileToolsStart: while a tool source is starting, a
// message's model call is not sent early (it would lack the source's tools,
// and the turn, which waits for them, would pay for a second call); once it
// has started, the next message's is. The model gets one request per turn,
// offering the source's tools.
func TestNoEarlyCallWhileToolsStart(t *testing.T) {
	src := startingSource{ready: make(chan struct{})}
	var llm *earlyCounting
	h := newHarness(t, func(o *engine.Options) {
		o.Tools = tools.NewRegistry()
		o.Tools.AddSource("slow", src)
		llm = &earlyCounting{LLM: o.LLM}
		o.LLM = llm
	})
	h.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hi") })
	c, s := h.conversation()
	sent := h.send(c, "first")
	if n := llm.n.Load(); n != 0 {
		t.Fatalf("%d calls sent early while the tools were starting", n)
	}
	close(src.ready)
	until(t, s, endOf(sent.MessageID))
	sent = h.send(c, "second")
	until(t, s, endOf(sent.MessageID))
	if n := llm.n.Load(); n != 1 {
		t.Fatalf("%d calls sent early once the tools had started, want 1", n)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want one per turn", len(reqs))
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Function.Name != "current_time" {
		t.Fatalf("tools offered %+v, want the source's", reqs[0].Tools)
	}
}

// TestEarlyCallOfAFailedMessage: a message whose commit fails has no turn:
// the model call sent for it is cancelled, and nothing of it is seen.
func TestEarlyCallOfAFailedMessage(t *testing.T) {
	m := newModelAt("second")
	h := newHarness(t, func(o *engine.Options) {
		o.Store = &holdingStore{Store: o.Store.(*sqlite.Store), text: "second", until: m.reached, fail: true}
	})
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	first := h.send(c, "first")
	until(t, s, endOf(first.MessageID))

	if _, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("second")}}); err == nil {
		t.Fatal("Send succeeded with its commit refused")
	}
	within(t, m.gate.Abandoned(), "the cancellation of the failed message's model call")
	third := h.send(c, "third")
	evs := until(t, s, endOf(third.MessageID))
	if got := compact(evs); got != "user_message,working,start_response,append_text,assistant_message,end" {
		t.Fatalf("events after the failed message: %s", got)
	}
}

// TestEarlyCallOfAnotherRequest: when the turn's request is not the one
// sent early (here the system prompt changed meanwhile), the early call is
// dropped and the turn calls the model with its own.
func TestEarlyCallOfAnotherRequest(t *testing.T) {
	m := newModelAt("second")
	var eng func() *engine.Engine
	h := newHarness(t, func(o *engine.Options) {
		o.Store = &holdingStore{Store: o.Store.(*sqlite.Store), text: "second", until: m.reached,
			during: func() { eng().SetSystemPrompt("You are a changed agent.") }}
	})
	eng = func() *engine.Engine { return h.eng }
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	first := h.send(c, "first")
	until(t, s, endOf(first.MessageID))

	h.llm.Handle(func(req llmtest.Request) llmtest.Reply {
		if strings.Contains(string(req.Messages[0].Content), "changed") {
			return llmtest.Text("re: second, changed")
		}
		return m.reply(req)
	})
	second := h.send(c, "second")
	within(t, m.gate.Abandoned(), "the cancellation of the early call")
	evs := until(t, s, endOf(second.MessageID))
	if got := textOf(evs[len(evs)-2].Message.Content); got != "re: second, changed" {
		t.Fatalf("answer %q (%s)", got, compact(evs))
	}
	if n := len(h.llm.Requests()); n != 3 {
		t.Fatalf("%d model requests, want first, second early, second", n)
	}
}

// TestInterruptWhileCalledEarly: an interrupt right after the 202, while
// the early call waits for the model, ends the turn and the call.
func TestInterruptWhileCalledEarly(t *testing.T) {
	m := newModelAt("second")
	h := newHarness(t)
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	first := h.send(c, "first")
	until(t, s, endOf(first.MessageID))

	second := h.send(c, "second")
	within(t, m.reached, "the model request")
	until(t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvWorking }) // the turn runs
	if ok, err := c.Interrupt(h.ctx); err != nil || !ok {
		t.Fatalf("interrupt: %v, %v", ok, err)
	}
	within(t, m.gate.Abandoned(), "the cancellation of the call")
	evs := until(t, s, endOf(second.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndInterrupted {
		t.Fatalf("ended %q (%s)", end.Reason, compact(evs))
	}
}

// TestInterruptBeforeTheTurnStarts: an interrupt after the 202 and before
// the turn loop starts the turn, whose model call went out early, ends
// that turn without starting it and cancels the call, whether the loop
// has yet to take the turn from the queue or has taken it. The
// conversation answers its next message as usual.
func TestInterruptBeforeTheTurnStarts(t *testing.T) {
	for _, point := range []string{"next", "taken"} {
		t.Run(point, func(t *testing.T) {
			var armed atomic.Bool
			at, release := make(chan string, 1), make(chan struct{})
			h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background(),
				llmTimeout: 30 * time.Second, hook: func(p, replyTo string) {
					if p == point && armed.CompareAndSwap(true, false) {
						at <- replyTo
						<-release
					}
				}}
			t.Cleanup(h.llm.Close)
			h.start()
			free := sync.OnceFunc(func() { close(release) })
			t.Cleanup(free) // before the engine stops, on failure too
			m := newModelAt("hi")
			h.llm.Handle(m.reply)
			c, s := h.conversation()

			armed.Store(true)
			res := h.send(c, "hi")
			within(t, m.reached, "the early model request")
			select {
			case id := <-at:
				if id != res.MessageID {
					t.Fatalf("the loop holds %s, want %s", id, res.MessageID)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the loop did not reach %q", point)
			}
			ok, err := c.Interrupt(h.ctx)
			if err != nil || !ok {
				t.Fatalf("interrupt: %v, %v", ok, err)
			}
			within(t, m.gate.Abandoned(), "the cancellation of the early call")
			free()
			evs := until(t, s, endOf(res.MessageID))
			if got := compact(evs); got != "user_message,interrupted,end" {
				t.Fatalf("events %s", got)
			}
			if evs[1].Reason != agentik.ReasonUser || evs[2].Reason != agentik.EndInterrupted {
				t.Fatalf("interrupted %q, ended %q", evs[1].Reason, evs[2].Reason)
			}

			next := h.send(c, "again")
			evs = until(t, s, endOf(next.MessageID))
			if got := textOf(evs[len(evs)-2].Message.Content); got != "re: other" {
				t.Fatalf("next answer %q (%s)", got, compact(evs))
			}
			if n := len(h.llm.Requests()); n != 2 {
				t.Fatalf("%d model requests, want the cancelled one and the next", n)
			}
		})
	}
}

// holdingRound holds the commit of a tool round's working memory (its last
// result) until `until` is closed — failing it if that takes 10 s — and
// then fails it if `fail` is set. After a failed round it holds the next
// commit (the turn's closing one) until `after` is closed, at most 10 s,
// and records whether it was.
type holdingRound struct {
	*sqlite.Store
	until, after <-chan struct{}
	fail         bool

	mu        sync.Mutex
	failed    bool
	afterSeen bool // `after` was closed when the commit after the failure came
}

func (s *holdingRound) Commit(ctx context.Context, w agentik.Write) ([]agentik.Event, *agentik.AgentEvent, error) {
	if slices.ContainsFunc(w.Memory, func(e agentik.MemoryEntry) bool { return e.Message.Role == agentik.RoleTool }) {
		select {
		case <-s.until:
		case <-time.After(10 * time.Second):
			return nil, nil, errors.New("held 10 s: the next round's model call was not sent while the round committed")
		}
		if s.fail {
			s.mu.Lock()
			s.failed = true
			s.mu.Unlock()
			return nil, nil, agentik.Errorf(agentik.EUnavailable, "refused")
		}
	}
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if failed && s.after != nil {
		select {
		case <-s.after:
			s.mu.Lock()
			s.afterSeen = true
			s.mu.Unlock()
		case <-time.After(10 * time.Second):
		}
	}
	return s.Store.Commit(ctx, w)
}

// toolModel asks for current_time until a request carries its result;
// that request closes reached, and its answer waits at gate.
type toolModel struct {
	gate    *llmtest.Gate
	once    sync.Once
	reached chan struct{}
}

func newToolModel() *toolModel {
	return &toolModel{gate: llmtest.NewGate(), reached: make(chan struct{})}
}

func (m *toolModel) reply(req llmtest.Request) llmtest.Reply {
	if slices.ContainsFunc(req.Messages, func(msg llmtest.Message) bool { return msg.Role == "tool" }) {
		m.once.Do(func() { close(m.reached) })
		return llmtest.Stream().Role().Pause(m.gate).Content("it is now").Finish("stop").Done()
	}
	return llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC"}`))
}

// TestNextRoundCalledWhileTheRoundCommits: the model call after a tool
// round goes out while the round's results commit (the commit here waits
// for it), and the turn takes it over: two requests for the turn, the
// answer streamed after the tool result's event, as always.
func TestNextRoundCalledWhileTheRoundCommits(t *testing.T) {
	m := newToolModel()
	h := newHarness(t, func(o *engine.Options) {
		o.Store = &holdingRound{Store: o.Store.(*sqlite.Store), until: m.reached}
	})
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	sent := h.send(c, "what time is it?")
	m.gate.Release()
	evs := until(t, s, endOf(sent.MessageID))
	got := compact(evs)
	if !strings.Contains(got, "tool_result,start_response,append_text,assistant_message,end") {
		t.Fatalf("events %s", got)
	}
	if got := textOf(evs[len(evs)-2].Message.Content); got != "it is now" {
		t.Fatalf("answer %q", got)
	}
	if n := len(h.llm.Requests()); n != 2 {
		t.Fatalf("%d model requests, want 2 (the early one taken over)", n)
	}
}

// TestNextRoundOfAFailedRound: when the round's commit fails, the model
// call sent for the next round is cancelled at once — before the turn's
// closing write, which waits for that here — and the turn ends failed.
func TestNextRoundOfAFailedRound(t *testing.T) {
	m := newToolModel()
	var st *holdingRound
	h := newHarness(t, func(o *engine.Options) {
		st = &holdingRound{Store: o.Store.(*sqlite.Store), until: m.reached, after: m.gate.Abandoned(), fail: true}
		o.Store = st
	})
	h.llm.Handle(m.reply)
	c, s := h.conversation()
	sent := h.send(c, "what time is it?")
	evs := until(t, s, endOf(sent.MessageID))
	if end := evs[len(evs)-1]; end.Reason != agentik.EndError || strings.Contains(compact(evs), "append_text") {
		t.Fatalf("ended %q (%s)", end.Reason, compact(evs))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.afterSeen {
		t.Fatal("the next round's call was still open when the turn closed")
	}
}
