package irc

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// histStack is a stack with a known journal in alice's channel #h: five
// exchanges, "q1".."q5" answered "a1".."a5" (seq 1..10).
func histStack(t *testing.T, opts Options) (*stack, *client, []agentik.Message) {
	t.Helper()
	s := newStack(t, opts, twoUsers)
	s.llm.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("a" + strings.TrimPrefix(r.LastUserText(), "q"))
	})
	c := s.dial()
	c.register("alice", "tok-alice-1", allCaps...)
	c.join("#h")
	for i := 1; i <= 5; i++ {
		c.send(fmt.Sprintf("PRIVMSG #h :q%d", i))
		c.answer("#h", fmt.Sprintf("a%d", i))
		c.until(is("TAGMSG")) // typing done: the turn is over
	}
	id := s.conversations("alice")[0].ID
	s.waitIdle(id, "alice")
	j := s.journal(id, "alice")
	if len(j) != 10 {
		t.Fatalf("journal %d messages", len(j))
	}
	return s, c, j
}

// history sends a CHATHISTORY command and returns the texts of the batch
// it answers with (checking the batch's shape), or the FAIL line.
func history(t *testing.T, c *client, cmd string) ([]string, []ircmsg.Message, *ircmsg.Message) {
	t.Helper()
	c.send(cmd)
	first := c.next()
	if first.Command == "FAIL" {
		return nil, nil, &first
	}
	if first.Command != "BATCH" || !strings.HasPrefix(first.Params[0], "+") || first.Params[1] != "chathistory" {
		t.Fatalf("%s: want a chathistory batch, got %v", cmd, first)
	}
	ref := first.Params[0][1:]
	var texts []string
	var lines []ircmsg.Message
	for {
		m := c.next()
		if m.Command == "BATCH" && m.Params[0] == "-"+ref {
			return texts, lines, nil
		}
		if tag(m, "batch") != ref || tag(m, "msgid") == "" || tag(m, "time") == "" {
			t.Fatalf("%s: line outside the batch or without msgid/time: %v", cmd, m)
		}
		lines = append(lines, m)
		texts = append(texts, m.Params[1])
	}
}

func texts(ms []agentik.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, agentik.JoinText(m.Content))
	}
	return out
}

