package irc

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// Flood control: past the burst, lines wait for the rate — none is dropped,
// the client is not disconnected, and the last reply cannot come before
// the rate allows it.
func TestFloodControlDelaysLinesPastTheBurst(t *testing.T) {
	s := newStack(t, Options{FloodBurst: 2, FloodRate: 20}, nil)
	c := s.dial()
	c.register("alice", "")
	const n = 22
	var burst strings.Builder
	for i := range n {
		fmt.Fprintf(&burst, "USERHOST alice%d\r\n", i)
	}
	start := time.Now()
	if _, err := c.nc.Write([]byte(burst.String())); err != nil {
		t.Fatal(err)
	}
	for range n {
		if m := c.next(); m.Command != rplUserHost {
			t.Fatalf("%v", m)
		}
	}
	// 2 at once, then 20 at 20 per second: at least one second.
	if el := time.Since(start); el < 950*time.Millisecond {
		t.Fatalf("%d lines answered in %v: not throttled", n, el)
	}
	c.send("PING :still here")
	if m := c.next(); m.Command != "PONG" {
		t.Fatalf("%v", m)
	}
}

// smallBuffer makes the server's socket send buffer of the first
// connection small, so that this client, when it stops reading, fills its
// send queue quickly.
type smallBuffer struct {
	net.Listener
	n int
}

func (l *smallBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && l.n == 0 {
		tc.SetWriteBuffer(4096)
	}
	l.n++
	return c, err
}

// rawRegister registers on nc, reading the replies itself, and joins
// channel; after it returns nothing reads nc.
func rawRegister(t *testing.T, nc net.Conn, nick, channel string) *ircreader.Reader {
	t.Helper()
	rd := ircreader.NewIRCReader(nc)
	fmt.Fprintf(nc, "NICK %s\r\nUSER %s 0 * :x\r\nJOIN %s\r\n", nick, nick, channel)
	nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		line, err := rd.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := ircmsg.ParseLine(string(line)); m.Command == rplEndOfNames {
			return rd
		}
	}
}

// A client that stops reading is disconnected once its send queue is full;
// the turn goes on, and another client of the channel gets all of it.
func TestSlowReaderIsCutOffAndTheTurnGoesOn(t *testing.T) {
	s := newStackOn(t, Options{SendQBytes: 64 << 10}, nil, func(l net.Listener) net.Listener { return &smallBuffer{Listener: l} })
	var pieces []string
	for i := range 400 {
		pieces = append(pieces, fmt.Sprintf("line %03d %s\n", i, strings.Repeat("x", 400)))
	}
	pieces = append(pieces, "the end")
	s.llm.Enqueue(llmtest.Stream().Role().Content(pieces...).Finish("stop").Done())

	slow, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(4096)
	rd := rawRegister(t, slow, "slow", "#big")

	fast := s.dial()
	// Even if the test goroutine stalls, the fast client's kernel buffer
	// holds the whole answer: only the slow one can be cut off.
	fast.nc.(*net.TCPConn).SetReadBuffer(1 << 20)
	fast.register("fast", "")
	fast.join("#big")
	fast.send("PRIVMSG #big :go")
	texts, _ := fast.answer("#big", "the end")
	if len(texts) != 401 {
		t.Fatalf("the fast client got %d lines", len(texts))
	}
	id := s.conversations("")[0].ID
	s.waitIdle(id, "")
	j := s.journal(id, "")
	if j[len(j)-1].Type != agentik.MsgAssistant || !strings.HasSuffix(agentik.JoinText(j[len(j)-1].Content), "the end") {
		t.Fatalf("turn did not complete: %+v", j[len(j)-1])
	}
	// The slow client: what the kernel held, then the reason, then EOF.
	var last string
	slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := rd.ReadLine()
		if err != nil {
			break
		}
		last = string(line)
	}
	if last != "ERROR :Closing link (SendQ exceeded)" {
		t.Fatalf("slow client's last line %q", last)
	}
}

func TestLineLimitsAndInvalidUTF8(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	c := s.dial()
	c.register("alice", "", "message-tags")
	c.join("#l")
	id := s.conversations("")[0].ID

	head := "PRIVMSG #l :"
	c.send(head + strings.Repeat("a", 600))
	if m := c.next(); m.Command != errInputTooLong {
		t.Fatalf("long body: %v", m)
	}
	c.send("@+big=" + strings.Repeat("t", 4200) + " " + head + "hi")
	if m := c.next(); m.Command != errInputTooLong {
		t.Fatalf("long tags: %v", m)
	}
	c.send(head + "\xff\xfe")
	if m := c.next(); m.Command != "FAIL" || m.Params[0] != "PRIVMSG" || m.Params[1] != "INVALID_UTF8" {
		t.Fatalf("invalid UTF-8: %v", m)
	}
	if j := s.journal(id, ""); len(j) != 0 {
		t.Fatalf("refused lines stored %+v", j)
	}
	// Exactly 512 bytes with CR-LF, ending in multi-byte characters, is
	// taken whole.
	text := strings.Repeat("b", 512-2-len(head)-6) + "ééé"
	c.send(head + text)
	c.answer("#l", "ok")
	if j := s.journal(id, ""); len(j) < 1 || agentik.JoinText(j[0].Content) != text {
		t.Fatalf("512-byte line: %+v", j)
	}
	// A line past what is worth reading ends the connection.
	c.send(strings.Repeat("x", 6000))
	rest := c.waitClosed()
	if last := rest[len(rest)-1]; last.Command != "ERROR" || !strings.Contains(last.Params[0], "Input line too long") {
		t.Fatalf("%v", rest)
	}
}

