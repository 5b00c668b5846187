package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/httpapi"
	"github.com/agentik/agentik/llmtest"
)

// TestSIGKILLMidRegenerate kills the real binary (SQLite, then
// PostgreSQL) while a regenerated answer streams, starts it again on the
// same database: the regenerate is answered once, on its own branch (the
// first answer kept beside it), and the model is given the path without
// the first answer.
func TestSIGKILLMidRegenerate(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			env := []string{"AGENTIK_DB_PATH=" + filepath.Join(t.TempDir(), "agentik.db")}
			if db == "postgres" {
				env = []string{"AGENTIK_DATABASE_URL=" + pgSchema(t)}
			}
			killMidRegenerate(t, env)
		})
	}
}

func killMidRegenerate(t *testing.T, env []string) {
	llm := llmtest.NewServer()
	defer llm.Close()
	gate := llmtest.NewGate()
	llm.Enqueue(
		llmtest.Text("first answer"),
		llmtest.Stream().Role().Content("cut ").Pause(gate).Content("never").Finish("stop").Done(),
		llmtest.Text("second answer"),
	)
	env = append(env, "OPENAI_BASE_URL="+llm.URL(), "OPENAI_MODEL=test")
	p := startProc(t, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := httpapi.NewClient(p.url + "/agentik")
	info, err := client.CreateConversation(ctx, agentik.CreateRequest{Title: "regenerate"})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := client.Conversation(ctx, info.ID)
	s, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("question")}})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, s, agentik.EvEnd)
	s.Close()
	res, err := conv.Regenerate(ctx, agentik.RegenerateRequest{})
	if err != nil || res.MessageID != sent.MessageID {
		t.Fatalf("regenerate: %+v, %v; want the question %s", res, err, sent.MessageID)
	}
	<-gate.Reached() // the regenerated answer is streaming
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	gate.Release()

	p2 := startProc(t, env...)
	client2 := httpapi.NewClient(p2.url + "/agentik")
	conv2, err := client2.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := conv2.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var answers []string
	for len(answers) < 2 {
		ev := waitEvent(t, s2, agentik.EvAssistantMessage)
		answers = append(answers, agentik.JoinText(ev.Message.Content))
	}
	if answers[0] != "first answer" || answers[1] != "second answer" {
		t.Fatalf("answers %q, want the first and the regenerated one\n%s", answers, p2.log())
	}
	page, err := conv2.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Messages); n != 2 || agentik.JoinText(page.Messages[1].Content) != "second answer" || page.Messages[1].Parent != 1 {
		t.Fatalf("head path %+v, want the question and the second answer after it", page.Messages)
	}
	all, err := conv2.Messages(ctx, agentik.MessagesRequest{Branch: agentik.BranchAll})
	if err != nil || len(all.Messages) != 3 {
		t.Fatalf("journal %d messages, %v; want 3 (both answers kept)", len(all.Messages), err)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model was asked %d times, want 3", len(reqs))
	}
	for _, r := range reqs[1:] {
		var saw int
		for _, m := range r.Messages {
			if m.Role == "user" || m.Role == "assistant" {
				saw++
			}
		}
		if saw != 1 || r.LastUserText() != "question" {
			t.Fatalf("a regenerate's request had %d messages (last user %q), want the question alone", saw, r.LastUserText())
		}
	}
}
