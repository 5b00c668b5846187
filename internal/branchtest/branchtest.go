// Package branchtest is the scenario of SPEC §18 (branching) through an
// agentik.Agent: edit, regenerate, switch, fork, what the model sees, the
// event log across head moves and the refusals of bad input. The tests
// of the stores' packages run it through the native HTTP API's client on
// their own database (SQLite, PostgreSQL); only _test.go files import it.
package branchtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// Model answers every request with what it saw: "#n saw k: t" where n
// counts its answers, k the user and assistant messages of the request
// and t the last user message's text, so that a regenerated answer
// differs from the first and a test can count what the model was given.
type Model struct {
	mu   sync.Mutex
	n    int
	seen map[string][]string // by the last user text: the roles and texts of the last request
}

// Answer is the llmtest handler of m.
func (m *Model) Answer(r llmtest.Request) llmtest.Reply {
	var saw []string
	for _, msg := range r.Messages {
		if msg.Role == "user" || msg.Role == "assistant" {
			saw = append(saw, msg.Role+":"+msg.Text())
		}
	}
	m.mu.Lock()
	m.n++
	n := m.n
	if m.seen == nil {
		m.seen = map[string][]string{}
	}
	m.seen[r.LastUserText()] = saw
	m.mu.Unlock()
	return llmtest.Text(fmt.Sprintf("#%d saw %d: %s", n, len(saw), r.LastUserText()))
}

// Saw is what the model was given the last time it answered text.
func (m *Model) Saw(text string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[text]
}

// Run runs the scenario on agent, whose model is served by llm.
func Run(t *testing.T, agent agentik.Agent, llm *llmtest.Server) {
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

	// 1 a, 2 answer, 3 b, 4 answer.
	s.do(func() { s.send("a", nil) })
	s.do(func() { s.send("b", nil) })
	s.wantPath("one path", 1, 2, 3, 4)
	equal(t, "the model saw for b", m.Saw("b"), []string{"user:a", "assistant:#1 saw 1: a", "user:b"})

	// Edit b: 5 b2 after 2, answered by 6.
	s.do(func() { s.send("b2", ptr(2)) })
	s.wantPath("after the edit", 1, 2, 5, 6)
	equal(t, "the model saw for b2", m.Saw("b2"), []string{"user:a", "assistant:#1 saw 1: a", "user:b2"})
	all := s.messages(agentik.BranchAll)
	if len(all) != 6 {
		t.Fatalf("%d messages in the journal, want 6", len(all))
	}
	equal(t, "siblings of the edit", all[4].Siblings, []int64{3, 5})
	equal(t, "siblings of the edited", all[2].Siblings, []int64{3, 5})

	// Regenerate (the head path's last user message, 5): 7 after 5.
	first := s.text(6)
	s.do(func() { s.regenerate(0) })
	s.wantPath("after the regenerate", 1, 2, 5, 7)
	if again := s.text(7); again == first || !strings.HasSuffix(again, "saw 3: b2") {
		t.Fatalf("regenerated %q after %q: want another answer to the same 3 messages", again, first)
	}
	equal(t, "siblings of the new answer", s.messages("")[3].Siblings, []int64{6, 7})

	// Switch back to the first branch and go on there: 8 c, 9 answer.
	moved := s.setHead(4)
	if moved.From != 7 || moved.To != 4 {
		t.Fatalf("head_moved %d -> %d, want 7 -> 4", moved.From, moved.To)
	}
	s.wantPath("after the switch", 1, 2, 3, 4)
	s.do(func() { s.send("c", nil) })
	s.wantPath("on the first branch", 1, 2, 3, 4, 8, 9)
	equal(t, "the model saw for c", m.Saw("c"),
		[]string{"user:a", "assistant:#1 saw 1: a", "user:b", "assistant:#2 saw 3: b", "user:c"})

	// Regenerate an older message, off the head path's end: 10 after 2.
	s.do(func() { s.regenerate(1) })
	s.wantPath("after regenerating 1", 1, 10)
	equal(t, "the model saw for a again", m.Saw("a"), []string{"user:a"})

	// Fork at 4.
	fork, err := conv.Fork(ctx, agentik.ForkRequest{Seq: 4})
	if err != nil {
		t.Fatal(err)
	}
	if fork.ForkedFrom == nil || fork.ForkedFrom.ConversationID != conv.ID() || fork.ForkedFrom.Seq != 4 || fork.Head != 4 {
		t.Fatalf("fork = %+v, want forked from %s at 4 with head 4", fork, conv.ID())
	}
	fconv, err := agent.Conversation(ctx, fork.ID)
	if err != nil {
		t.Fatal(err)
	}
	fs := &scenario{t: t, ctx: ctx, conv: fconv, m: m}
	fs.wantPath("the fork", 1, 2, 3, 4)
	fs.do(func() { fs.send("d", nil) })
	equal(t, "the model saw for d in the fork", m.Saw("d"),
		[]string{"user:a", "assistant:#1 saw 1: a", "user:b", "assistant:#2 saw 3: b", "user:d"})

	s.checkLog()
	s.badInput(agent)
}

