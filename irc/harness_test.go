package irc

import (
	"context"
	"encoding/base64"
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
	"github.com/agentik/agentik/auth"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/internal/stacktest"
	"github.com/agentik/agentik/llmtest"
)

// stack is the real thing: the engine over a SQLite file and the
// in-process bus, the OpenAI adapter talking to a scripted llmtest server,
// the IRC server on a real TCP listener.
type stack struct {
	t    testing.TB
	llm  *llmtest.Server
	eng  *engine.Engine
	srv  *Server
	addr string
}

// tokens: principal → token; nil means an open server.
func newStack(t testing.TB, opts Options, tokens map[string]string) *stack {
	t.Helper()
	return newStackOn(t, opts, tokens, nil)
}

// newEngine is an engine over its own SQLite file and scripted model.
func newEngine(t testing.TB, id string, set ...func(*engine.Options)) (*engine.Engine, *llmtest.Server) {
	t.Helper()
	opts := []stacktest.Option{stacktest.Engine(func(o *engine.Options) {
		o.ImageInput = true
		o.Info = agentik.AgentInfo{ID: id, Name: id}
		o.Logger = slog.New(slog.DiscardHandler)
	})}
	for _, f := range set {
		opts = append(opts, stacktest.Engine(f))
	}
	st := stacktest.New(t, opts...)
	return st.Engine, st.LLM
}

// newStackOn is newStack serving on wrap(listener) when wrap is not nil,
// with extra agents after the stack's own (the default agent).
func newStackOn(t testing.TB, opts Options, tokens map[string]string, wrap func(net.Listener) net.Listener, extra ...Agent) *stack {
	t.Helper()
	return newStackWith(t, opts, tokens, wrap, nil, extra...)
}

// newStackWith is newStackOn with the default agent's engine options
// adjusted by eopt (nil: as they are).
func newStackWith(t testing.TB, opts Options, tokens map[string]string, wrap func(net.Listener) net.Listener, eopt func(*engine.Options), extra ...Agent) *stack {
	t.Helper()
	var set []func(*engine.Options)
	if eopt != nil {
		set = append(set, eopt)
	}
	eng, llm := newEngine(t, "agentik", set...)
	return newStackFor(t, eng, llm, opts, tokens, wrap, extra...)
}

// newStackFor serves eng (answering with llm) as the default agent.
func newStackFor(t testing.TB, eng *engine.Engine, llm *llmtest.Server, opts Options, tokens map[string]string, wrap func(net.Listener) net.Listener, extra ...Agent) *stack {
	t.Helper()
	if tokens != nil {
		pairs := map[string]string{}
		for p, tok := range tokens {
			pairs[tok] = p
		}
		tk := auth.NewTokens(pairs)
		opts.Authenticate = func(user, token string) (string, bool) { return tk.Lookup(token) }
	}
	if opts.FloodRate == 0 {
		opts.FloodRate = -1 // flood control has its own test
	}
	if opts.Agents == nil {
		opts.Agents = append([]Agent{{ID: "agentik", Agent: eng}}, extra...)
	}
	if opts.ImageURL == nil {
		opts.ImageURL = func(agent, conv string, seq int64, n int) string {
			return fmt.Sprintf("http://img.test/%s/%s/%d/%d", agent, conv, seq, n)
		}
	}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &stack{t: t, llm: llm, eng: eng, srv: srv, addr: addr}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// client is a raw IRC client over TCP: lines written as they are, lines
// read with ircreader and parsed with ircmsg.
type client struct {
	t     testing.TB
	nc    net.Conn
	lines chan string
	mu    sync.Mutex
	raw   []string // every line received
}

func (s *stack) dial() *client {
	s.t.Helper()
	return s.dialFrom("")
}

// dialFrom connects from the local address ip ("": any); on Linux every
// 127.0.0.0/8 address is the loopback, so "127.0.0.2" is another client
// address on the same host.
func (s *stack) dialFrom(ip string) *client {
	s.t.Helper()
	var d net.Dialer
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	nc, err := d.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.clientOn(nc)
}

// clientOn is a client on a connection made by the caller.
func (s *stack) clientOn(nc net.Conn) *client {
	c := &client{t: s.t, nc: nc, lines: make(chan string, 10000)}
	s.t.Cleanup(func() { nc.Close() })
	go func() {
		defer close(c.lines)
		var rd ircreader.Reader
		rd.Initialize(nc, 512, 1<<16)
		for {
			line, err := rd.ReadLine()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.raw = append(c.raw, string(line))
			c.mu.Unlock()
			c.lines <- string(line)
		}
	}()
	return c
}

func (c *client) send(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		if _, err := c.nc.Write([]byte(l + "\r\n")); err != nil {
			c.t.Fatalf("write %q: %v", l, err)
		}
	}
}

// next returns the next line, parsed; it fails after a timeout or when the
// connection ends.
func (c *client) next() ircmsg.Message {
	c.t.Helper()
	m, ok := c.nextOK()
	if !ok {
		c.t.Fatal("connection ended")
	}
	return m
}

func (c *client) nextOK() (ircmsg.Message, bool) {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			return ircmsg.Message{}, false
		}
		m, err := ircmsg.ParseLine(l)
		if err != nil {
			c.t.Fatalf("server sent an unparsable line %q: %v", l, err)
		}
		return m, true
	case <-time.After(15 * time.Second):
		raw := c.rawLines()
		var last []string
		for _, l := range raw[max(0, len(raw)-12):] {
			last = append(last, ircmsg.TruncateUTF8Safe(l, 160))
		}
		c.t.Fatalf("no line within 15s; got %d lines, the last:\n%s", len(raw), strings.Join(last, "\n"))
	}
	return ircmsg.Message{}, false
}