func TestTimeouts(t *testing.T) {
	s := newStack(t, Options{PingInterval: 150 * time.Millisecond, PingTimeout: 150 * time.Millisecond,
		RegistrationTimeout: 300 * time.Millisecond}, nil)
	unreg := s.dial()
	if rest := unreg.waitClosed(); len(rest) != 1 || !strings.Contains(rest[0].Params[0], "Registration timed out") {
		t.Fatalf("%v", rest)
	}

	silent := s.dial()
	silent.register("silent", "")
	if m := silent.next(); m.Command != "PING" {
		t.Fatalf("%v", m)
	}
	rest := silent.waitClosed()
	if len(rest) != 1 || !strings.Contains(rest[0].Params[0], "Ping timeout") {
		t.Fatalf("%v", rest)
	}

	alive := s.dial()
	alive.register("alive", "")
	for range 3 {
		m := alive.next()
		if m.Command != "PING" {
			t.Fatalf("%v", m)
		}
		alive.send("PONG :" + m.Params[0])
	}
	alive.send("QUIT")
	alive.waitClosed()

	idle := newStack(t, Options{PingInterval: 100 * time.Millisecond, IdleTimeout: 400 * time.Millisecond}, nil)
	c := idle.dial()
	c.register("idle", "")
	for {
		m, ok := c.nextOK()
		if !ok {
			t.Fatal("closed without a reason")
		}
		if m.Command == "PING" {
			c.send("PONG :" + m.Params[0])
			continue
		}
		if m.Command != "ERROR" || !strings.Contains(m.Params[0], "Idle timeout") {
			t.Fatalf("%v", m)
		}
		break
	}
}

func TestShutdownClosesEveryLinkCleanly(t *testing.T) {
	s := newStack(t, Options{}, nil)
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Stream().Role().Content("half\n").Pause(gate).Content("whole").Finish("stop").Done())
	a := s.dial()
	a.register("alice", "")
	a.join("#s")
	b := s.dial()
	b.register("bob", "")
	a.send("PRIVMSG #s :go")
	a.answer("#s", "half")

	// Shutting down: no new connections or messages; the running answer
	// still arrives.
	s.srv.BeginShutdown()
	if nc, err := net.DialTimeout("tcp", s.addr, 2*time.Second); err == nil {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 100)
		n, _ := nc.Read(buf)
		nc.Close()
		if n > 0 && !strings.HasPrefix(string(buf[:n]), "ERROR :Closing link") {
			t.Fatalf("new connection during shutdown got %q", buf[:n])
		}
	}
	a.send("PRIVMSG #s :more")
	if m := a.next(); m.Command != errCannotSendToChan || !strings.Contains(m.Params[2], "shutting down") {
		t.Fatalf("%v", m)
	}
	gate.Release()
	a.answer("#s", "whole")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{a, b} {
		rest := c.waitClosed()
		if len(rest) == 0 || rest[len(rest)-1].Command != "ERROR" || rest[len(rest)-1].Params[0] != "Closing link (Server shutting down)" {
			t.Fatalf("%v", rest)
		}
	}
	if n := s.srv.Clients(); n != 0 {
		t.Fatalf("%d clients left", n)
	}
}

func TestTooManyClients(t *testing.T) {
	s := newStack(t, Options{MaxClients: 1}, nil)
	a := s.dial()
	a.register("alice", "")
	b := s.dial()
	if rest := b.waitClosed(); len(rest) != 1 || rest[0].Params[0] != "Closing link (Too many connections)" {
		t.Fatalf("%v", rest)
	}
}

func TestLabeledResponses(t *testing.T) {
	s := newStack(t, Options{}, nil)
	s.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("ok") })
	c := s.dial()
	c.register("alice", "", "batch", "labeled-response", "message-tags")
	c.send("@label=p1 PING :x")
	if m := c.next(); m.Command != "PONG" || tag(m, "label") != "p1" {
		t.Fatalf("%v", m)
	}
	c.send("@label=j1 JOIN #lab")
	start := c.next()
	if start.Command != "BATCH" || start.Params[1] != "labeled-response" || tag(start, "label") != "j1" {
		t.Fatalf("%v", start)
	}
	ref := start.Params[0][1:]
	for m := c.next(); !(m.Command == "BATCH" && m.Params[0] == "-"+ref); m = c.next() {
		if tag(m, "batch") != ref || m.HasTag("label") {
			t.Fatalf("line in a labeled batch: %v", m)
		}
	}
	c.send("@label=n1 NOTICE agentik :psst")
	if m := c.next(); m.Command != "ACK" || tag(m, "label") != "n1" {
		t.Fatalf("%v", m)
	}
	c.send("@label=s1 PRIVMSG #lab :hello") // no echo-message: ACK
	m := c.until(is("ACK"))
	if tag(m[len(m)-1], "label") != "s1" {
		t.Fatalf("%v", m)
	}
	// The agent's answer is a message of its own, not a response to the
	// labeled command: it may come before the ACK as well as after it.
	answered := false
	for _, l := range m {
		answered = answered || (l.Command == "PRIVMSG" && l.Nick() == "agentik" && len(l.Params) == 2 && l.Params[1] == "ok")
	}
	if !answered {
		c.answer("#lab", "ok")
	}
	// Without labeled-response the tag is ignored.
	d := s.dial()
	d.register("bob", "", "message-tags")
	d.send("@label=x PING :y")
	if m := d.next(); m.Command != "PONG" || m.HasTag("label") {
		t.Fatalf("%v", m)
	}
}