func TestChathistorySubcommands(t *testing.T) {
	s, c, j := histStack(t, Options{})
	_ = s
	id := func(seq int) string { return j[seq-1].ID }
	ts := func(seq int) string { return "timestamp=" + tagTime(j[seq-1].Date.Time) }
	seqs := func(from, to int) []string { return texts(j[from-1 : to]) }
	// Oracles for timestamp selectors, from the journal itself (messages
	// may share a millisecond).
	before := func(at time.Time, n int) []string {
		var out []agentik.Message
		for _, m := range j {
			if m.Date.Before(at) {
				out = append(out, m)
			}
		}
		return texts(out[max(0, len(out)-n):])
	}
	after := func(at time.Time, n int) []string {
		var out []agentik.Message
		for _, m := range j {
			if m.Date.After(at) {
				out = append(out, m)
			}
		}
		return texts(out[:min(n, len(out))])
	}
	cases := []struct {
		cmd  string
		want []string
	}{
		{"CHATHISTORY LATEST #h * 4", seqs(7, 10)},
		{"CHATHISTORY LATEST #H * 0", seqs(1, 10)}, // 0: the maximum; names fold
		{"CHATHISTORY LATEST #h msgid=" + id(6) + " 10", seqs(7, 10)},
		{"CHATHISTORY LATEST #h msgid=" + id(6) + " 2", seqs(9, 10)},
		{"CHATHISTORY BEFORE #h msgid=" + id(5) + " 2", seqs(3, 4)},
		{"CHATHISTORY BEFORE #h msgid=" + id(1) + " 2", []string{}},
		{"CHATHISTORY AFTER #h msgid=" + id(5) + " 3", seqs(6, 8)},
		{"CHATHISTORY AFTER #h msgid=" + id(5) + "~1 3", seqs(6, 8)}, // a line's msgid
		{"CHATHISTORY AFTER #h msgid=" + id(10) + " 3", []string{}},
		{"CHATHISTORY AROUND #h msgid=" + id(5) + " 4", seqs(3, 6)},
		{"CHATHISTORY AROUND #h msgid=" + id(1) + " 3", seqs(1, 3)},
		{"CHATHISTORY BETWEEN #h msgid=" + id(2) + " msgid=" + id(6) + " 10", seqs(3, 5)},
		{"CHATHISTORY BETWEEN #h msgid=" + id(2) + " msgid=" + id(6) + " 2", seqs(3, 4)},
		{"CHATHISTORY BETWEEN #h msgid=" + id(6) + " msgid=" + id(2) + " 2", seqs(4, 5)},
		{"CHATHISTORY BETWEEN #h msgid=" + id(3) + " msgid=" + id(3) + " 5", []string{}},
		{"CHATHISTORY BEFORE #h " + ts(5) + " 3", before(j[4].Date.Time, 3)},
		{"CHATHISTORY AFTER #h " + ts(5) + " 3", after(j[4].Date.Time, 3)},
		{"CHATHISTORY AFTER #h timestamp=2000-01-01T00:00:00.000Z 2", seqs(1, 2)},
		{"CHATHISTORY BEFORE #h timestamp=2100-01-01T00:00:00.000Z 2", seqs(9, 10)},
		{"CHATHISTORY BETWEEN #h timestamp=2000-01-01T00:00:00.000Z timestamp=2100-01-01T00:00:00.000Z 3", seqs(1, 3)},
		{"CHATHISTORY BETWEEN #h timestamp=2100-01-01T00:00:00.000Z timestamp=2000-01-01T00:00:00.000Z 3", seqs(8, 10)},
		{"CHATHISTORY LATEST agentik * 5", []string{}}, // no direct conversation yet
	}
	for _, tc := range cases {
		got, lines, fail := history(t, c, tc.cmd)
		if fail != nil {
			t.Fatalf("%s: %v", tc.cmd, fail)
		}
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s:\n got %q\nwant %q", tc.cmd, got, tc.want)
		}
		for _, l := range lines {
			want := "agentik"
			if strings.HasPrefix(l.Params[1], "q") {
				want = "alice"
			}
			if l.Nick() != want {
				t.Fatalf("%s: %v from %s", tc.cmd, l.Params, l.Nick())
			}
		}
	}
	// The msgid and time of history lines are the journal's.
	_, lines, _ := history(t, c, "CHATHISTORY LATEST #h * 2")
	if tag(lines[1], "msgid") != j[9].ID || tag(lines[1], "time") != tagTime(j[9].Date.Time) {
		t.Fatalf("%v vs %+v", lines[1].AllTags(), j[9])
	}
}

func TestChathistoryErrorsAndLimits(t *testing.T) {
	s, c, _ := histStack(t, Options{ChathistoryMax: 3})
	got, _, _ := history(t, c, "CHATHISTORY LATEST #h * 100")
	if !slices.Equal(got, []string{"a4", "q5", "a5"}) {
		t.Fatalf("limit not clamped to 3: %q", got)
	}
	fails := []struct{ cmd, code string }{
		{"CHATHISTORY", "INVALID_PARAMS"},
		{"CHATHISTORY FROB #h * 1", "INVALID_PARAMS"},
		{"CHATHISTORY LATEST #h *", "INVALID_PARAMS"},
		{"CHATHISTORY LATEST #h * 1 2", "INVALID_PARAMS"},
		{"CHATHISTORY LATEST #h * x", "INVALID_PARAMS"},
		{"CHATHISTORY LATEST #h * -1", "INVALID_PARAMS"},
		{"CHATHISTORY BEFORE #h * 1", "INVALID_PARAMS"},
		{"CHATHISTORY BEFORE #h timestamp=yesterday 1", "INVALID_PARAMS"},
		{"CHATHISTORY BEFORE #h seq=3 1", "INVALID_MSGREFTYPE"},
		{"CHATHISTORY BEFORE #h msgid=" + agentik.NewID() + " 1", "MESSAGE_ERROR"},
		{"CHATHISTORY BEFORE #h msgid=not-an-id 1", "MESSAGE_ERROR"},
		{"CHATHISTORY LATEST #nosuch * 1", "INVALID_TARGET"},
		{"CHATHISTORY LATEST nobody * 1", "INVALID_TARGET"},
		{"CHATHISTORY TARGETS timestamp=2000-01-01T00:00:00Z bogus 1", "INVALID_PARAMS"},
	}
	for _, f := range fails {
		_, _, fail := history(t, c, f.cmd)
		if fail == nil || fail.Params[0] != "CHATHISTORY" || fail.Params[1] != f.code {
			t.Fatalf("%s: want FAIL %s, got %v", f.cmd, f.code, fail)
		}
	}
	// Another principal's channel of the same name is empty, and alice's
	// conversation by id is not bob's target.
	b := s.dial()
	b.register("bob", "tok-bob-22", allCaps...)
	b.join("#h")
	if got, _, fail := history(t, b, "CHATHISTORY LATEST #h * 10"); fail != nil || len(got) != 0 {
		t.Fatalf("bob's #h: %q %v", got, fail)
	}
	aliceID := s.conversations("alice")[0].ID
	if _, _, fail := history(t, b, "CHATHISTORY LATEST #"+aliceID+" * 10"); fail == nil || fail.Params[1] != "INVALID_TARGET" {
		t.Fatalf("bob read alice's conversation: %v", fail)
	}
	// A labeled request gets the label on the batch.
	c.send("@label=hx CHATHISTORY LATEST #h * 1")
	if m := c.next(); m.Command != "BATCH" || tag(m, "label") != "hx" {
		t.Fatalf("%v", m)
	}
	c.until(is("BATCH"))
}

