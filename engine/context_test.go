package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
)

// contextSource adds a text that changes between model calls, and
// remembers the conversation and principal it was asked for.
type contextSource struct {
	mu    sync.Mutex
	text  string
	err   error
	asked []string // conversation/principal
}

func (s *contextSource) SystemContext(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, agentik.ConversationFrom(ctx)+"/"+agentik.PrincipalFrom(ctx))
	return s.text, s.err
}

func (s *contextSource) set(text string, err error) {
	s.mu.Lock()
	s.text, s.err = text, err
	s.mu.Unlock()
}

// changing is a tool that changes the context source's text, as an
// agent's memory edit does: the next model call of the same turn sees it.
type changing struct{ src *contextSource }

func (c changing) Spec() agentik.ToolSpec {
	return agentik.ToolSpec{Name: "remember", Parameters: agentik.RawJSON(`{"type":"object"}`)}
}

func (c changing) Call(ctx context.Context, _ agentik.RawJSON) (agentik.ToolResult, error) {
	c.src.set("<memory>after</memory>", nil)
	return agentik.ToolResult{Content: []agentik.Content{agentik.Text("ok by " + agentik.PrincipalFrom(ctx))}}, nil
}

func TestContextSourcesFollowTheSystemPromptOnEveryModelCall(t *testing.T) {
	src := &contextSource{text: "<memory>before</memory>"}
	h := newHarness(t, func(o *engine.Options) {
		o.Context = []agentik.ContextSource{src, &contextSource{}} // the second adds nothing
		o.Tools = tools.NewRegistry(changing{src})
	})
	h.llm.Enqueue(llmtest.ToolCalls(llmtest.Call("remember", `{}`)), llmtest.Text("done"))
	c, s := h.conversation()
	res := h.send(c, "hi")
	until(t, s, endOf(res.MessageID))
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for i, want := range []string{"You are a test agent.\n\n<memory>before</memory>", "You are a test agent.\n\n<memory>after</memory>"} {
		if got := reqs[i].Messages[0]; got.Role != "system" || string(got.Content) != `"`+strings.ReplaceAll(want, "\n", `\n`)+`"` {
			t.Fatalf("request %d's system message %s %s, want %q", i, got.Role, got.Content, want)
		}
	}
	if len(src.asked) != 2 || src.asked[0] != c.ID()+"/" {
		t.Fatalf("asked for %q, want the conversation twice", src.asked)
	}
	if tool := reqs[1].Messages[len(reqs[1].Messages)-1]; !strings.Contains(string(tool.Content), "ok by") {
		t.Fatalf("tool result %s", tool.Content)
	}
}

func TestAFailingContextSourceFailsTheTurnWithoutAModelCall(t *testing.T) {
	src := &contextSource{err: errors.New("database gone")}
	h := newHarness(t, func(o *engine.Options) { o.Context = []agentik.ContextSource{src} })
	c, s := h.conversation()
	res := h.send(c, "hi")
	evs := until(t, s, endOf(res.MessageID))
	var failed bool
	for _, ev := range evs {
		if ev.Message != nil && ev.Message.Type == agentik.MsgError && ev.Message.Code == agentik.CodeStoreError {
			failed = true
		}
	}
	if !failed || len(h.llm.Requests()) != 0 {
		t.Fatalf("events %s, %d model requests: want a store_error and none", compact(evs), len(h.llm.Requests()))
	}
}
