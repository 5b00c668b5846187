package httpapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/sqlite"
)

// realEnv is the real stack: the engine over a SQLite file and the in-process
// bus, the OpenAI adapter talking to a scripted llmtest server, all served on
// a real listener.
type realEnv struct {
	*env
	llm   *llmtest.Server
	eng   *engine.Engine
	store *sqlite.Store
}

func newRealEnv(t *testing.T, opts Options, eopts ...func(*engine.Options)) *realEnv {
	t.Helper()
	st := stacktest.New(t, stacktest.Engine(func(o *engine.Options) {
		o.Tools = nil // an agent without tools
		o.Info = agentik.AgentInfo{ID: "test", Name: "Test agent"}
		for _, f := range eopts {
			f(o)
		}
	}))
	if opts.Ready == nil {
		opts.Ready = st.Store.Ping
	}
	return &realEnv{env: newEnv(t, st.Engine, opts), llm: st.LLM, eng: st.Engine, store: st.Store}
}

// create makes a conversation through the client.
func (e *realEnv) create() agentik.Conversation {
	e.t.Helper()
	ctx := testCtx(e.t)
	info, err := e.client.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	conv, err := e.client.Conversation(ctx, info.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return conv
}

func text(s string) agentik.SendRequest {
	return agentik.SendRequest{Content: []agentik.Content{agentik.Text(s)}}
}

// untilEnd receives from st until the end event of a turn, returning every
// event received.
func untilEnd(t *testing.T, st agentik.Stream[agentik.Event]) []agentik.Event {
	t.Helper()
	var evs []agentik.Event
	for {
		ev := recv(t, st)
		evs = append(evs, ev)
		if ev.Type == agentik.EvEnd {
			return evs
		}
	}
}

// turn sends s and waits for its turn to end, using a live stream opened
// before the send.
func (e *realEnv) turn(conv agentik.Conversation, s string) []agentik.Event {
	e.t.Helper()
	ctx := testCtx(e.t)
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	if _, err := conv.Send(ctx, text(s)); err != nil {
		e.t.Fatal(err)
	}
	return untilEnd(e.t, st)
}

func durable(evs []agentik.Event) []agentik.Event {
	var out []agentik.Event
	for _, ev := range evs {
		if ev.Cursor > 0 {
			out = append(out, ev)
		}
	}
	return out
}

func TestRealClientEndpoints(t *testing.T) {
	e := newRealEnv(t, Options{})
	ctx := testCtx(t)
	c := e.client

	if info := c.Info(); info.ID != "test" || info.Name != "Test agent" || info.Model != "test-model" {
		t.Errorf("info = %+v", info)
	}
	agentEvents, err := c.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer agentEvents.Close()

	conv := e.create()
	info, err := conv.Info(ctx)
	if err != nil || info.ID != conv.ID() || info.Working || info.Temporal {
		t.Fatalf("info: %+v, %v", info, err)
	}
	if got := recv(t, agentEvents); got.Type != agentik.AgentEvCreated || got.Conversation == nil || got.Conversation.ID != conv.ID() {
		t.Fatalf("agent event %+v", got)
	}

	e.llm.Enqueue(llmtest.Text("Hello there"))
	evs := e.turn(conv, "hi")
	last := evs[len(evs)-1]
	if last.Type != agentik.EvEnd || last.Reason != agentik.EndCompleted {
		t.Fatalf("turn ended with %+v", last)
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 2 || page.Messages[0].Type != agentik.MsgUser || page.Messages[1].Type != agentik.MsgAssistant ||
		agentik.JoinText(page.Messages[1].Content) != "Hello there" || page.HasMore {
		t.Fatalf("messages %+v", page)
	}
	if d := durable(evs); page.Cursor != d[len(d)-1].Cursor {
		t.Fatalf("page cursor %d, last durable event %d", page.Cursor, d[len(d)-1].Cursor)
	}
	// Paging parameters travel.
	p2, err := conv.Messages(ctx, agentik.MessagesRequest{After: 1, Limit: 1})
	if err != nil || len(p2.Messages) != 1 || p2.Messages[0].Seq != 2 {
		t.Fatalf("after=1: %+v, %v", p2, err)
	}
	p3, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 1})
	if err != nil || len(p3.Messages) != 1 || p3.Messages[0].Seq != 1 || !p3.HasMore {
		t.Fatalf("limit=1: %+v, %v", p3, err)
	}

	if ok, err := conv.Interrupt(ctx); err != nil || ok {
		t.Fatalf("interrupt when idle: %v, %v", ok, err)
	}
	renamed, err := conv.Rename(ctx, "Greetings")
	if err != nil || renamed.Title != "Greetings" {
		t.Fatalf("rename: %+v, %v", renamed, err)
	}

	// Listing pages newest first.
	second := e.create()
	third := e.create()
	l1, err := c.ListConversations(ctx, agentik.ListRequest{Limit: 2})
	if err != nil || len(l1.Conversations) != 2 || l1.Next == "" {
		t.Fatalf("list page 1: %+v, %v", l1, err)
	}
	l2, err := c.ListConversations(ctx, agentik.ListRequest{Limit: 2, Before: l1.Next})
	if err != nil || len(l2.Conversations) != 1 || l2.Next != "" {
		t.Fatalf("list page 2: %+v, %v", l2, err)
	}
	seen := map[string]bool{}
	for _, ci := range append(l1.Conversations, l2.Conversations...) {
		seen[ci.ID] = true
	}
	if !seen[conv.ID()] || !seen[second.ID()] || !seen[third.ID()] {
		t.Fatalf("list misses conversations: %v", seen)
	}

	if err := c.DeleteConversation(ctx, second.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Info(ctx); !agentik.IsNotFound(err) {
		t.Fatalf("info after delete: %v", err)
	}
	if err := c.DeleteConversation(ctx, second.ID()); !agentik.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}

	// The agent stream saw everything in order: created, touched…, renamed,
	// created ×2, deleted.
	want := []string{agentik.AgentEvRenamed, agentik.AgentEvCreated, agentik.AgentEvCreated, agentik.AgentEvDeleted}
	var cursor int64
	for len(want) > 0 {
		ev := recv(t, agentEvents)
		if ev.Cursor <= cursor {
			t.Fatalf("agent cursor %d after %d", ev.Cursor, cursor)
		}
		cursor = ev.Cursor
		if ev.Type == want[0] {
			want = want[1:]
		}
	}

	// Temporal conversations work the same and are not listed.
	tmp, err := c.CreateConversation(ctx, agentik.CreateRequest{Temporal: true, Title: "scratch"})
	if err != nil || !tmp.Temporal || tmp.Title != "scratch" {
		t.Fatalf("temporal: %+v, %v", tmp, err)
	}
	if _, err := c.Conversation(ctx, tmp.ID); err != nil {
		t.Fatal(err)
	}
}

