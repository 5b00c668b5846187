package irc

import (
	"slices"
	"strings"
	"testing"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik/llmtest"
)

func params(ms []ircmsg.Message, cmd string) [][]string {
	var out [][]string
	for _, m := range ms {
		if m.Command == cmd {
			out = append(out, m.Params)
		}
	}
	return out
}

func TestRegistrationWelcomeISupportMOTDPingQuit(t *testing.T) {
	s := newStack(t, Options{ChathistoryMax: 50}, nil)
	c := s.dial()
	lines := c.register("alice", "")
	for _, want := range []string{rplWelcome, rplYourHost, rplCreated, rplMyInfo, rplISupport, rplMOTDStart, rplMOTD, rplEndOfMOTD} {
		if len(params(lines, want)) == 0 {
			t.Fatalf("no %s in %v", want, lines)
		}
	}
	if p := params(lines, rplWelcome)[0]; p[0] != "alice" {
		t.Fatalf("001 %v", p)
	}
	var isupport []string
	for _, p := range params(lines, rplISupport) {
		isupport = append(isupport, p[1:len(p)-1]...)
	}
	for _, want := range []string{"CHATHISTORY=50", "MSGREFTYPES=msgid,timestamp", "BOT=B", "CHANTYPES=#", "LINELEN=512", "UTF8ONLY", "CASEMAPPING=ascii"} {
		if !slices.Contains(isupport, want) {
			t.Fatalf("ISUPPORT lacks %s: %v", want, isupport)
		}
	}
	c.send("PING :abc 123")
	if m := c.next(); m.Command != "PONG" || m.Params[len(m.Params)-1] != "abc 123" {
		t.Fatalf("pong %v", m)
	}
	c.send("FROB x")
	if m := c.next(); m.Command != errUnknownCommand || m.Params[1] != "FROB" {
		t.Fatalf("unknown command: %v", m)
	}
	c.send("QUIT :bye")
	rest := c.waitClosed()
	if len(rest) == 0 || rest[len(rest)-1].Command != "ERROR" || !strings.HasPrefix(rest[len(rest)-1].Params[0], "Closing link") {
		t.Fatalf("quit: %v", rest)
	}
}

func TestCommandsBeforeRegistrationAreRefused(t *testing.T) {
	s := newStack(t, Options{}, nil)
	c := s.dial()
	c.send("JOIN #x")
	if m := c.next(); m.Command != errNotRegistered {
		t.Fatalf("%v", m)
	}
	c.send("NICK agentik") // the agent's nick
	if m := c.next(); m.Command != errNicknameInUse {
		t.Fatalf("agent nick: %v", m)
	}
	c.send("NICK 9lives")
	if m := c.next(); m.Command != errErroneusNickname {
		t.Fatalf("bad nick: %v", m)
	}
	c.register("bob", "")
	d := s.dial()
	d.send("NICK BOB") // nicks are case-insensitive (ascii)
	if m := d.next(); m.Command != errNicknameInUse {
		t.Fatalf("taken nick: %v", m)
	}
}

func TestCapNegotiation(t *testing.T) {
	s := newStack(t, Options{}, map[string]string{"alice": "tok-alice-1"})
	c := s.dial()
	c.send("CAP LS 302", "NICK alice", "USER alice 0 * :A")
	ls := c.next()
	if ls.Command != "CAP" || ls.Params[1] != "LS" {
		t.Fatalf("%v", ls)
	}
	offered := strings.Fields(ls.Params[len(ls.Params)-1])
	for _, want := range []string{"batch", "draft/chathistory", "echo-message", "labeled-response", "message-tags", "sasl=PLAIN", "server-time"} {
		if !slices.Contains(offered, want) {
			t.Fatalf("CAP LS lacks %s: %v", want, offered)
		}
	}
	// Registration waits for CAP END.
	c.send("CAP REQ :server-time bogus")
	if m := c.next(); m.Params[1] != "NAK" {
		t.Fatalf("want NAK, got %v", m)
	}
	c.send("CAP REQ :server-time message-tags")
	if m := c.next(); m.Params[1] != "ACK" || m.Params[2] != "server-time message-tags" {
		t.Fatalf("want ACK, got %v", m)
	}
	c.send("CAP LIST")
	if m := c.next(); m.Params[1] != "LIST" || !strings.Contains(m.Params[2], "message-tags") || strings.Contains(m.Params[2], "batch") {
		t.Fatalf("LIST %v", m)
	}
	c.send("CAP END")
	if m := c.next(); m.Command != rplWelcome {
		t.Fatalf("after CAP END: %v", m)
	}

	// An old client (CAP LS without 302) gets sasl without a value.
	d := s.dial()
	d.send("CAP LS")
	if m := d.next(); !slices.Contains(strings.Fields(m.Params[2]), "sasl") {
		t.Fatalf("%v", m)
	}
	// An open server does not offer sasl.
	o := newStack(t, Options{}, nil)
	e := o.dial()
	e.send("CAP LS 302")
	if m := e.next(); strings.Contains(m.Params[2], "sasl") {
		t.Fatalf("open server offers sasl: %v", m)
	}
}

