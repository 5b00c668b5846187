package engine_test

// Tests of context management (issue 9): compaction, overflow retry,
// summariser fallback, images, reasoning and token accounting — on the real
// engine, a real SQLite file and the OpenAI adapter talking to llmtest.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tokens"
	"github.com/agentik/agentik/tools"
)

const testSystem = "You are a test agent."

// newCtxHarness is newHarness with control over the model adapter's options
// (image input, reasoning) as well as the engine's.
func newCtxHarness(t *testing.T, llmOpts func(*openai.Options), opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, llm: llmtest.NewServer(), path: filepath.Join(t.TempDir(), "agentik.db"), ctx: context.Background(), llmTimeout: 30 * time.Second}
	t.Cleanup(h.llm.Close)
	h.startWith(llmOpts, opts...)
	return h
}

func (h *harness) startWith(llmOpts func(*openai.Options), opts ...option) {
	t := h.t
	t.Helper()
	st, err := sqlite.Open(h.ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	lo := openai.Options{BaseURL: h.llm.URL(), Model: "test-model", MaxRetries: 2, Timeout: h.llmTimeout}
	if llmOpts != nil {
		llmOpts(&lo)
	}
	llm, err := openai.New(lo)
	if err != nil {
		t.Fatal(err)
	}
	o := engine.Options{
		Store: st, Temporal: memstore.New(), Bus: bus.New(), LLM: llm,
		Tools:         tools.NewRegistry(tools.CurrentTime{}),
		SystemPrompt:  testSystem,
		ToolTimeout:   5 * time.Second,
		ImageInput:    lo.ImageInput,
		SendReasoning: lo.SendReasoning,
	}
	for _, f := range opts {
		f(&o)
	}
	eng, err := engine.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	t.Cleanup(h.stop)
}

func budget(n int) option { return func(o *engine.Options) { o.ContextTokens = n } }

// isSummaryCall tells the summariser's requests from the turn's own.
func isSummaryCall(req llmtest.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" && req.Messages[0].Text() == engine.DefaultSummaryPrompt
}

func turnCalls(reqs []llmtest.Request) (turns, summaries []llmtest.Request) {
	for _, r := range reqs {
		if isSummaryCall(r) {
			summaries = append(summaries, r)
		} else {
			turns = append(turns, r)
		}
	}
	return turns, summaries
}

const summaryPrefix = "Summary of the earlier conversation:"

// checkRequest asserts what every model request of a turn must satisfy: the
// system prompt first, summaries right after it, and every tool result
// directly after the assistant message that called it (none orphaned, none
// missing).
func checkRequest(t *testing.T, req llmtest.Request) {
	t.Helper()
	msgs := req.Messages
	if len(msgs) == 0 || msgs[0].Role != "system" || msgs[0].Text() != testSystem {
		t.Fatalf("request %d does not start with the system prompt: %s", req.N, req.Raw)
	}
	inSummaries := true
	pending := map[string]bool{}
	for i, m := range msgs[1:] {
		isSummary := m.Role == "system" && strings.HasPrefix(m.Text(), summaryPrefix)
		if isSummary && !inSummaries {
			t.Fatalf("request %d: summary at position %d after other messages", req.N, i+1)
		}
		inSummaries = inSummaries && isSummary
		switch m.Role {
		case "assistant":
			if len(pending) > 0 {
				t.Fatalf("request %d: tool calls %v without results before message %d", req.N, pending, i+1)
			}
			for _, tc := range m.ToolCalls {
				pending[tc.ID] = true
			}
		case "tool":
			if !pending[m.ToolCallID] {
				t.Fatalf("request %d: orphaned tool result %s at %d: %s", req.N, m.ToolCallID, i+1, req.Raw)
			}
			delete(pending, m.ToolCallID)
		default:
			if len(pending) > 0 {
				t.Fatalf("request %d: tool calls %v without results before %s message %d", req.N, pending, m.Role, i+1)
			}
		}
	}
	if len(pending) > 0 {
		t.Fatalf("request %d ends with tool calls %v without results", req.N, pending)
	}
}

func compactions(evs []agentik.Event) []agentik.Event {
	var out []agentik.Event
	for _, ev := range evs {
		if ev.Type == agentik.EvCompactionTriggered {
			out = append(out, ev)
		}
	}
	return out
}

// question is about 120 bytes, so a few exchanges fill a small budget.
func question(i int, extra string) string {
	return fmt.Sprintf("question %d %s: %s", i, extra, strings.Repeat("ipsum ", 18))
}

var longAnswer = "answer: " + strings.Repeat("lorem ", 20)

// chatty answers questions at length, asks for the clock when told to, and
// summarises when the summariser asks.
func chatty(summaries *atomic.Int64) func(llmtest.Request) llmtest.Reply {
	return func(req llmtest.Request) llmtest.Reply {
		if isSummaryCall(req) {
			return llmtest.Text(fmt.Sprintf("SUMMARY-%d of the talk so far", summaries.Add(1)))
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.Contains(last.Text(), "clock") {
			return llmtest.ToolCalls(llmtest.Call("current_time", `{}`))
		}
		return llmtest.Text(longAnswer)
	}
}

func TestLongConversationIsCompacted(t *testing.T) {
	const budgetTokens = 600 // compaction above 450, down to 300
	h := newHarness(t, budget(budgetTokens))
	var summaries atomic.Int64
	h.llm.Handle(chatty(&summaries))
	c, s := h.conversation()
	var evs []agentik.Event
	var sent []string
	for i := range 12 {
		extra := ""
		if i == 2 || i == 7 {
			extra = "what does the clock say"
		}
		q := question(i, extra)
		sent = append(sent, q)
		res := h.send(c, q)
		got := until(t, s, endOf(res.MessageID))
		if last := got[len(got)-1]; last.Reason != agentik.EndCompleted {
			t.Fatalf("turn %d: %s", i, types(got))
		}
		evs = append(evs, got...)
	}

	comps := compactions(evs)
	if len(comps) < 2 {
		t.Fatalf("%d compactions in 12 long turns, want at least 2", len(comps))
	}
	turns, sums := turnCalls(h.llm.Requests())
	if len(sums) != int(summaries.Load()) || len(sums) != len(comps) {
		t.Fatalf("%d summariser calls, %d compactions", len(sums), len(comps))
	}
	trigger := budgetTokens - budgetTokens/4
	for i, ev := range comps {
		cp := ev.Compaction
		if cp == nil || cp.Summary != fmt.Sprintf("SUMMARY-%d of the talk so far", i+1) || cp.Model != "test-model" || cp.Fallback {
			t.Fatalf("compaction %d: %+v", i, cp)
		}
		if ev.Cursor == 0 || ev.Dropped < 2 || ev.SummaryTokens != tokens.Text(cp.Summary) {
			t.Fatalf("compaction event %d: %+v", i, ev)
		}
		if cp.TokensBefore <= trigger || cp.TokensAfter >= cp.TokensBefore || cp.TokensAfter > budgetTokens/2+budgetTokens/8 {
			t.Fatalf("compaction %d tokens %d → %d", i, cp.TokensBefore, cp.TokensAfter)
		}
		if cp.FromSeq != 1 || cp.ToSeq < 2 {
			t.Fatalf("compaction %d covers seq %d..%d", i, cp.FromSeq, cp.ToSeq)
		}
	}
	// A later summary folds the earlier one in: nothing is wiped.
	for i, r := range sums {
		if len(r.Tools) != 0 || !strings.Contains(r.LastUserText(), "User: question") {
			t.Fatalf("summariser request %d: %s", i, r.Raw)
		}
		if i > 0 && !strings.Contains(r.LastUserText(), fmt.Sprintf("[Earlier summary]\nSUMMARY-%d", i)) {
			t.Fatalf("summariser request %d does not carry the earlier summary: %s", i, r.LastUserText())
		}
	}
	// Every turn request is well formed; after the first compaction each
	// carries the summary right after the system prompt; each ends with the
	// question it answers.
	compacted := false
	for _, r := range turns {
		checkRequest(t, r)
		if len(r.Messages) > 1 && strings.HasPrefix(r.Messages[1].Text(), summaryPrefix) {
			compacted = true
		} else if compacted {
			t.Fatalf("request %d lost the summary: %s", r.N, r.Raw)
		}
		if !strings.HasPrefix(r.LastUserText(), "question") {
			t.Fatalf("request %d has no user question: %s", r.N, r.Raw)
		}
	}
	if last := turns[len(turns)-1]; last.LastUserText() != sent[len(sent)-1] {
		t.Fatalf("the last request does not end with the last question: %q", last.LastUserText())
	}
	// Summaries are not streamed to clients.
	for _, ev := range evs {
		if ev.Type == agentik.EvAppendText && strings.Contains(ev.Text, "SUMMARY") {
			t.Fatal("a summary was streamed as an answer")
		}
	}
	// The journal keeps everything; working memory holds one summary and
	// stays under the budget.
	msgs := journal(t, c)
	if len(msgs) != 12*2+2*2 {
		t.Fatalf("journal has %d messages: %s", len(msgs), journalTypes(msgs))
	}
	mem, err := h.store.Memory(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	var nSummaries, est int
	for _, m := range mem {
		if m.Message.Role == agentik.RoleSummary {
			nSummaries++
		}
		est += tokens.Message(m.Message, false)
	}
	if nSummaries != 1 || est > trigger {
		t.Fatalf("working memory: %d summaries, %d tokens, %d entries", nSummaries, est, len(mem))
	}

	// The summary is readable through the API: the events endpoint replays it.
	mux := http.NewServeMux()
	httpapi.Mount(mux, "/agentik", h.eng, httpapi.Options{})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	rc, err := httpapi.NewClient(srv.URL+"/agentik").Conversation(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rc.Events(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	replayed := until(t, rs, func(ev agentik.Event) bool { return ev.Type == agentik.EvCompactionTriggered })
	if got := replayed[len(replayed)-1]; got.Compaction == nil || got.Compaction.Summary != comps[0].Compaction.Summary || got.Cursor != comps[0].Cursor {
		t.Fatalf("replayed compaction %+v", got)
	}
}

// seed adds exchanges (a user message and its answer, turns closed) to the
// journal of conversation id directly through the store, and to working
// memory when memory is set.
func seed(t testing.TB, st agentik.Store, id string, exchanges int, memory bool) {
	t.Helper()
	ctx := context.Background()
	const batch = 1000
	for done := 0; done < exchanges; {
		w := agentik.Write{ConversationID: id}
		for n := 0; n < batch && done < exchanges; n, done = n+1, done+1 {
			now := agentik.Now()
			u := &agentik.Message{ID: agentik.NewID(), ConversationID: id, Date: now, Type: agentik.MsgUser,
				Content: []agentik.Content{agentik.Text(fmt.Sprintf("old question %d about the weather", done))}}
			a := &agentik.Message{ID: agentik.NewID(), ConversationID: id, Date: now, Type: agentik.MsgAssistant,
				Content: []agentik.Content{agentik.Text(fmt.Sprintf("old answer %d: sunny", done))}, ReplyTo: u.ID}
			w.Events = append(w.Events, agentik.MessageEvent(u), agentik.MessageEvent(a))
			if memory {
				w.Memory = append(w.Memory,
					agentik.MemoryEntry{SourceID: u.ID, ReplyTo: u.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: u.Content}},
					agentik.MemoryEntry{SourceID: a.ID, ReplyTo: u.ID, Message: agentik.ModelMessage{Role: agentik.RoleAssistant, Content: a.Content}})
			}
		}
		if _, _, err := st.Commit(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOverflowThenRetry(t *testing.T) {
	h := newHarness(t) // the default budget: the estimate never triggers here
	var summaries atomic.Int64
	h.llm.Handle(chatty(&summaries))
	c, s := h.conversation()
	for i := range 3 {
		res := h.send(c, question(i, ""))
		until(t, s, endOf(res.MessageID))
	}
	before := len(h.llm.Requests())
	h.llm.Enqueue(llmtest.ContextLengthExceeded())
	res := h.send(c, question(3, "last"))
	evs := until(t, s, endOf(res.MessageID))
	if evs[len(evs)-1].Reason != agentik.EndCompleted {
		t.Fatalf("turn after overflow: %s", types(evs))
	}
	comps := compactions(evs)
	if len(comps) != 1 || comps[0].Compaction.Fallback || comps[0].Compaction.Summary != "SUMMARY-1 of the talk so far" {
		t.Fatalf("compactions %+v", comps)
	}
	reqs := h.llm.Requests()[before:]
	if len(reqs) != 3 || isSummaryCall(reqs[0]) || !isSummaryCall(reqs[1]) || isSummaryCall(reqs[2]) {
		t.Fatalf("want refused call, summary, retry; got %d requests", len(reqs))
	}
	refused, retried := reqs[0], reqs[2]
	checkRequest(t, retried)
	if len(retried.Messages) >= len(refused.Messages) || !strings.HasPrefix(retried.Messages[1].Text(), summaryPrefix) {
		t.Fatalf("retry not compacted: %d → %d messages", len(refused.Messages), len(retried.Messages))
	}
	if retried.LastUserText() != question(3, "last") {
		t.Fatalf("retry lost the latest user message: %s", retried.Raw)
	}

	// An overflow that compaction cannot fix fails the turn once, without a
	// retry loop, and the conversation stays usable.
	before = len(h.llm.Requests())
	h.llm.Enqueue(llmtest.ContextLengthExceeded(), llmtest.ContextLengthExceeded(), llmtest.ContextLengthExceeded())
	res = h.send(c, question(4, ""))
	evs = until(t, s, endOf(res.MessageID))
	if evs[len(evs)-1].Reason != agentik.EndError {
		t.Fatalf("second overflow: %s", types(evs))
	}
	msgs := journal(t, c)
	if last := msgs[len(msgs)-1]; last.Code != agentik.CodeContextOverflow {
		t.Fatalf("last journal entry %+v", last)
	}
	if n := len(h.llm.Requests()) - before; n > 3 {
		t.Fatalf("%d model calls for one overflowing turn", n)
	}
}

func TestSummariserFailureFallsBack(t *testing.T) {
	h := newHarness(t, budget(600))
	h.llm.Handle(func(req llmtest.Request) llmtest.Reply {
		if isSummaryCall(req) {
			return llmtest.ServerError()
		}
		return llmtest.Text(longAnswer)
	})
	c, s := h.conversation()
	var evs []agentik.Event
	for i := range 8 {
		res := h.send(c, question(i, ""))
		got := until(t, s, endOf(res.MessageID))
		if got[len(got)-1].Reason != agentik.EndCompleted {
			t.Fatalf("turn %d failed: %s", i, types(got))
		}
		evs = append(evs, got...)
	}
	comps := compactions(evs)
	if len(comps) == 0 {
		t.Fatal("no compaction")
	}
	for _, ev := range comps {
		if !ev.Compaction.Fallback || !strings.Contains(ev.Compaction.Summary, "no summary of them is available") || ev.Dropped < 2 {
			t.Fatalf("fallback compaction %+v %+v", ev, ev.Compaction)
		}
	}
	turns, _ := turnCalls(h.llm.Requests())
	last := turns[len(turns)-1]
	checkRequest(t, last)
	// Whole exchanges were dropped: the first message after the note is a
	// user message.
	if !strings.HasPrefix(last.Messages[1].Text(), summaryPrefix) || last.Messages[2].Role != "user" {
		t.Fatalf("after fallback: %s", last.Raw)
	}
	if last.LastUserText() != question(7, "") {
		t.Fatalf("latest question lost: %s", last.Raw)
	}
}

// TestCutNeverSplitsAToolRound builds a memory where the cheapest cut would
// fall between an assistant's tool call and its result: a long question,
// a call with long arguments, a short result. The cut must take the result too.
func TestCutNeverSplitsAToolRound(t *testing.T) {
	h := newHarness(t, budget(1200)) // compaction above 900, down to 600
	var summaries atomic.Int64
	pad := strings.Repeat("p", 900)
	h.llm.Handle(func(req llmtest.Request) llmtest.Reply {
		if isSummaryCall(req) {
			return llmtest.Text(fmt.Sprintf("SUMMARY-%d", summaries.Add(1)))
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && strings.HasPrefix(last.Text(), "clock") {
			return llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC","pad":"`+pad+`"}`))
		}
		return llmtest.Text("ok")
	})
	c, s := h.conversation()
	for _, q := range []string{"clock " + strings.Repeat("q", 900), "next " + strings.Repeat("n", 750)} {
		res := h.send(c, q)
		evs := until(t, s, endOf(res.MessageID))
		if evs[len(evs)-1].Reason != agentik.EndCompleted {
			t.Fatalf("turn: %s", types(evs))
		}
	}
	if summaries.Load() != 1 {
		t.Fatalf("%d compactions, want 1", summaries.Load())
	}
	turns, _ := turnCalls(h.llm.Requests())
	for _, r := range turns {
		checkRequest(t, r)
	}
	last := turns[len(turns)-1]
	if len(last.Messages) != 4 || last.Messages[2].Role != "assistant" || last.Messages[3].Role != "user" {
		t.Fatalf("after the cut: %s", last.Raw)
	}
}

// TestCutKeepsTheLatestUserMessage: the turn's own tool round passes the
// budget; the cheapest cut would take the question being answered, which
// must stay.
func TestCutKeepsTheLatestUserMessage(t *testing.T) {
	h := newHarness(t, budget(1200)) // compaction above 900, down to 600
	pad := strings.Repeat("p", 900)
	h.llm.Handle(func(req llmtest.Request) llmtest.Reply {
		if isSummaryCall(req) {
			return llmtest.Text("SUMMARY")
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "user" && strings.HasPrefix(last.Text(), "clock") {
			return llmtest.ToolCalls(llmtest.Call("current_time", `{"timezone":"UTC","pad":"`+pad+`"}`))
		}
		return llmtest.Text("ok")
	})
	c, s := h.conversation()
	question := "clock " + strings.Repeat("q", 1500)
	for _, q := range []string{"hello", question} {
		res := h.send(c, q)
		evs := until(t, s, endOf(res.MessageID))
		if evs[len(evs)-1].Reason != agentik.EndCompleted {
			t.Fatalf("turn: %s", types(evs))
		}
	}
	turns, sums := turnCalls(h.llm.Requests())
	if len(sums) != 1 {
		t.Fatalf("%d compactions, want 1", len(sums))
	}
	last := turns[len(turns)-1]
	checkRequest(t, last)
	if last.LastUserText() != question || !strings.HasPrefix(last.Messages[1].Text(), summaryPrefix) {
		t.Fatalf("after the cut: %s", last.Raw)
	}
}

func TestRunawaySummaryIsCapped(t *testing.T) {
	h := newHarness(t, budget(600)) // target 300 tokens: summaries keep at most 75
	h.llm.Handle(func(req llmtest.Request) llmtest.Reply {
		if isSummaryCall(req) {
			return llmtest.Text(strings.Repeat("blah ", 2000))
		}
		return llmtest.Text(longAnswer)
	})
	c, s := h.conversation()
	var evs []agentik.Event
	for i := range 6 {
		res := h.send(c, question(i, ""))
		evs = append(evs, until(t, s, endOf(res.MessageID))...)
	}
	comps := compactions(evs)
	if len(comps) == 0 {
		t.Fatal("no compaction")
	}
	for _, ev := range comps {
		if n := len(ev.Compaction.Summary); n > 75*tokens.BytesPerToken+8 || ev.Compaction.TokensAfter >= ev.Compaction.TokensBefore {
			t.Fatalf("summary of %d bytes, tokens %d → %d", n, ev.Compaction.TokensBefore, ev.Compaction.TokensAfter)
		}
	}
}

func TestTenThousandMessagesBoundedMemory(t *testing.T) {
	const budgetTokens = 4096
	h := newHarness(t, budget(budgetTokens))
	info, err := h.eng.CreateConversation(h.ctx, agentik.CreateRequest{Title: "long"})
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	st, err := sqlite.Open(h.ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, st, info.ID, 5000, true) // 10,000 journal messages, all in working memory
	st.Close()
	h.start(budget(budgetTokens))
	var summaries atomic.Int64
	h.llm.Handle(chatty(&summaries))

	c, err := h.eng.Conversation(h.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Events(h.ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		res := h.send(c, question(i, "new"))
		if res.Seq != int64(10_001+2*i) {
			t.Fatalf("seq %d", res.Seq)
		}
		evs := until(t, s, endOf(res.MessageID))
		if evs[len(evs)-1].Reason != agentik.EndCompleted {
			t.Fatalf("turn %d: %s", i, types(evs))
		}
	}
	turns, sums := turnCalls(h.llm.Requests())
	if len(sums) == 0 || len(sums) > 8 {
		t.Fatalf("%d summariser calls", len(sums))
	}
	for _, r := range append(turns, sums...) {
		if n := len(r.Raw) / tokens.BytesPerToken; n > budgetTokens {
			t.Fatalf("request %d of ~%d tokens passes the budget", r.N, n)
		}
	}
	for _, r := range turns {
		checkRequest(t, r)
		if !strings.HasPrefix(r.LastUserText(), "question") {
			t.Fatalf("request %d lost the question it answers: %s", r.N, r.Raw)
		}
	}
	mem, err := h.store.Memory(h.ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	est := 0
	for _, m := range mem {
		est += tokens.Message(m.Message, false)
	}
	if len(mem) > 200 || est > budgetTokens/2 {
		t.Fatalf("working memory after compaction: %d entries, %d tokens", len(mem), est)
	}
	page, err := c.Messages(h.ctx, agentik.MessagesRequest{Before: 1 << 40, Limit: 1})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Seq != 10_006 {
		t.Fatalf("journal end %+v %v", page.Messages, err)
	}
}

// pngBytes encodes a real w×h PNG.
func pngBytes(t testing.TB, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestImagesAcceptedAndRefused(t *testing.T) {
	pic := pngBytes(t, 4, 4)
	h := newCtxHarness(t, func(o *openai.Options) { o.ImageInput = true }, func(o *engine.Options) { o.MaxImageBytes = 2048 })
	h.llm.Enqueue(llmtest.Text("a grey square"))
	c, s := h.conversation()

	mux := http.NewServeMux()
	httpapi.Mount(mux, "/agentik", h.eng, httpapi.Options{})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	post := func(parts ...agentik.Content) (int, string) {
		body, _ := json.Marshal(agentik.SendRequest{Content: parts})
		resp, err := http.Post(srv.URL+"/agentik/conversations/"+c.ID()+"/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string }
		}
		raw, _ := io.ReadAll(resp.Body)
		json.Unmarshal(raw, &e)
		return resp.StatusCode, e.Error.Code
	}
	refused := []struct {
		name   string
		part   agentik.Content
		status int
		code   string
	}{
		{"bad header", agentik.Image("image/png", []byte("GIF89a but labelled png")), 422, agentik.EInvalid},
		{"wrong mime", agentik.Image("image/jpeg", pic), 422, agentik.EInvalid},
		{"not an image", agentik.Image("image/webp", []byte("hello")), 422, agentik.EInvalid},
		{"too large", agentik.Image("image/png", append(pngBytes(t, 4, 4), make([]byte, 4096)...)), 413, agentik.ETooLarge},
	}
	for _, tc := range refused {
		if status, code := post(agentik.Text("look"), tc.part); status != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, code, tc.status, tc.code)
		}
	}
	if msgs := journal(t, c); len(msgs) != 0 {
		t.Fatalf("refused images stored %s", journalTypes(msgs))
	}

	if status, _ := post(agentik.Text("what is this?"), agentik.Image("image/png", pic)); status != http.StatusAccepted {
		t.Fatalf("valid image: %d", status)
	}
	until(t, s, func(ev agentik.Event) bool { return ev.Type == agentik.EvEnd })
	reqs := h.llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	parts := reqs[0].Messages[len(reqs[0].Messages)-1].Parts()
	if len(parts) != 2 || parts[1].Type != "image_url" || parts[1].ImageURL.URL != "data:image/png;base64,"+agentik.Image("image/png", pic).Data {
		t.Fatalf("image not sent to the model: %s", reqs[0].Raw)
	}
	msgs := journal(t, c)
	if len(msgs) != 2 || msgs[0].Content[1].Data != agentik.Image("image/png", pic).Data {
		t.Fatalf("journal %s", journalTypes(msgs))
	}

	// A model without image input: refused with 422, nothing stored.
	h2 := newHarness(t)
	c2, _ := h2.conversation()
	_, err := c2.Send(h2.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Image("image/png", pic)}})
	if agentik.ErrorCode(err) != agentik.EInvalid || !strings.Contains(agentik.ErrorMessage(err), "image") {
		t.Fatalf("image to a text-only model: %v", err)
	}
	if msgs := journal(t, c2); len(msgs) != 0 {
		t.Fatal("refused image stored")
	}
}

// screenshotTool returns an image, like an MCP tool with image content.
type screenshotTool struct{ pic []byte }

func (s screenshotTool) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "screenshot", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (s screenshotTool) Call(context.Context, agentik.RawJSON) (agentik.ToolResult, error) {
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("the screen"), agentik.Image("image/png", s.pic)}}, nil
}

func TestToolImagesReachTheModel(t *testing.T) {
	pic := pngBytes(t, 3, 3)
	h := newCtxHarness(t, func(o *openai.Options) { o.ImageInput = true },
		func(o *engine.Options) { o.Tools = tools.NewRegistry(screenshotTool{pic}) })
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("screenshot", `{}`).WithID("shot_1")), llmtest.Text("I see a screen"))
	c, s := h.conversation()
	res := h.send(c, "take a screenshot")
	until(t, s, endOf(res.MessageID))
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d calls", len(reqs))
	}
	checkRequest(t, reqs[1])
	msgs := reqs[1].Messages
	tool, after := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if tool.Role != "tool" || tool.ToolCallID != "shot_1" || after.Role != "user" {
		t.Fatalf("second request: %s", reqs[1].Raw)
	}
	var found bool
	for _, p := range after.Parts() {
		if p.Type == "image_url" && p.ImageURL.URL == "data:image/png;base64,"+agentik.Image("image/png", pic).Data {
			found = true
		}
	}
	if !found {
		t.Fatalf("tool image not sent: %s", reqs[1].Raw)
	}
}

func reasoningReply(thought, answer string) llmtest.Reply {
	return llmtest.Stream().Role().Reasoning(thought).Content(answer).Finish("stop").Usage(20, 7).Done()
}

func TestReasoningStoredNotSentBack(t *testing.T) {
	for _, send := range []bool{false, true} {
		t.Run(fmt.Sprintf("send=%v", send), func(t *testing.T) {
			h := newCtxHarness(t, func(o *openai.Options) { o.SendReasoning = send })
			h.llm.Enqueue(reasoningReply("let me think", "forty-two"), llmtest.Text("ok"))
			c, s := h.conversation()
			res := h.send(c, "the answer?")
			evs := until(t, s, endOf(res.MessageID))
			if got, want := compact(evs), "user_message,working,start_reasoning,append_text,start_response,append_text,assistant_message,end"; got != want {
				t.Fatalf("events %s", got)
			}
			msgs := journal(t, c)
			if a := msgs[len(msgs)-1]; a.Reasoning != "let me think" || agentik.JoinText(a.Content) != "forty-two" {
				t.Fatalf("assistant %+v", a)
			}
			res = h.send(c, "and then?")
			until(t, s, endOf(res.MessageID))
			second := h.llm.Requests()[1]
			var prev llmtest.Message
			for _, m := range second.Messages {
				if m.Role == "assistant" {
					prev = m
				}
			}
			sentBack := prev.ReasoningContent != "" || bytes.Contains(second.Raw, []byte("let me think"))
			if sentBack != send {
				t.Fatalf("reasoning sent back %v, configured %v: %s", sentBack, send, second.Raw)
			}
		})
	}
}

func TestTokenAccounting(t *testing.T) {
	h := newHarness(t)
	// Usage: a tool round (10 in, 5 out), then an answer (10 in, 3 out);
	// then a plain answer with its own usage.
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("current_time", `{}`)), llmtest.Text("it is noon"),
		reasoningReply("hm", "fine"))
	c, s := h.conversation()
	res := h.send(c, "time?")
	evs := until(t, s, endOf(res.MessageID))
	want1 := agentik.TurnTokens{Input: 20, Output: 8}
	end := evs[len(evs)-1]
	if end.Tokens == nil || *end.Tokens != want1 {
		t.Fatalf("end tokens %+v", end.Tokens)
	}
	msgs := journal(t, c)
	if a := msgs[len(msgs)-1]; a.Type != agentik.MsgAssistant || a.Tokens == nil || *a.Tokens != want1 {
		t.Fatalf("assistant tokens %+v", a)
	}
	res = h.send(c, "how are you?")
	evs = until(t, s, endOf(res.MessageID))
	if end := evs[len(evs)-1]; end.Tokens == nil || *end.Tokens != (agentik.TurnTokens{Input: 20, Output: 7}) {
		t.Fatalf("second end tokens %+v", end.Tokens)
	}
	info, err := c.Info(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Tokens == nil || *info.Tokens != (agentik.TurnTokens{Input: 40, Output: 15}) {
		t.Fatalf("running totals %+v", info.Tokens)
	}
	// The totals survive a restart: they are stored, not counted in memory.
	h.stop()
	h.start()
	c, err = h.eng.Conversation(h.ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if info, err = c.Info(h.ctx); err != nil || info.Tokens == nil || *info.Tokens != (agentik.TurnTokens{Input: 40, Output: 15}) {
		t.Fatalf("totals after restart %+v %v", info.Tokens, err)
	}
}

// BenchmarkTurnByJournalLength measures one turn (send → end) of a
// conversation whose journal already holds n messages and whose working
// memory is bounded by compaction. The cost per turn must not grow with n.
func BenchmarkTurnByJournalLength(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("journal=%d", n), func(b *testing.B) {
			ctx := context.Background()
			llm := llmtest.NewServer()
			defer llm.Close()
			var summaries atomic.Int64
			llm.Handle(chatty(&summaries))
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentik.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			now := agentik.Now()
			rec := agentik.ConversationRecord{ID: agentik.NewID(), Title: "bench", CreatedAt: now, UpdatedAt: now}
			if _, err := st.CreateConversation(ctx, rec); err != nil {
				b.Fatal(err)
			}
			seed(b, st, rec.ID, n/2, false)
			model, err := openai.New(openai.Options{BaseURL: llm.URL(), Model: "test-model"})
			if err != nil {
				b.Fatal(err)
			}
			eng, err := engine.New(engine.Options{Store: st, Temporal: memstore.New(), Bus: bus.New(), LLM: model, SystemPrompt: testSystem, ContextTokens: 2048})
			if err != nil {
				b.Fatal(err)
			}
			if err := eng.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer eng.Shutdown(ctx)
			c, err := eng.Conversation(ctx, rec.ID)
			if err != nil {
				b.Fatal(err)
			}
			s, err := c.Events(ctx, agentik.LiveOnly)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			turn := func(i int) {
				res, err := c.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(question(i, ""))}})
				if err != nil {
					b.Fatal(err)
				}
				for ev := range s.C() {
					if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
						return
					}
				}
				b.Fatalf("stream ended: %v", s.Err())
			}
			// Warm up until working memory has been compacted once, so every
			// size is measured in the same steady state.
			i := 0
			for summaries.Load() == 0 {
				turn(i)
				i++
			}
			for b.Loop() {
				turn(i)
				i++
			}
		})
	}
}