func ptr(n int64) *int64 { return &n }

type scenario struct {
	t    *testing.T
	ctx  context.Context
	conv agentik.Conversation
	m    *Model
	last []agentik.Event // the events of the last do
}

// do runs act and waits for the end of the turn it starts, on a live
// stream opened before.
func (s *scenario) do(act func()) {
	s.t.Helper()
	st, err := s.conv.Events(s.ctx, agentik.LiveOnly)
	if err != nil {
		s.t.Fatal(err)
	}
	defer st.Close()
	act()
	s.last = nil
	for {
		select {
		case ev, ok := <-st.C():
			if !ok {
				s.t.Fatalf("stream ended: %v", st.Err())
			}
			s.last = append(s.last, ev)
			if ev.Type == agentik.EvEnd {
				if ev.Reason != agentik.EndCompleted {
					s.t.Fatalf("turn ended %s", ev.Reason)
				}
				return
			}
		case <-s.ctx.Done():
			s.t.Fatal("no end of turn")
		}
	}
}

func (s *scenario) send(text string, parent *int64) {
	s.t.Helper()
	if _, err := s.conv.Send(s.ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)}, Parent: parent}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) regenerate(seq int64) {
	s.t.Helper()
	if _, err := s.conv.Regenerate(s.ctx, agentik.RegenerateRequest{Seq: seq}); err != nil {
		s.t.Fatal(err)
	}
}

// setHead moves the head and returns the head_moved event it made.
func (s *scenario) setHead(seq int64) agentik.Event {
	s.t.Helper()
	st, err := s.conv.Events(s.ctx, agentik.LiveOnly)
	if err != nil {
		s.t.Fatal(err)
	}
	defer st.Close()
	info, err := s.conv.SetHead(s.ctx, seq)
	if err != nil {
		s.t.Fatal(err)
	}
	if info.Head != seq {
		s.t.Fatalf("head %d after SetHead(%d)", info.Head, seq)
	}
	for {
		select {
		case ev := <-st.C():
			if ev.Type == agentik.EvHeadMoved {
				return ev
			}
		case <-s.ctx.Done():
			s.t.Fatal("no head_moved event")
		}
	}
}

func (s *scenario) messages(branch string) []agentik.Message {
	s.t.Helper()
	page, err := s.conv.Messages(s.ctx, agentik.MessagesRequest{Branch: branch, Limit: agentik.MaxMessagesLimit})
	if err != nil {
		s.t.Fatal(err)
	}
	return page.Messages
}

