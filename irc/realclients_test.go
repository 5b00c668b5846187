package irc

// What real clients (WeeChat, irssi, irc-go's ircevent) tripped on, each
// driven here through the real interface: raw lines on a real listener.

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// isInterrupted matches the CTCP AGENTIK INTERRUPTED line.
func isInterrupted(m ircmsg.Message) bool {
	return m.Command == "PRIVMSG" && len(m.Params) == 2 && strings.HasPrefix(m.Params[1], "\x01AGENTIK INTERRUPTED")
}

func typingDone(m ircmsg.Message) bool { return m.Command == "TAGMSG" && tag(m, "+typing") == "done" }

// stopped is an open server whose model answers with replies, and a
// client with every capability in #s that said "talk", saw the answer's
// first line "partial line" and sent !stop.
func stopped(t *testing.T, replies ...llmtest.Reply) (*stack, *client) {
	t.Helper()
	s := newStack(t, Options{}, nil)
	s.llm.Enqueue(replies...)
	c := s.dial()
	c.register("alice", "", allCaps...)
	c.join("#s")
	c.send("PRIVMSG #s :talk")
	c.answer("#s", "partial line")
	c.send("PRIVMSG #s :!stop")
	return s, c
}

// The INTERRUPTED line has one msgid and one time, live and in every
// CHATHISTORY replay, so a client that de-duplicates by msgid shows it
// once; and its msgid is a selector CHATHISTORY resolves. A turn cut
// before any text (no journal message to replay) still gets an id that
// resolves, at the user message it answered.
func TestInterruptedLineHasAStableID(t *testing.T) {
	s, c := stopped(t, llmtest.Stream().Role().Content("partial line\n", "and more").Hang(), llmtest.Stream().Role().Hang())
	lines := c.until(isInterrupted)
	live := lines[len(lines)-1]
	if live.Params[1] != "\x01AGENTIK INTERRUPTED user\x01" || tag(live, vendor+"reason") != "user" {
		t.Fatalf("live %q %v", live.Params, live.AllTags())
	}
	// The echo of !stop is queued before the command acts: it comes
	// before the INTERRUPTED line it caused.
	if !slices.ContainsFunc(lines, is("PRIVMSG", "#s", "!stop")) {
		t.Fatalf("INTERRUPTED before the echo of !stop: %v", lines)
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
		if replayed.Params[1] != live.Params[1] || tag(*replayed, vendor+"reason") != "user" {
			t.Fatalf("replay %d: %q %v, live %q (the reason is lost)", i, replayed.Params, replayed.AllTags(), live.Params)
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
	lines = append(lines, c.until(typingDone)...)
	if !slices.ContainsFunc(lines, is("PRIVMSG", "#s", "!stop")) {
		c.until(is("PRIVMSG", "#s", "!stop"))
	}
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
	if len(got) != 1 || got[0][0] != "alicia" || got[0][1] != "alicia!al@agentik/user" || got[0][2] != "alice" {
		t.Fatalf("900 after NICK: %q", got)
	}
}

// laterActivity is an agent whose conversations had activity an hour after
// their creation, so that RPL_TOPICWHOTIME can tell the two times apart
// without a test that waits.
type laterActivity struct{ agentik.Agent }

func (a laterActivity) Conversation(ctx context.Context, id string) (agentik.Conversation, error) {
	conv, err := a.Agent.Conversation(ctx, id)
	if err != nil {
		return nil, err
	}
	return laterConv{conv}, nil
}

type laterConv struct{ agentik.Conversation }

func (c laterConv) Info(ctx context.Context) (agentik.ConversationInfo, error) {
	info, err := c.Conversation.Info(ctx)
	info.UpdatedAt = agentik.TimeOf(info.UpdatedAt.Add(time.Hour))
	return info, err
}

// topicWhoTime returns the params of the 333 among lines (nil if none).
func topicWhoTime(t *testing.T, lines []ircmsg.Message) []string {
	t.Helper()
	got := params(lines, rplTopicWhoTime)
	if len(got) != 1 {
		t.Fatalf("want one 333, got %q", got)
	}
	return got[0]
}

// within reports whether the unix time s lies in [from, to] (seconds).
func within(s string, from, to time.Time) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && from.Unix() <= n && n <= to.Unix()
}

// RPL_TOPICWHOTIME (333) names who set the topic — the client that renamed
// the conversation, or the agent for a title it was created with or one
// set elsewhere — with a full mask, and when: the creation for a title the
// conversation was created with, the rename for a later one; never the
// time of the last message. A TOPIC relayed to the principal's other
// clients comes from the same setter.
func TestTopicWhoTimeNamesTheSetterAndTheTimeItWasSet(t *testing.T) {
	eng, llm := newEngine(t, "agentik")
	s := newStackFor(t, eng, llm, Options{Agents: []Agent{{ID: "agentik", Agent: laterActivity{eng}}}}, twoUsers, nil)
	a := s.dial()
	a.register("alice", "tok-alice-1")
	joined := a.join("#t")
	info := s.conversations("alice")[0]
	if got := topicWhoTime(t, joined); got[2] != "agentik!agentik@agentik" || got[3] != strconv.FormatInt(info.CreatedAt.Unix(), 10) {
		t.Fatalf("333 of a new channel: %q, created %d", got, info.CreatedAt.Unix())
	}
	a2 := s.dial()
	a2.register("alice2", "tok-alice-1")
	a2.join("#t")
	a.until(is("JOIN"))

	before := time.Now()
	a.send("TOPIC #t :Planning the trip")
	a.until(is("TOPIC"))
	after := time.Now()
	relayed := a2.until(is("TOPIC"))
	if m := relayed[len(relayed)-1]; m.Source != "alice!alice@agentik/user" || m.Params[1] != "Planning the trip" {
		t.Fatalf("TOPIC relayed to alice2: %v", m)
	}
	for _, c := range []*client{a, a2} {
		c.send("TOPIC #t")
		got := topicWhoTime(t, c.until(is(rplTopicWhoTime)))
		if got[2] != "alice!alice@agentik/user" || !within(got[3], before, after) {
			t.Fatalf("333 after alice's TOPIC: %q", got)
		}
	}

	before = time.Now()
	if _, err := s.eng.RenameConversation(agentik.WithPrincipal(testCtx(t), "alice"), info.ID, "Renamed on the web"); err != nil {
		t.Fatal(err)
	}
	after = time.Now()
	a.until(is("TOPIC"))
	a2.until(is("TOPIC"))
	a3 := s.dial()
	a3.register("alice3", "tok-alice-1")
	got := topicWhoTime(t, a3.join("#t"))
	if got[2] != "agentik!agentik@agentik" || !within(got[3], before, after) {
		t.Fatalf("333 after a rename on the web: %q", got)
	}
}

// listed returns the channel → topic pairs of a LIST.
func listed(c *client) map[string]string {
	c.t.Helper()
	c.send("LIST")
	out := map[string]string{}
	for _, p := range params(c.until(is(rplListEnd)), rplList) {
		out[p[1]] = p[3]
	}
	return out
}

// A named channel keeps its name when its conversation is renamed: LIST
// and CHATHISTORY TARGETS show it as #<name> (which JOIN reaches), not as
// #<conversation-id> — for the client that left it and for another client
// of the principal that never joined it.
func TestRenamedNamedChannelIsListedUnderItsName(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	a := s.dial()
	a.register("alice", "tok-alice-1", allCaps...)
	a.join("#trip")
	a.send("TOPIC #trip :Planning the trip")
	a.until(is("TOPIC"))
	a.send("PART #trip")
	a.until(is("PART"))
	if got := listed(a); len(got) != 1 || got["#trip"] != "Planning the trip" {
		t.Fatalf("LIST after a rename: %q", got)
	}
	a2 := s.dial()
	a2.register("alice2", "tok-alice-1", allCaps...)
	if got := listed(a2); len(got) != 1 || got["#trip"] != "Planning the trip" {
		t.Fatalf("LIST of another client: %q", got)
	}
	a2.send("CHATHISTORY TARGETS timestamp=2000-01-01T00:00:00.000Z timestamp=2100-01-01T00:00:00.000Z 10")
	a2.until(is("BATCH"))
	targets := a2.until(is("BATCH"))
	if got := params(targets, "CHATHISTORY"); len(got) != 1 || got[0][1] != "#trip" {
		t.Fatalf("TARGETS %q", got)
	}
	// The name joins the same conversation, whose topic is the new title.
	if got := params(a2.join("#trip"), rplTopic); len(got) != 1 || got[0][2] != "Planning the trip" {
		t.Fatalf("JOIN #trip: %q", got)
	}
}

// sourceOf returns the source of the first PRIVMSG with text among lines.
func sourceOf(t *testing.T, lines []ircmsg.Message, text string) string {
	t.Helper()
	for _, m := range lines {
		if m.Command == "PRIVMSG" && m.Params[len(m.Params)-1] == text {
			return m.Source
		}
	}
	t.Fatalf("no PRIVMSG %q in %v", text, lines)
	return ""
}

// A nick has one hostmask on every line: a client's message comes from
// the mask its JOIN came from, live (echoed to itself, relayed to the
// principal's other clients) and in every CHATHISTORY replay — also after
// the client changed its nick (history shows who said it then, as ergo
// does).
func TestSameNickSameHostmaskLiveAndInHistory(t *testing.T) {
	s := newStack(t, Options{}, twoUsers)
	s.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hi") })
	a2 := s.dial()
	a2.register("alice2", "tok-alice-1", allCaps...)
	a2.join("#h")
	a := s.dial()
	a.register("alice", "tok-alice-1", allCaps...)
	a.join("#h")
	joins := a2.until(is("JOIN"))
	mask := joins[len(joins)-1].Source
	if mask != "alice!alice@agentik/user" {
		t.Fatalf("JOIN from %s", mask)
	}
	a.send("PRIVMSG #h :hello")
	if got := sourceOf(t, a.until(is("PRIVMSG", "#h", "hello")), "hello"); got != mask {
		t.Fatalf("echo from %s, JOIN from %s", got, mask)
	}
	if got := sourceOf(t, a2.until(is("PRIVMSG", "#h", "hello")), "hello"); got != mask {
		t.Fatalf("relayed from %s, JOIN from %s", got, mask)
	}
	a.until(typingDone)
	a2.until(typingDone)
	a.send("NICK alicia")
	a.until(is("NICK"))
	a2.until(is("NICK"))
	for _, c := range []*client{a, a2} {
		_, lines, fail := history(t, c, "CHATHISTORY LATEST #h * 10")
		if fail != nil {
			t.Fatal(fail)
		}
		if got := sourceOf(t, lines, "hello"); got != mask {
			t.Fatalf("replayed from %s, live from %s", got, mask)
		}
	}
	// The mask stored with the message, which every reader of the journal
	// sees, carries no client address.
	ctx := agentik.WithPrincipal(testCtx(t), "alice")
	conv, err := s.eng.Conversation(ctx, s.conversations("alice")[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if b, _ := json.Marshal(m); strings.Contains(string(b), "127.0.0.1") {
			t.Fatalf("the journal holds the client's address: %s", b)
		}
	}
}

// The echo of a !command (!stop, !approve, !deny) is not a stored message,
// but its msgid is one CHATHISTORY resolves: the last stored message
// before it, so that a client paging from the last line it saw (often
// that echo) gets what followed.
func TestCommandEchoMsgidResolves(t *testing.T) {
	_, c := stopped(t, llmtest.Stream().Role().Content("partial line\n").Hang())
	echo := c.until(is("PRIVMSG", "#s", "!stop"))
	e := echo[len(echo)-1]
	if tag(e, "msgid") == "" || tag(e, "time") == "" {
		t.Fatalf("echo %v", e)
	}
	c.until(isInterrupted)
	c.until(typingDone)
	got, _, fail := history(t, c, "CHATHISTORY AFTER #s msgid="+tag(e, "msgid")+" 10")
	if fail != nil {
		t.Fatalf("the echo's msgid does not resolve: %v", fail)
	}
	// The echo came after the user message: what follows it is the cut
	// answer and its INTERRUPTED line.
	if len(got) != 2 || got[0] != "partial line" || !strings.HasPrefix(got[1], "\x01AGENTIK INTERRUPTED") {
		t.Fatalf("after the echo: %q", got)
	}
}