func TestChathistoryTargetsAndDirect(t *testing.T) {
	s, c, _ := histStack(t, Options{})
	s.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("direct answer") })
	c.send("PRIVMSG agentik :direct question")
	c.answer("alice", "direct answer")
	c.until(is("TAGMSG")) // typing done
	s.waitIdle(directID("agentik", "alice"), "alice")
	got, lines, fail := history(t, c, "CHATHISTORY LATEST agentik * 10")
	if fail != nil || !slices.Equal(got, []string{"direct question", "direct answer"}) {
		t.Fatalf("%q %v", got, fail)
	}
	if lines[0].Nick() != "alice" || lines[0].Params[0] != "agentik" || lines[1].Nick() != "agentik" || lines[1].Params[0] != "alice" {
		t.Fatalf("direct lines %v", lines)
	}
	c.send("CHATHISTORY TARGETS timestamp=2000-01-01T00:00:00.000Z timestamp=2100-01-01T00:00:00.000Z 10")
	start := c.next()
	if start.Command != "BATCH" || start.Params[1] != "draft/chathistory-targets" {
		t.Fatalf("%v", start)
	}
	var names []string
	for m := c.next(); m.Command != "BATCH"; m = c.next() {
		if m.Command != "CHATHISTORY" || m.Params[0] != "TARGETS" {
			t.Fatalf("%v", m)
		}
		names = append(names, m.Params[1])
	}
	if !slices.Equal(names, []string{"#h", "agentik"}) {
		t.Fatalf("targets %v", names)
	}
}

// A client without draft/chathistory gets the last lines on JOIN, in a
// chathistory batch when it takes batches, dated in the text when it has
// no server-time.
func TestHistoryLinesOnJoin(t *testing.T) {
	s, c, j := histStack(t, Options{HistoryLines: 3})
	c.send("PART #h")
	c.next()
	plain := s.dial()
	plain.register("alice2", "tok-alice-1")
	lines := plain.join("#h")
	lines = append(lines, plain.until(is("PRIVMSG", "#h", "["+j[9].Date.UTC().Format("2006-01-02 15:04")+"] a5"))...)
	var got []string
	for _, m := range lines {
		if m.Command == "PRIVMSG" {
			got = append(got, m.Params[1][len("[2006-01-02 15:04] "):])
		}
		if m.Command == "BATCH" {
			t.Fatalf("batch sent to a client without batch: %v", m)
		}
	}
	if !slices.Equal(got, []string{"a4", "q5", "a5"}) {
		t.Fatalf("%q", got)
	}
	tagged := s.dial()
	tagged.register("alice3", "tok-alice-1", "batch", "server-time", "message-tags")
	tagged.join("#h")
	b := tagged.next()
	if b.Command != "BATCH" || b.Params[1] != "chathistory" {
		t.Fatalf("%v", b)
	}
	got = nil
	for m := tagged.next(); m.Command != "BATCH"; m = tagged.next() {
		got = append(got, m.Params[1])
	}
	if !slices.Equal(got, []string{"a4", "q5", "a5"}) {
		t.Fatalf("%q", got)
	}
	// With draft/chathistory nothing is replayed: the JOIN ends with NAMES.
	c.join("#h")
	c.send("PING :after")
	if m := c.next(); m.Command != "PONG" {
		t.Fatalf("replayed to a chathistory client: %v", m)
	}
}
