package stacktest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
)

// TestNewAnswersThroughTheModel: a turn on a new stack is answered by its
// scripted model, and the journal keeps the exchange.
func TestNewAnswersThroughTheModel(t *testing.T) {
	st := New(t)
	st.LLM.Enqueue(llmtest.Text("hello"))
	id := turn(t, st, "", "hi")
	got := Journal(t, st.Engine, id, "")
	if len(got) != 2 || agentik.JoinText(got[1].Content) != "hello" {
		t.Fatalf("journal %+v", got)
	}
	if reqs := st.LLM.Requests(); len(reqs) != 1 || reqs[0].LastUserText() != "hi" {
		t.Fatalf("model requests %+v", reqs)
	}
}

// TestOpenOnAPathKeepsTheData: a stack opened again on the same file, with
// a shared model, finds the conversation of the one before; Close is
// idempotent and leaves a given path's directory alone.
func TestOpenOnAPathKeepsTheData(t *testing.T) {
	ctx := context.Background()
	llm := llmtest.NewServer()
	defer llm.Close()
	path := filepath.Join(t.TempDir(), "kept.db")
	first, err := Open(ctx, Path(path), LLM(llm))
	if err != nil {
		t.Fatal(err)
	}
	id := turn(t, first, "alice", "remember")
	first.Close()
	first.Close()

	again, err := Open(ctx, Path(path), LLM(llm))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := Journal(t, again.Engine, id, "alice"); len(got) != 2 || agentik.JoinText(got[0].Content) != "remember" {
		t.Fatalf("journal after reopening: %+v", got)
	}
}

// TestOpenWithoutPathRemovesItsDirectory: Open without Path makes a
// temporary directory and Close removes it.
func TestOpenWithoutPathRemovesItsDirectory(t *testing.T) {
	st, err := Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(st.Path)
	if _, err := os.Stat(st.Path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	st.Close()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("directory %s after Close: %v", dir, err)
	}
}

// TestOptionsReachTheEngineAndModel: Engine and Model adjust what is built.
func TestOptionsReachTheEngineAndModel(t *testing.T) {
	st := New(t,
		Engine(func(o *engine.Options) { o.Info = agentik.AgentInfo{ID: "probe", Name: "Probe"} }),
		Model(func(o *openai.Options) { o.Model = "probe-model" }))
	if st.Engine.Info().ID != "probe" {
		t.Fatalf("engine info %+v", st.Engine.Info())
	}
	turn(t, st, "", "which model?")
	if reqs := st.LLM.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Raw), `"model":"probe-model"`) {
		t.Fatalf("model requests %+v", reqs)
	}
}

// turn creates a conversation as principal, sends text and waits for the
// end of its turn; it returns the conversation's id.
func turn(t *testing.T, st *Stack, principal, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(agentik.WithPrincipal(context.Background(), principal), 30*time.Second)
	defer cancel()
	info, err := st.Engine.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := st.Engine.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range s.C() {
		if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
			return info.ID
		}
	}
	t.Fatalf("stream ended before the turn: %v", s.Err())
	return ""
}