// TestBranchBeforeASummaryRebuildsItsMemory (SPEC §18, compaction per
// path): after compaction summarised the start of a conversation, an edit
// inside the summarised part is answered from its own path, rebuilt from
// the journal — without the summary of messages it does not follow — and
// the budget compacts that path again when it grows; the first path keeps
// its summary when the head moves back.
func TestBranchBeforeASummaryRebuildsItsMemory(t *testing.T) {
	const budgetTokens = 600
	h := newHarness(t, budget(budgetTokens))
	var summaries atomic.Int64
	h.llm.Handle(chatty(&summaries))
	c, s := h.conversation()
	ask := func(q string, parent *int64) []agentik.Event {
		t.Helper()
		res, err := c.Send(h.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(q)}, Parent: parent})
		if err != nil {
			t.Fatal(err)
		}
		got := until(t, s, endOf(res.MessageID))
		if last := got[len(got)-1]; last.Reason != agentik.EndCompleted {
			t.Fatalf("%q: %s", q, types(got))
		}
		return got
	}
	var first []agentik.Event
	for i := 0; len(compactions(first)) == 0; i++ {
		if i == 12 {
			t.Fatal("no compaction in 12 long turns")
		}
		first = append(first, ask(question(i, ""), nil)...)
	}
	cp := compactions(first)[0].Compaction
	if cp.FromSeq != 1 || cp.ToSeq < 4 {
		t.Fatalf("the compaction covers %d..%d, want 1 to past the first exchange", cp.FromSeq, cp.ToSeq)
	}
	info, err := c.Info(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldHead := info.Head

	// An edit of question 1 (after the first answer, seq 2): inside the
	// summarised part.
	two := int64(2)
	ask("edited "+question(1, ""), &two)
	turns, _ := turnCalls(h.llm.Requests())
	req := turns[len(turns)-1]
	checkRequest(t, req)
	var texts []string
	for _, m := range req.Messages[1:] {
		if strings.HasPrefix(m.Text(), summaryPrefix) {
			t.Fatalf("the edit's request carries the first path's summary: %s", req.Raw)
		}
		texts = append(texts, m.Role+":"+m.Text())
	}
	want := []string{"user:" + question(0, ""), "assistant:" + longAnswer, "user:edited " + question(1, "")}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("the edit's request saw %q, want its own path %q", texts, want)
	}

	// The branch grows until the budget compacts it again, on its own path.
	var branch []agentik.Event
	for i := 2; len(compactions(branch)) == 0; i++ {
		if i == 14 {
			t.Fatal("the branch was never compacted")
		}
		branch = append(branch, ask("branch "+question(i, ""), nil)...)
	}
	turns, _ = turnCalls(h.llm.Requests())
	for _, r := range turns[len(turns)-1:] {
		checkRequest(t, r)
		if !strings.HasPrefix(r.Messages[1].Text(), summaryPrefix) {
			t.Fatalf("the compacted branch's next request has no summary: %s", r.Raw)
		}
		for _, m := range r.Messages {
			if strings.HasPrefix(m.Text(), "question 2") {
				t.Fatalf("the branch's request holds the first path's question 2: %s", r.Raw)
			}
		}
	}

	// Back on the first path: its summary is there again.
	if _, err := c.SetHead(h.ctx, oldHead); err != nil {
		t.Fatal(err)
	}
	ask(question(20, ""), nil)
	turns, _ = turnCalls(h.llm.Requests())
	last := turns[len(turns)-1]
	checkRequest(t, last)
	for _, m := range last.Messages {
		if strings.HasPrefix(m.Text(), "branch ") || strings.HasPrefix(m.Text(), "edited ") {
			t.Fatalf("the first path's request holds the branch: %s", last.Raw)
		}
	}
	if !strings.HasPrefix(last.Messages[1].Text(), summaryPrefix) {
		t.Fatalf("the first path lost its summary: %s", last.Raw)
	}
}
