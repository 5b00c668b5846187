package a2a

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestHeadFollow: in one context of two tasks ("q1", "q2"), a regenerate
// of q2 through the Go API is followed by a live tasks/resubscribe of q2's
// task (it streams the new answer and completes), and tasks/get then shows
// the new answer, not the abandoned one. An edit of q2 (a send whose Parent
// is a1) is a new task, found and followed by tasks/resubscribe at once,
// whose tasks/get shows the edit's answer; q2's task, now on an abandoned
// branch, is still found.
func TestHeadFollow(t *testing.T) {
	e := newEnv(t, envOpts{})
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // a failed test does not leave the model waiting
	e.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		q := r.LastUserText()
		if q == "q2" && len(e.llm.Requests()) > 2 { // the regenerate
			started <- struct{}{}
			<-release
			return llmtest.Text("again")
		}
		return llmtest.Text("a" + strings.TrimPrefix(q, "q"))
	})
	t1 := taskOf(t, e.rpc("message/send", map[string]any{"message": v03Msg("q1", "")}).Result)
	t2 := taskOf(t, e.rpc("message/send", map[string]any{"message": v03Msg("q2", t1.ContextID)}).Result)
	if len(t2.Artifacts) != 1 || t2.Artifacts[0].Parts[0].Text != "a2" || t2.Status.State != "completed" {
		t.Fatalf("q2's task %+v", t2)
	}
	ctx := t.Context()
	conv, err := e.eng.Conversation(ctx, t1.ContextID)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	if _, err := conv.Regenerate(ctx, agentik.RegenerateRequest{}); err != nil {
		t.Fatal(err)
	}
	<-started // the turn runs: the head is on the new branch
	var evs [][]byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs = e.sse("tasks/resubscribe", map[string]any{"id": t2.ID}, func(i int, data []byte) {
			if i == 0 {
				let() // subscribed: let the answer come
			}
		})
	}()
	<-done
	if len(evs) < 2 {
		t.Fatalf("resubscribe: %q", evs)
	}
	first := taskOf(t, evs[0])
	if first.Status.State != "working" || len(first.Artifacts) != 0 {
		t.Fatalf("resubscribe during the regenerate starts with %s (the abandoned answer?)", evs[0])
	}
	all := string(evs[len(evs)-1])
	var streamed strings.Builder
	for _, ev := range evs[1:] {
		streamed.Write(ev)
	}
	if !strings.Contains(streamed.String(), "again") || strings.Contains(streamed.String(), `"a2"`) || !strings.Contains(all, `"completed"`) {
		t.Fatalf("resubscribe streamed %s", streamed.String())
	}
	got := taskOf(t, e.rpc("tasks/get", map[string]any{"id": t2.ID}).Result)
	if got.Status.State != "completed" || len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0].Text != "again" {
		t.Fatalf("tasks/get after regenerate: %+v", got)
	}
	// An edit of q2: a new task on a new branch.
	j, err := conv.Messages(ctx, agentik.MessagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	parent := j.Messages[1].Seq // a1
	res, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("q2b")}, Parent: &parent})
	if err != nil {
		t.Fatal(err)
	}
	// The edit is stored at once and becomes the head when its turn starts:
	// its task is found (and followed) before that too.
	edit := taskID(t1.ContextID, res.Seq)
	evs = e.sse("tasks/resubscribe", map[string]any{"id": edit}, nil)
	if last := string(evs[len(evs)-1]); !strings.Contains(last, `"completed"`) {
		t.Fatalf("resubscribe to the edit's task: %q", evs)
	}
	got = taskOf(t, e.rpc("tasks/get", map[string]any{"id": edit}).Result)
	if got.Status.State != "completed" || len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0].Text != "a2b" {
		t.Fatalf("tasks/get of the edit: %+v", got)
	}
	// The task of the abandoned branch is still a task (A2A tasks are
	// records): completed, with an answer of its own turn.
	r := e.rpc("tasks/get", map[string]any{"id": t2.ID})
	if r.Error != nil {
		t.Fatalf("tasks/get of the abandoned task: %s", r.raw)
	}
	if old := taskOf(t, r.Result); old.Status.State != "completed" || len(old.Artifacts) != 1 || old.Artifacts[0].Parts[0].Text == "a2b" {
		t.Fatalf("tasks/get of the abandoned task: %s", r.raw)
	}
}