// TestRealClientUnsupported: what the REST API has no endpoint for, a
// client conversation refuses with ErrUnsupported (code invalid) and does
// nothing; the message it cannot read by id is there.
func TestRealClientUnsupported(t *testing.T) {
	e := newRealEnv(t, Options{})
	ctx := testCtx(t)
	conv := e.create()
	e.llm.Enqueue(llmtest.Text("Hi."))
	var user agentik.Event
	for _, ev := range e.turn(conv, "hello") {
		if ev.Type == agentik.EvUserMessage {
			user = ev
		}
	}
	if user.Message == nil {
		t.Fatal("no user message in the turn")
	}
	done, err := conv.InterruptTurn(ctx, user.Message.ID)
	if done || !errors.Is(err, ErrUnsupported) || agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("InterruptTurn = %v, %v", done, err)
	}
	if _, err := conv.Message(ctx, user.Message.ID); !errors.Is(err, ErrUnsupported) || agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("Message: %v", err)
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil || len(page.Messages) != 2 || page.Messages[0].ID != user.Message.ID {
		t.Fatalf("messages %+v, %v", page, err)
	}
}

func TestRealHealth(t *testing.T) {
	e := newRealEnv(t, Options{})
	for _, path := range []string{"/health", "/health/ready"} {
		if status, body := e.raw("GET", path, "", ""); status != http.StatusOK || string(body) != "{\"status\":\"ok\"}\n" {
			t.Fatalf("%s: %d %s", path, status, body)
		}
	}
	e.store.Close()
	if status, body := e.raw("GET", "/health/ready", "", ""); status != http.StatusServiceUnavailable || errorCode(t, body) != agentik.EUnavailable {
		t.Fatalf("ready with the store closed: %d %s", status, body)
	}
	if status, _ := e.raw("GET", "/health", "", ""); status != http.StatusOK {
		t.Fatalf("liveness with the store closed: %d", status)
	}
}
