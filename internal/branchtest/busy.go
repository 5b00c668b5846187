package branchtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// RunBusy is SPEC §18's busy rule through agent, whose model is served by
// llm: while a turn runs, a regenerate follows its if_busy — reject
// answers busy and stores nothing, enqueue answers after the running
// turn, interrupt cuts the running turn short — and a head move is
// refused as busy.
func RunBusy(t *testing.T, agent agentik.Agent, llm *llmtest.Server) {
	m := &Model{}
	llm.Handle(m.Answer)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := agent.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := agent.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, ctx: ctx, conv: conv, m: m}
	s.do(func() { s.send("a", nil) }) // 1 a, 2 its answer
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// b's answer holds its turn running: nothing may move meanwhile.
	b := s.slowSend(llm, "b")
	stored := len(s.messages(agentik.BranchAll))
	if _, err := conv.Regenerate(ctx, agentik.RegenerateRequest{Seq: 1, IfBusy: agentik.BusyReject}); agentik.ErrorCode(err) != agentik.EBusy {
		t.Fatalf("regenerate with reject while a turn runs: %v, want busy", err)
	}
	if _, err := conv.Regenerate(ctx, agentik.RegenerateRequest{Seq: b.res.Seq, IfBusy: agentik.BusyEnqueue}); agentik.ErrorCode(err) != agentik.EInvalid {
		t.Fatalf("regenerate of the message being answered: %v, want invalid", err)
	}
	if _, err := conv.SetHead(ctx, 2); agentik.ErrorCode(err) != agentik.EBusy {
		t.Fatalf("head move while a turn runs: %v, want busy", err)
	}
	if n := len(s.messages(agentik.BranchAll)); n != stored {
		t.Fatalf("%d messages after the refusals, want %d", n, stored)
	}

	// enqueue: a is answered again once b's answer is over.
	again, err := conv.Regenerate(ctx, agentik.RegenerateRequest{Seq: 1, IfBusy: agentik.BusyEnqueue})
	if err != nil {
		t.Fatal(err)
	}
	b.gate.Release()
	s.ends(st, b.res.MessageID, agentik.EndCompleted)
	s.ends(st, again.MessageID, agentik.EndCompleted)
	if got := s.answerTo(b.res.MessageID); got != "slow b" {
		t.Fatalf("b's answer %q: want the whole slow answer, not cut by the queued regenerate", got)
	}
	s.answersAgain("after the enqueued regenerate", "a")

	// interrupt: c's running answer is cut short for a's new one.
	c := s.slowSend(llm, "c")
	again, err = conv.Regenerate(ctx, agentik.RegenerateRequest{Seq: 1, IfBusy: agentik.BusyInterrupt})
	if err != nil {
		t.Fatal(err)
	}
	s.ends(st, c.res.MessageID, agentik.EndInterrupted)
	s.ends(st, again.MessageID, agentik.EndCompleted)
	s.answersAgain("after the interrupting regenerate", "a")
}

type slowTurn struct {
	res  agentik.SendResult
	gate *llmtest.Gate
}

// slowSend sends text, whose answer pauses after its first word until the
// returned gate is released, and returns once the model is paused there.
func (s *scenario) slowSend(llm *llmtest.Server, text string) slowTurn {
	s.t.Helper()
	g := llmtest.NewGate()
	s.t.Cleanup(g.Release)
	llm.Enqueue(llmtest.Stream().Role().Content("slow ").Pause(g).Content(text).Finish("stop").Done())
	res, err := s.conv.Send(s.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}})
	if err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-g.Reached():
	case <-s.ctx.Done():
		s.t.Fatalf("the model never started answering %q", text)
	}
	return slowTurn{res: res, gate: g}
}

// ends waits on st for the end of the turn answering id and checks why it
// ended.
func (s *scenario) ends(st agentik.Stream[agentik.Event], id, reason string) {
	s.t.Helper()
	for {
		select {
		case ev, ok := <-st.C():
			if !ok {
				s.t.Fatalf("stream ended: %v", st.Err())
			}
			if ev.Type == agentik.EvEnd && ev.ReplyTo == id {
				if ev.Reason != reason {
					s.t.Fatalf("turn of %s ended %s, want %s", id, ev.Reason, reason)
				}
				return
			}
		case <-s.ctx.Done():
			s.t.Fatalf("no end of the turn of %s", id)
		}
	}
}

// answersAgain checks that the head path is message 1 (text) and a new
// answer to it that saw it alone.
func (s *scenario) answersAgain(what, text string) {
	s.t.Helper()
	path := s.messages("")
	if len(path) != 2 || path[0].Seq != 1 || path[1].Seq == 2 {
		s.t.Fatalf("%s: head path %v, want message 1 and a new answer", what, seqs(path))
	}
	if got := agentik.JoinText(path[1].Content); !strings.HasSuffix(got, "saw 1: "+text) {
		s.t.Fatalf("%s: answer %q, want one that saw %q alone", what, got, text)
	}
}

// answerTo is the text of the answer to the user message id.
func (s *scenario) answerTo(id string) string {
	s.t.Helper()
	for _, m := range s.messages(agentik.BranchAll) {
		if m.ReplyTo == id && m.Type == agentik.MsgAssistant {
			return agentik.JoinText(m.Content)
		}
	}
	s.t.Fatalf("no answer to %s", id)
	return ""
}

func seqs(msgs []agentik.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}