// until reads lines up to and including the first for which stop is true.
func (c *client) until(stop func(m ircmsg.Message) bool) []ircmsg.Message {
	c.t.Helper()
	var out []ircmsg.Message
	for {
		m := c.next()
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

func is(cmd string, params ...string) func(ircmsg.Message) bool {
	return func(m ircmsg.Message) bool {
		if m.Command != cmd {
			return false
		}
		for i, p := range params {
			if i >= len(m.Params) || (p != "" && m.Params[i] != p) {
				return false
			}
		}
		return true
	}
}

// waitClosed reads until the server closes the connection and returns the
// lines read.
func (c *client) waitClosed() []ircmsg.Message {
	c.t.Helper()
	var out []ircmsg.Message
	for {
		m, ok := c.nextOK()
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// register registers nick with the capabilities caps (none: no CAP at all),
// optionally with a PASS, and returns the lines up to the end of the MOTD.
func (c *client) register(nick, pass string, caps ...string) []ircmsg.Message {
	c.t.Helper()
	if len(caps) > 0 {
		c.send("CAP LS 302")
	}
	if pass != "" {
		c.send("PASS " + pass)
	}
	c.send("NICK "+nick, "USER "+nick+" 0 * :Test "+nick)
	var out []ircmsg.Message
	if len(caps) > 0 {
		out = append(out, c.until(is("CAP", "", "LS"))...)
		c.send("CAP REQ :" + strings.Join(caps, " "))
		out = append(out, c.until(is("CAP", "", "ACK"))...)
		c.send("CAP END")
	}
	return append(out, c.until(is(rplEndOfMOTD))...)
}

// sasl registers nick with caps and SASL PLAIN as user/token and returns
// the SASL numeric that ended the exchange (903 or 904).
func (c *client) sasl(nick, user, token string, caps ...string) string {
	c.t.Helper()
	c.send("CAP LS 302", "NICK "+nick, "USER "+nick+" 0 * :Test")
	c.until(is("CAP", "", "LS"))
	c.send("CAP REQ :" + strings.Join(append(caps, "sasl"), " "))
	c.until(is("CAP", "", "ACK"))
	c.send("AUTHENTICATE PLAIN")
	c.until(is("AUTHENTICATE", "+"))
	c.send("AUTHENTICATE " + b64("\x00"+user+"\x00"+token))
	end := c.until(func(m ircmsg.Message) bool { return m.Command == rplSASLSuccess || m.Command == errSASLFail })
	return end[len(end)-1].Command
}

// join joins channel and returns the lines up to the end of NAMES.
func (c *client) join(channel string) []ircmsg.Message {
	c.t.Helper()
	c.send("JOIN " + channel)
	return c.until(func(m ircmsg.Message) bool {
		return m.Command == rplEndOfNames || m.Command == errNoSuchChannel || m.Command == errNeedReggedNick || m.Command == errBadChanName
	})
}

// answer reads the agent's PRIVMSGs to target until one whose text is
// ends with wantLast, and returns their texts; other lines are returned apart.
func (c *client) answer(target, wantLast string) (texts []string, others []ircmsg.Message) {
	c.t.Helper()
	return c.answerFrom("agentik", target, wantLast)
}

// answerFrom is answer for the agent with this nick.
func (c *client) answerFrom(agent, target, wantLast string) (texts []string, others []ircmsg.Message) {
	c.t.Helper()
	for {
		m := c.next()
		if m.Command == "PRIVMSG" && len(m.Params) == 2 && m.Params[0] == target && m.Nick() == agent && !strings.HasPrefix(m.Params[1], "\x01") {
			texts = append(texts, m.Params[1])
			if strings.HasSuffix(m.Params[1], wantLast) {
				return texts, others
			}
			continue
		}
		others = append(others, m)
	}
}

func (c *client) rawLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.raw...)
}

func tag(m ircmsg.Message, name string) string {
	_, v := m.GetTag(name)
	return v
}

// journal returns the stored messages of conversation id as principal.
func (s *stack) journal(id, principal string) []agentik.Message {
	s.t.Helper()
	return stacktest.Journal(s.t, s.eng, id, principal)
}

// conversations returns principal's conversations.
func (s *stack) conversations(principal string) []agentik.ConversationInfo {
	s.t.Helper()
	ctx := agentik.WithPrincipal(testCtx(s.t), principal)
	list, err := s.eng.ListConversations(ctx, agentik.ListRequest{Limit: 500})
	if err != nil {
		s.t.Fatal(err)
	}
	return list.Conversations
}

// waitIdle waits until the conversation reports no running turn, by
// watching its event stream for the end of the turn (no polling).
func (s *stack) waitIdle(id, principal string) {
	s.t.Helper()
	ctx := agentik.WithPrincipal(testCtx(s.t), principal)
	conv, err := s.eng.Conversation(ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		s.t.Fatal(err)
	}
	defer st.Close()
	info, err := conv.Info(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	if !info.Working {
		return
	}
	for ev := range st.C() {
		if ev.Type == agentik.EvEnd {
			if info, err := conv.Info(ctx); err == nil && !info.Working {
				return
			}
		}
	}
	s.t.Fatal("stream ended before the turn did")
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// conversationsOf returns principal's conversations of agent.
func conversationsOf(t testing.TB, agent agentik.Agent, principal string) []agentik.ConversationInfo {
	t.Helper()
	list, err := agent.ListConversations(agentik.WithPrincipal(testCtx(t), principal), agentik.ListRequest{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return list.Conversations
}
