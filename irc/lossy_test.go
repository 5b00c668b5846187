package irc

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
)

// A follower whose subscriber lost deltas in the middle of an answer (the
// bus had no room for them) still sends every line of it, in order, once:
// the lines before the gap live, the rest from the stored message.
func TestLostDeltasLeaveNoGap(t *testing.T) {
	s := newStackWith(t, Options{}, nil, nil, stacktest.LoseDeltas)
	pieces := make([]string, 40)
	for i := range pieces {
		pieces[i] = "line " + strconv.Itoa(i+1) + "\n"
	}
	pieces[39] = "line 40"
	s.llm.Enqueue(llmtest.Stream().Role().Content(pieces...).Finish("stop").Done())
	c := s.dial()
	c.register("alice", "", allCaps...)
	c.join("#lossy")
	c.send("PRIVMSG #lossy :count")
	texts, _ := c.answer("#lossy", "line 40")
	if got, want := strings.Join(texts, "\n"), strings.Join(pieces, ""); got != want {
		t.Fatalf("lines %q\nwant %q", texts, strings.Split(want, "\n"))
	}
}

// An answer cut while its follower had lost deltas is sent whole from the
// stored message (the lines before the gap live, the rest after it), and
// its INTERRUPTED line carries the same msgid, time and reason as in every
// CHATHISTORY replay, so a client de-duplicates it.
func TestInterruptedAfterLostDeltasHasTheStableID(t *testing.T) {
	s := newStackWith(t, Options{}, nil, nil, stacktest.LoseDeltas)
	pieces := make([]string, 20)
	for i := range pieces {
		pieces[i] = "part " + strconv.Itoa(i+1) + "\n"
	}
	s.llm.Enqueue(llmtest.Stream().Role().Content(pieces...).Hang())
	c := s.dial()
	c.register("alice", "", allCaps...)
	c.join("#cut")
	c.send("PRIVMSG #cut :talk")
	// The first delta always fits in what the subscriber holds; which of
	// the next ones are lost depends on how fast the follower took the
	// events before it.
	texts, _ := c.answer("#cut", "part 1")
	c.send("PRIVMSG #cut :!stop")
	lines := c.until(isInterrupted)
	live := lines[len(lines)-1]
	for _, m := range lines {
		if m.Command == "PRIVMSG" && m.Nick() == "agentik" && !strings.HasPrefix(m.Params[1], "\x01") {
			texts = append(texts, m.Params[1])
		}
	}
	if got := strings.Join(texts, "\n"); got != strings.TrimSuffix(strings.Join(pieces, ""), "\n") {
		t.Fatalf("lines %q", texts)
	}
	if live.Params[1] != "\x01AGENTIK INTERRUPTED user\x01" || tag(live, vendor+"reason") != "user" || tag(live, "msgid") == "" {
		t.Fatalf("live %q %v", live.Params, live.AllTags())
	}
	c.until(typingDone)
	s.waitIdle(s.conversations("")[0].ID, "")
	_, got, fail := history(t, c, "CHATHISTORY LATEST #cut * 10")
	if fail != nil {
		t.Fatal(fail)
	}
	var replayed *ircmsg.Message
	for k := range got {
		if isInterrupted(got[k]) {
			replayed = &got[k]
		}
	}
	if replayed == nil || tag(*replayed, "msgid") != tag(live, "msgid") || tag(*replayed, "time") != tag(live, "time") ||
		tag(*replayed, vendor+"reason") != "user" {
		t.Fatalf("replayed %v, live %v", replayed, live.AllTags())
	}
}