func (s *scenario) wantPath(what string, seqs ...int64) {
	s.t.Helper()
	msgs := s.messages("")
	got := make([]int64, len(msgs))
	for i, m := range msgs {
		got[i] = m.Seq
		if i > 0 && m.Parent != msgs[i-1].Seq {
			s.t.Fatalf("%s: message %d has parent %d, want %d", what, m.Seq, m.Parent, msgs[i-1].Seq)
		}
	}
	equal(s.t, what+": head path", got, seqs)
	info, err := s.conv.Info(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	if info.Head != seqs[len(seqs)-1] {
		s.t.Fatalf("%s: head %d, want %d", what, info.Head, seqs[len(seqs)-1])
	}
}

// text is the text of message seq.
func (s *scenario) text(seq int64) string {
	s.t.Helper()
	for _, m := range s.messages(agentik.BranchAll) {
		if m.Seq == seq {
			return agentik.JoinText(m.Content)
		}
	}
	s.t.Fatalf("no message %d", seq)
	return ""
}

// checkLog replays the event log from 0: strictly increasing cursors,
// every journal message once, and head_moved events whose last one ends
// on the head; a subscriber resuming mid-way gets exactly the rest.
func (s *scenario) checkLog() {
	s.t.Helper()
	evs := s.replay(0)
	var msgs, moves int
	var lastTo int64
	for i, ev := range evs {
		if i > 0 && ev.Cursor <= evs[i-1].Cursor {
			s.t.Fatalf("cursor %d after %d", ev.Cursor, evs[i-1].Cursor)
		}
		if ev.Message != nil {
			msgs++
			lastTo = ev.Message.Seq
		}
		if ev.Type == agentik.EvHeadMoved {
			moves++
			lastTo = ev.To
		}
	}
	if want := len(s.messages(agentik.BranchAll)); msgs != want {
		s.t.Fatalf("%d message events, want %d", msgs, want)
	}
	if moves < 4 {
		s.t.Fatalf("%d head_moved events, want at least 4", moves)
	}
	info, err := s.conv.Info(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	if lastTo != info.Head {
		s.t.Fatalf("the log ends on %d, the head is %d", lastTo, info.Head)
	}
	mid := evs[len(evs)/2].Cursor
	equal(s.t, "resumed from the middle", cursorsOf(s.replay(mid)), cursorsOf(evs[len(evs)/2+1:]))
}

// replay reads the durable events after cursor, up to the last one.
func (s *scenario) replay(after int64) []agentik.Event {
	s.t.Helper()
	page, err := s.conv.Messages(s.ctx, agentik.MessagesRequest{Limit: 1})
	if err != nil {
		s.t.Fatal(err)
	}
	last := page.Cursor
	st, err := s.conv.Events(s.ctx, after)
	if err != nil {
		s.t.Fatal(err)
	}
	defer st.Close()
	var out []agentik.Event
	for len(out) == 0 || out[len(out)-1].Cursor < last {
		select {
		case ev, ok := <-st.C():
			if !ok {
				s.t.Fatalf("stream ended: %v", st.Err())
			}
			if ev.Cursor > 0 {
				out = append(out, ev)
			}
		case <-s.ctx.Done():
			s.t.Fatal("replay did not reach the last cursor")
		}
	}
	return out
}

func cursorsOf(evs []agentik.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Cursor
	}
	return out
}

// badInput: each refusal has its code and changes nothing.
func (s *scenario) badInput(agent agentik.Agent) {
	s.t.Helper()
	before := s.replay(0)
	text := []agentik.Content{agentik.Text("x")}
	cases := []struct {
		what string
		code string
		err  func() error
	}{
		{"parent of no message", agentik.ENotFound, func() error {
			_, err := s.conv.Send(s.ctx, agentik.SendRequest{Content: text, Parent: ptr(999)})
			return err
		}},
		{"parent a user message", agentik.EInvalid, func() error {
			_, err := s.conv.Send(s.ctx, agentik.SendRequest{Content: text, Parent: ptr(1)})
			return err
		}},
		{"regenerate an answer", agentik.EInvalid, func() error {
			_, err := s.conv.Regenerate(s.ctx, agentik.RegenerateRequest{Seq: 2})
			return err
		}},
		{"regenerate no message", agentik.ENotFound, func() error {
			_, err := s.conv.Regenerate(s.ctx, agentik.RegenerateRequest{Seq: 999})
			return err
		}},
		{"head of no message", agentik.ENotFound, func() error {
			_, err := s.conv.SetHead(s.ctx, 999)
			return err
		}},
		{"head 0", agentik.EInvalid, func() error {
			_, err := s.conv.SetHead(s.ctx, 0)
			return err
		}},
		{"head -1", agentik.EInvalid, func() error {
			_, err := s.conv.SetHead(s.ctx, -1)
			return err
		}},
		{"regenerate seq -1", agentik.EInvalid, func() error {
			_, err := s.conv.Regenerate(s.ctx, agentik.RegenerateRequest{Seq: -1})
			return err
		}},
		{"fork at no message", agentik.ENotFound, func() error {
			_, err := s.conv.Fork(s.ctx, agentik.ForkRequest{Seq: 999})
			return err
		}},
	}
	for _, c := range cases {
		if err := c.err(); agentik.ErrorCode(err) != c.code {
			s.t.Errorf("%s: %v, want %s", c.what, err, c.code)
		}
	}
	after := s.replay(0)
	equal(s.t, "the log after bad input", cursorsOf(after), cursorsOf(before))
	list, err := agent.ListConversations(s.ctx, agentik.ListRequest{Limit: 500})
	if err != nil {
		s.t.Fatal(err)
	}
	if n := len(list.Conversations); n != 2 {
		s.t.Fatalf("%d conversations after bad input, want 2 (the conversation and its fork)", n)
	}
}

func equal[T any](t *testing.T, what string, got, want []T) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b T) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