func TestSASLPlain(t *testing.T) {
	s := newStack(t, Options{}, map[string]string{"alice": "tok-alice-1", "bob": "tok-bob-22"})
	s.llm.Enqueue(llmtest.Text("hi alice"))
	c := s.dial()
	if got := c.sasl("alice", "alice", "tok-alice-1"); got != rplSASLSuccess {
		t.Fatalf("sasl: %s", got)
	}
	c.send("CAP END")
	lines := c.until(is(rplEndOfMOTD))
	if lines[0].Command != rplWelcome {
		t.Fatalf("%v", lines)
	}
	c.join("#a")
	c.send("PRIVMSG #a :hello")
	if texts, _ := c.answer("#a", "hi alice"); len(texts) != 1 {
		t.Fatalf("%v", texts)
	}
	convs := s.conversations("alice")
	if len(convs) != 1 || convs[0].Title != "#a" {
		t.Fatalf("alice's conversations %+v", convs)
	}

	// A wrong token, and a right token with another principal's name, fail;
	// the client may still register but not act.
	d := s.dial()
	if got := d.sasl("mallory", "alice", "wrong-token"); got != errSASLFail {
		t.Fatalf("wrong token: %s", got)
	}
	d.send("AUTHENTICATE PLAIN")
	d.until(is("AUTHENTICATE", "+"))
	d.send("AUTHENTICATE " + b64("\x00alice\x00tok-bob-22"))
	if m := d.next(); m.Command != errSASLFail {
		t.Fatalf("bob's token as alice: %v", m)
	}
	d.send("CAP END")
	d.until(is(rplEndOfMOTD))
	if ls := d.join("#a"); ls[len(ls)-1].Command != errNeedReggedNick {
		t.Fatalf("unauthenticated join: %v", ls)
	}
	d.send("PRIVMSG agentik :hi")
	if m := d.next(); m.Command != errNeedReggedNick {
		t.Fatalf("unauthenticated privmsg: %v", m)
	}
	d.send("CHATHISTORY LATEST #a * 10")
	if m := d.next(); m.Command != "FAIL" || m.Params[1] != "INVALID_TARGET" {
		t.Fatalf("unauthenticated history: %v", m)
	}
	if convs := s.conversations(""); len(convs) != 0 {
		t.Fatalf("unauthenticated client created %+v", convs)
	}

	// Three failures end the connection.
	e := s.dial()
	e.sasl("eve", "eve", "nope-nope")
	for range 2 {
		e.send("AUTHENTICATE PLAIN")
		e.until(is("AUTHENTICATE", "+"))
		e.send("AUTHENTICATE " + b64("\x00eve\x00nope-nope"))
	}
	rest := e.waitClosed()
	if last := rest[len(rest)-1]; last.Command != "ERROR" {
		t.Fatalf("after 3 failures: %v", rest)
	}
}

func TestPASSFallback(t *testing.T) {
	s := newStack(t, Options{}, map[string]string{"alice": "tok-alice-1"})
	c := s.dial()
	lines := c.register("alice", "tok-alice-1")
	if p := params(lines, rplLoggedIn); len(p) != 1 || p[0][2] != "alice" {
		t.Fatalf("no 900 for PASS: %v", lines)
	}
	if ls := c.join("#a"); ls[len(ls)-1].Command != rplEndOfNames {
		t.Fatalf("join after PASS: %v", ls)
	}
	d := s.dial()
	d.register("al", "alice:tok-alice-1") // principal:token works too
	if ls := d.join("#b"); ls[len(ls)-1].Command != rplEndOfNames {
		t.Fatalf("join after PASS principal:token: %v", ls)
	}

	e := s.dial()
	e.send("PASS wrong-token", "NICK eve", "USER eve 0 * :E")
	rest := e.waitClosed()
	if len(rest) < 2 || rest[0].Command != errPasswdMismatch || rest[len(rest)-1].Command != "ERROR" {
		t.Fatalf("bad PASS: %v", rest)
	}
}
