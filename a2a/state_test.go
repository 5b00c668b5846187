package a2a

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/tools"
)

// TestRemoteContextSurvivesRestart: a local agent asks a remote agent (the
// A2A facade of a real one) twice in one conversation, restarting in
// between. The remote contextId is kept in the conversation's state, so
// the second request continues the remote conversation instead of opening a
// new one.
func TestRemoteContextSurvivesRestart(t *testing.T) {
	remote := newEnv(t, envOpts{})
	llm := llmtest.NewServer()
	defer llm.Close()
	path := filepath.Join(t.TempDir(), "local.db")
	ctx := context.Background()
	start := func() (*engine.Engine, func()) {
		t.Helper()
		src := NewSource(ctx, SourceOptions{Agents: []Remote{{URL: remote.srv.URL}}, ConversationKey: agentik.ConversationFrom})
		reg := tools.NewRegistry()
		reg.AddSource("a2a", src)
		st, err := stacktest.Open(ctx, stacktest.Path(path), stacktest.LLM(llm),
			stacktest.Model(func(o *openai.Options) { o.Model = "local" }),
			stacktest.Engine(func(o *engine.Options) { o.Tools = reg }))
		if err != nil {
			src.Close()
			t.Fatal(err)
		}
		return st.Engine, func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			st.Engine.Shutdown(sctx)
			src.Close()
			st.Close()
		}
	}
	ask := func(eng *engine.Engine, conv, question string) {
		t.Helper()
		c, err := eng.Conversation(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Events(ctx, agentik.LiveOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		llm.Enqueue(llmtest.ToolCalls(llmtest.Call("Test_agent", `{"message":"`+question+`"}`)), llmtest.Text("done"))
		res, err := c.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("ask it")}})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range s.C() {
			if ev.Type == agentik.EvToolFailed {
				t.Fatalf("the remote agent's tool failed: %s", agentik.JoinText(ev.Message.Content))
			}
			if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
				return
			}
		}
		t.Fatalf("stream ended: %v", s.Err())
	}

	eng, stop := start()
	info, err := eng.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	remote.llm.Enqueue(llmtest.Text("four"), llmtest.Text("twelve"))
	n := len(remote.llm.Requests())
	ask(eng, info.ID, "2+2?")
	stop()

	eng, stop = start()
	defer stop()
	ask(eng, info.ID, "times 3?")
	reqs := remote.llm.Requests()[n:]
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "2+2?") {
		t.Fatalf("after the restart the remote agent was asked without the earlier request (%d requests)", len(reqs))
	}
}
