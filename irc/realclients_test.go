package irc

// What real clients (WeeChat, irssi, irc-go's ircevent) tripped on, each
// driven here through the real interface: raw lines on a real listener.

import (
	"strings"
	"testing"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik/llmtest"
)

// isInterrupted matches the CTCP AGENTIK INTERRUPTED line.
func isInterrupted(m ircmsg.Message) bool {
	return m.Command == "PRIVMSG" && len(m.Params) == 2 && strings.HasPrefix(m.Params[1], "\x01AGENTIK INTERRUPTED")
}

func typingDone(m ircmsg.Message) bool { return m.Command == "TAGMSG" && tag(m, "+typing") == "done" }

// The INTERRUPTED line has one msgid and one time, live and in every
// CHATHISTORY replay, so a client that de-duplicates by msgid shows it
// once; and its msgid is a selector CHATHISTORY resolves. A turn cut
// before any text (no journal message to replay) still gets an id that
// resolves, at the user message it answered.
func TestInterruptedLineHasAStableID(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(
		llmtest.Stream().Role().Content("partial line\n", "and more").Hang(),
		llmtest.Stream().Role().Hang(),
	)
	c := s.dial()
	c.register("alice", "", allCaps...)
	c.join("#s")
	c.send("PRIVMSG #s :talk")
	c.answer("#s", "partial line")
	c.send("PRIVMSG #s :!stop")
	lines := c.until(isInterrupted)
	live := lines[len(lines)-1]
	if live.Params[1] != "\x01AGENTIK INTERRUPTED user\x01" || tag(live, vendor+"reason") != "user" {
		t.Fatalf("live %q %v", live.Params, live.AllTags())
	}
	c.until(typingDone)
	id := s.conversations("")[0].ID
	s.waitIdle(id, "")
	for i := range 2 {
		_, got, fail := history(t, c, "CHATHISTORY LATEST #s * 10")
		if fail != nil {
			t.Fatalf("replay %d: %v", i, fail)
		}
		var replayed *ircmsg.Message
		for k := range got {
			if isInterrupted(got[k]) {
				replayed = &got[k]
			}
		}
		if replayed == nil {
			t.Fatalf("replay %d has no INTERRUPTED line", i)
		}
		if tag(*replayed, "msgid") != tag(live, "msgid") || tag(*replayed, "time") != tag(live, "time") {
			t.Fatalf("replay %d: msgid %s time %s, live msgid %s time %s", i,
				tag(*replayed, "msgid"), tag(*replayed, "time"), tag(live, "msgid"), tag(live, "time"))
		}
	}
	if _, _, fail := history(t, c, "CHATHISTORY AFTER #s msgid="+tag(live, "msgid")+" 10"); fail != nil {
		t.Fatalf("the INTERRUPTED line's msgid does not resolve: %v", fail)
	}

	// Cut before any text: nothing is stored but the user message.
	c.send("PRIVMSG #s :again")
	echo := c.until(is("PRIVMSG", "#s", "again"))
	c.until(func(m ircmsg.Message) bool { return m.Command == "TAGMSG" && tag(m, "+typing") == "active" })
	c.send("PRIVMSG #s :!stop")
	lines = c.until(isInterrupted)
	cut := lines[len(lines)-1]
	c.until(typingDone)
	if tag(cut, "msgid") == tag(live, "msgid") || !strings.HasPrefix(tag(cut, "msgid"), tag(echo[len(echo)-1], "msgid")) {
		t.Fatalf("msgid %s of a turn cut before any text, user message %s", tag(cut, "msgid"), tag(echo[len(echo)-1], "msgid"))
	}
	got, _, fail := history(t, c, "CHATHISTORY AFTER #s msgid="+tag(cut, "msgid")+" 10")
	if fail != nil || len(got) != 0 {
		t.Fatalf("after the cut turn: %q %v", got, fail)
	}
}

// RPL_LOGGEDIN (900) is "<nick> <nick>!<ident>@<host> <account> :…": a
// client that logs in with SASL before it sends NICK (irc-go's ircevent,
// WeeChat) has no nick yet, so both are "*", as ergo sends them; once it
// has one, the mask is its own.
func TestLoggedInBeforeNickNamesNoEmptyNick(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	c := s.dial()
	c.send("CAP LS 302")
	c.until(is("CAP", "", "LS"))
	c.send("CAP REQ :sasl", "AUTHENTICATE PLAIN")
	c.until(is("AUTHENTICATE", "+"))
	c.send("AUTHENTICATE " + b64("\x00alice\x00tok-alice-1"))
	in := c.until(is(rplSASLSuccess))
	got := params(in, rplLoggedIn)
	if len(got) != 1 || strings.Join(got[0], " ") != "* * alice You are now logged in as alice" {
		t.Fatalf("900 before NICK: %q", got)
	}
	c.send("NICK alice", "USER alice 0 * :Alice", "CAP END")
	c.until(is(rplEndOfMOTD))

	// After NICK, before registration: its nick and mask.
	d := s.dial()
	d.send("CAP LS 302", "NICK alicia", "USER al 0 * :Alice")
	d.until(is("CAP", "", "LS"))
	d.send("CAP REQ :sasl", "AUTHENTICATE PLAIN")
	d.until(is("AUTHENTICATE", "+"))
	d.send("AUTHENTICATE " + b64("\x00alice\x00tok-alice-1"))
	got = params(d.until(is(rplSASLSuccess)), rplLoggedIn)
	if len(got) != 1 || got[0][0] != "alicia" || got[0][1] != "alicia!al@127.0.0.1" || got[0][2] != "alice" {
		t.Fatalf("900 after NICK: %q", got)
	}
}
