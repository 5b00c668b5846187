package irc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
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

// cutOff is a log handler that closes cut when a client is disconnected
// for its send queue.
type cutOff struct {
	once sync.Once
	cut  chan struct{}
}

func (h *cutOff) Enabled(context.Context, slog.Level) bool { return true }
func (h *cutOff) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *cutOff) WithGroup(string) slog.Handler            { return h }
func (h *cutOff) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if r.Message == "irc: closing link" && a.Key == "reason" && a.Value.String() == "SendQ exceeded" {
			h.once.Do(func() { close(h.cut) })
		}
		return true
	})
	return nil
}

// A client that stops reading is disconnected once its send queue stays
// full for the wait; the turn goes on, and another client of the channel
// gets all of it.
func TestSlowReaderIsCutOffAndTheTurnGoesOn(t *testing.T) {
	log := &cutOff{cut: make(chan struct{})}
	s := newStackOn(t, Options{SendQBytes: 64 << 10, SendQWait: 2 * time.Second, Logger: slog.New(log)}, nil,
		func(l net.Listener) net.Listener { return &smallBuffer{Listener: l} })
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
	// The slow client, once cut off: what the kernel held, then the
	// reason, then EOF. (Read before, it would have made room.)
	select {
	case <-log.cut:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow client was not cut off within 30 s")
	}
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

// A client that reads gets bursts far larger than its send queue whole,
// and stays connected: a long message from another facade and a long
// answer streamed at once. Their lines wait for room instead of cutting it
// off.
func TestBurstsLargerThanTheSendQueueArriveWhole(t *testing.T) {
	s := newStack(t, Options{SendQBytes: 4 << 10}, nil)
	const n = 300
	var pieces []string
	for i := range n {
		pieces = append(pieces, fmt.Sprintf("line %03d %s\n", i, strings.Repeat("y", 300)))
	}
	pieces = append(pieces, "the end")
	s.llm.Enqueue(llmtest.Stream().Role().Content(pieces...).Finish("stop").Done())
	c := s.dial()
	c.register("alice", "")
	c.join("#burst")
	id := s.conversations("")[0].ID
	conv, err := s.eng.Conversation(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	var msg strings.Builder
	for i := range n {
		fmt.Fprintf(&msg, "para %03d %s\n", i, strings.Repeat("z", 300))
	}
	msg.WriteString("the question")
	if _, err := conv.Send(testCtx(t), agentik.SendRequest{Content: []agentik.Content{agentik.Text(msg.String())},
		Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "web", DisplayName: "Web User"}}}); err != nil {
		t.Fatal(err)
	}
	texts, others := c.answer("#burst", "the end")
	var asked []string
	for _, m := range others {
		if m.Command == "ERROR" {
			t.Fatalf("disconnected: %v", m)
		}
		if m.Command == "PRIVMSG" && m.Nick() == "Web-User" {
			asked = append(asked, m.Params[1])
		}
	}
	if len(asked) != n+1 || asked[n] != "the question" || len(texts) != n+1 {
		t.Fatalf("the client got %d lines of the message (last %q) and %d of the answer, want %d of each",
			len(asked), asked[len(asked)-1], len(texts), n+1)
	}
	for i := range n {
		if want := fmt.Sprintf("para %03d %s", i, strings.Repeat("z", 300)); asked[i] != want {
			t.Fatalf("message line %d: %q", i, asked[i])
		}
		if want := fmt.Sprintf("line %03d %s", i, strings.Repeat("y", 300)); texts[i] != want {
			t.Fatalf("answer line %d: %q", i, texts[i])
		}
	}
	c.send("PING :still here")
	if m := c.next(); m.Command != "PONG" {
		t.Fatalf("%v", m)
	}
}

