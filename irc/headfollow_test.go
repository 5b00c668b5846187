package irc

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestHeadFollow: after the second user message is edited through the Go
// API (a send with a Parent that is not the head), a joined client sees the
// new branch's answer live, CHATHISTORY shows the head path (not the
// abandoned q2/a2) and a client joining afresh is replayed the head path.
func TestHeadFollow(t *testing.T) {
	s := newStack(t, Options{HistoryLines: 10}, twoUsers)
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("a" + strings.TrimPrefix(r.LastUserText(), "q"))
	})
	c := s.dial()
	c.register("alice", "tok-alice-1", allCaps...)
	c.join("#h")
	for _, q := range []string{"q1", "q2"} {
		c.send("PRIVMSG #h :" + q)
		c.answer("#h", "a"+q[1:])
		c.until(is("TAGMSG"))
	}
	id := s.conversations("alice")[0].ID
	s.waitIdle(id, "alice")
	j := s.journal(id, "alice")
	if !slices.Equal(texts(j), []string{"q1", "a1", "q2", "a2"}) {
		t.Fatalf("journal %q", texts(j))
	}
	ctx := agentik.WithPrincipal(testCtx(t), "alice")
	conv, err := s.eng.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	parent := j[1].Seq // a1: the edit of q2 follows it
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("q2b")}, Parent: &parent}); err != nil {
		t.Fatal(err)
	}
	// The live client gets the new branch's answer.
	c.answer("#h", "a2b")
	c.until(is("TAGMSG"))
	s.waitIdle(id, "alice")
	want := []string{"q1", "a1", "q2b", "a2b"}
	got, _, fail := history(t, c, "CHATHISTORY LATEST #h * 10")
	if fail != nil {
		t.Fatal(fail)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("CHATHISTORY after the edit: %q, want %q", got, want)
	}
	// A client reconnecting (no chathistory: replay on JOIN) is replayed
	// the head path.
	re := s.dial()
	re.register("alice2", "tok-alice-1", "batch", "server-time", "message-tags")
	re.join("#h")
	if b := re.next(); b.Command != "BATCH" || b.Params[1] != "chathistory" {
		t.Fatalf("%v", b)
	}
	got = nil
	for m := re.next(); m.Command != "BATCH"; m = re.next() {
		got = append(got, m.Params[1])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replay on JOIN after the edit: %q, want %q", got, want)
	}
	// Regenerate moves the head again: the live client gets the new answer
	// and history shows it instead of a2b. A head switch back to a2 shows the
	// first branch again.
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply { return llmtest.Text("again") })
	if _, err := conv.Regenerate(ctx, agentik.RegenerateRequest{}); err != nil {
		t.Fatal(err)
	}
	c.answer("#h", "again")
	c.until(is("TAGMSG"))
	s.waitIdle(id, "alice")
	got, _, _ = history(t, c, "CHATHISTORY LATEST #h * 10")
	if want := []string{"q1", "a1", "q2b", "again"}; !slices.Equal(got, want) {
		t.Fatalf("CHATHISTORY after regenerate: %q, want %q", got, want)
	}
	// Switching the head back to the first branch's leaf (a2) shows it.
	if _, err := conv.SetHead(ctx, j[3].Seq); err != nil {
		t.Fatal(err)
	}
	got, _, _ = history(t, c, "CHATHISTORY LATEST #h * 10")
	if want := []string{"q1", "a1", "q2", "a2"}; !slices.Equal(got, want) {
		t.Fatalf("CHATHISTORY after switching the head: %q, want %q", got, want)
	}
}