// A client that stops reading during a long answer holds up only its own
// follower, and once it reads again it gets everything, every line once
// and in order: the turn completes meanwhile; the answer, whose lines stop
// fitting the client's queue, is sent from its stored message ("answer");
// after a message longer than the queue, the follower waits on it while
// the answer streams, its stream is cut off by the bus (the answer's
// deltas and its stored message do not fit), and it resumes from its last
// event ("after a long message"); when the client reads again while the
// answer still streams, the deltas the bus dropped meanwhile leave a gap
// in those the follower gets: the answer is sent from its message too
// ("reading again mid-answer"); likewise when a long message arrives
// while the answer's first lines went out live ("a message during the
// answer").
func TestLaggingFollowerSendsEverything(t *testing.T) {
	for _, tc := range []struct {
		name   string
		paras  int  // lines of the user's message
		pause  bool // read again once half of the answer was published
		during bool // the long message comes after the answer's first lines
	}{
		{name: "answer"},
		{name: "after a long message", paras: 200},
		{name: "reading again mid-answer", paras: 200, pause: true},
		{name: "a message during the answer", paras: 200, during: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStackOn(t, Options{SendQBytes: 4 << 10, WriteTimeout: time.Minute, SendQWait: 30 * time.Second}, nil,
				func(l net.Listener) net.Listener { return &smallBuffer{Listener: l} })
			// Only a follower that waits may miss deltas without lagging for
			// them; one that lags because its lines stop fitting takes its
			// answer in whole lines, fewer than the bus holds for it.
			pieces, answer := longAnswer(tc.paras > 0)
			var asked []string
			for i := range tc.paras {
				asked = append(asked, fmt.Sprintf("para %03d %s", i, strings.Repeat("z", 300)))
			}
			// pause: the second half comes a moment after the client reads
			// again (its follower has caught up with the bus by then).
			// during: 40 lines (8 KB: the kernel's buffers and the queue
			// hold them), then 2,000 deltas while the follower waits on the
			// message, then the rest once it caught up.
			g1, g2 := llmtest.NewGate(), llmtest.NewGate()
			first, second := len(pieces)/2, len(pieces)/2
			reply := llmtest.Stream().Role()
			switch {
			case tc.pause:
				reply = reply.Content(pieces[:first]...).Pause(g1)
			case tc.during:
				first, second = 400, 2400
				reply = reply.Content(pieces[:first]...).Pause(g1).Content(pieces[first:second]...).Pause(g2)
			default:
				first, second = 0, 0
			}
			if tc.pause || tc.during {
				reply = reply.Sleep(300 * time.Millisecond)
			}
			s.llm.Enqueue(reply.Content(pieces[second:]...).Finish("stop").Done())
			if tc.during {
				s.llm.Enqueue(llmtest.Text("ok")) // the long message's own turn
			}

			nc, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.(*net.TCPConn).SetReadBuffer(4096)
			rd := rawRegister(t, nc, "alice", "#lag")
			id := s.conversations("")[0].ID
			conv, err := s.eng.Conversation(testCtx(t), id)
			if err != nil {
				t.Fatal(err)
			}
			send := func(text string) {
				t.Helper()
				if _, err := conv.Send(testCtx(t), agentik.SendRequest{Content: []agentik.Content{agentik.Text(text)},
					Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "web", DisplayName: "Web User"}},
					IfBusy:  agentik.BusyEnqueue}); err != nil {
					t.Fatal(err)
				}
			}
			published := func(g *llmtest.Gate, n int) {
				t.Helper()
				select {
				case <-g.Reached():
				case <-time.After(30 * time.Second):
					t.Fatal("the model did not reach its pause within 30 s")
				}
				// Once the engine has published them, a new subscriber
				// joins with them as the text so far.
				want := len(strings.Join(pieces[:n], ""))
				for deadline := time.Now().Add(30 * time.Second); textSoFar(t, conv) < want; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%d deltas were not published within 30 s", n)
					}
				}
			}
			// The rest of the answer is released once the client has read
			// the message's last line: its follower is past the wait.
			var release *llmtest.Gate
			last := "go"
			switch {
			case tc.during:
				send("go")
				published(g1, first)
				send(strings.Join(asked, "\n"))
				g1.Release()
				published(g2, second)
				release, last = g2, asked[len(asked)-1]
			case tc.pause:
				send(strings.Join(append(asked, "go"), "\n"))
				published(g1, first)
				release = g1
			default:
				send(strings.Join(append(asked, "go"), "\n"))
				s.waitIdle(id, "") // the turn does not wait for the client
			}

			// From now on the client reads as fast as it can.
			nc.(*net.TCPConn).SetReadBuffer(1 << 20)
			gotAsked, got := readAnswer(t, nc, rd, func(line string) {
				if release != nil && line == last {
					release.Release()
				}
			})
			if tc.during {
				asked = append([]string{"go"}, asked...)
			} else {
				asked = append(asked, "go")
			}
			if strings.Join(gotAsked, "\n") != strings.Join(asked, "\n") {
				t.Fatalf("the message came as %d lines, want %d", len(gotAsked), len(asked))
			}
			if len(got) != len(answer) {
				t.Fatalf("got %d lines of the answer, want %d", len(got), len(answer))
			}
			for i := range answer {
				if got[i] != answer[i] {
					t.Fatalf("line %d: %q, want %q", i, got[i], answer[i])
				}
			}
		})
	}
}

// longAnswer is an answer of 400 lines, 80 KB (far more than the kernel's
// buffers and a small send queue hold), and its lines. It streams as 401
// deltas, one line each, or with words as 4,001 (more than the 1,024 the
// bus holds for a subscriber that does not take them).
func longAnswer(words bool) (pieces, lines []string) {
	for i := range 400 {
		var line []string
		for w := range 10 {
			word := fmt.Sprintf("w%03d-%02d-xxxxxxxxxx", i, w)
			line = append(line, word)
			sep := " "
			if w == 9 {
				sep = "\n"
			}
			pieces = append(pieces, word+sep)
		}
		lines = append(lines, strings.Join(line, " "))
		if !words {
			pieces = append(pieces[:len(pieces)-10], strings.Join(pieces[len(pieces)-10:], ""))
		}
	}
	return append(pieces, "the end"), append(lines, "the end")
}

// readAnswer reads nc until the agent's line "the end", returning the
// lines of Web-User's messages (each passed to asking as it comes) and of
// the agent's.
func readAnswer(t *testing.T, nc net.Conn, rd *ircreader.Reader, asking func(string)) (asked, answer []string) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(answer) == 0 || answer[len(answer)-1] != "the end" {
		line, err := rd.ReadLine()
		if err != nil {
			t.Fatalf("after %d lines of the answer: %v", len(answer), err)
		}
		m, err := ircmsg.ParseLine(string(line))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Command == "ERROR":
			t.Fatalf("disconnected after %d lines: %v", len(answer), m)
		case m.Command == "PRIVMSG" && m.Nick() == "Web-User":
			asked = append(asked, m.Params[1])
			asking(m.Params[1])
		case m.Command == "PRIVMSG" && m.Nick() == "agentik":
			answer = append(answer, m.Params[1])
		}
	}
	return asked, answer
}

// textSoFar is the length of the text of the response conv's turn is
// writing, as a subscriber joining now gets it (0 when none is).
func textSoFar(t *testing.T, conv agentik.Conversation) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	st, err := conv.Events(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for ev := range st.C() {
		switch ev.Type {
		case agentik.EvAppendText:
			return len(ev.Text)
		case agentik.EvEnd:
			return 0
		}
	}
	return 0
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
