package irc

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircreader"
	"github.com/ergochat/irc-go/ircutils"

	"github.com/agentik/agentik"
)

// maxReadLine is the longest line read from a client: 4094 bytes of client
// tag data with '@' and a space, and the 512-byte line. A longer line is not
// worth reading on: the client is disconnected.
const maxReadLine = ircmsg.MaxlenTagsFromClient + maxLine

// Capabilities (IRCv3 capability negotiation).
type capSet uint32

const (
	capBatch capSet = 1 << iota
	capCapNotify
	capChathistory
	capEcho
	capLabeled
	capTags
	capSASL
	capServerTime
)

var capNames = []struct {
	name string
	bit  capSet
}{
	{"batch", capBatch},
	{"cap-notify", capCapNotify},
	{"draft/chathistory", capChathistory},
	{"echo-message", capEcho},
	{"labeled-response", capLabeled},
	{"message-tags", capTags},
	{"sasl", capSASL},
	{"server-time", capServerTime},
}

func (s capSet) has(b capSet) bool { return s&b == b }

// conn is one client connection. Its reader goroutine (run) owns the
// registration state and handles commands one at a time; a writer
// goroutine drains its send queue; one follower goroutine per joined
// channel (and direct conversation) turns conversation events into lines.
// Fields under mu are shared with the followers.
type conn struct {
	srv    *Server
	nc     net.Conn
	id     uint64
	out    *sendq
	ctx    context.Context // ends when the connection does
	cancel context.CancelFunc
	host   string
	caps   atomic.Uint32
	batch  atomic.Uint64 // batch reference counter
	wg     sync.WaitGroup
	wdone  chan struct{} // the writer ended
	addr   string        // remote address the server counts it under
	unreg  bool          // counted as not acting yet (under srv.mu)

	mu         sync.Mutex
	nick       string
	user       string
	realname   string
	registered bool
	principal  string
	authed     bool
	away       string
	ended      bool               // cleanup began: no new followers
	watching   bool               // watchAgents started
	stopWatch  func() bool        // ends the watch of its credential (Options.Watch)
	cutoff     *time.Timer        // closes the connection if a revoked link is slow to close
	topics     map[string]string  // conversation id → title this client set, until its renamed event
	channels   map[string]*joined // folded channel name
	direct     map[string]*joined // agent id

	// Owned by the reader goroutine.
	started    time.Time
	capHold    bool // CAP LS or REQ seen, CAP END not yet
	pass       string
	passLogin  bool // logged in with PASS (RPL_LOGGEDIN comes with the welcome)
	saslMech   string
	sasl       ircutils.SASLBuffer
	saslFails  int
	lag        *fakelag
	lastRead   time.Time
	lastCmd    time.Time
	pingSentAt time.Time
}

func newConn(s *Server, nc net.Conn, id uint64) *conn {
	ctx, cancel := context.WithCancel(agentik.WithFacade(context.Background(), "irc"))
	c := &conn{srv: s, nc: nc, id: id, out: newSendq(s.opts.SendQBytes), ctx: ctx, cancel: cancel,
		host: cloakedHost, wdone: make(chan struct{}), channels: map[string]*joined{}, direct: map[string]*joined{},
		topics: map[string]string{}}
	c.sasl.Initialize(8192)
	if s.opts.FloodRate > 0 {
		c.lag = newFakelag(s.opts.FloodBurst, s.opts.FloodRate, time.Now())
	}
	return c
}

func (c *conn) capSet() capSet { return capSet(c.caps.Load()) }

// acting returns the principal the client acts for, and false when it may
// not act yet (not registered, or not authenticated on a server with auth).
func (c *conn) acting() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.principal, c.registered && (c.authed || c.srv.opts.Authenticate == nil)
}

// viewer returns the principal whose agents the client sees, and false
// when it sees none: on a server with auth, one that has not logged in
// (a stranger learns no agent's name).
func (c *conn) viewer() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.principal, c.authed || c.srv.opts.Authenticate == nil
}

// sees reports whether the client sees agent a.
func (c *conn) sees(a *agentUser) bool {
	p, ok := c.viewer()
	return ok && c.srv.mayUse(p, a)
}

// agentNamed returns the agent with this nick that the client sees, or
// nil: an agent it may not use is, for it, a nick nobody has.
func (c *conn) agentNamed(nick string) *agentUser {
	if p, ok := c.viewer(); ok {
		return c.srv.agentByNick(p, nick)
	}
	return nil
}

func (c *conn) currentNick() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nick
}

// target is the nick numerics address: "*" before one is set.
func (c *conn) target() string {
	if n := c.currentNick(); n != "" {
		return n
	}
	return "*"
}

func (c *conn) source() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sourceLocked()
}

// cloakedHost is the host of every client's mask: a mask is shown to the
// other clients (WHO, WHOIS, channel lines) and stored with each message
// (irc_source), where every reader of the journal sees it, so it carries
// no client's address. The address is in the server's own log only.
const cloakedHost = "agentik/user"

func (c *conn) sourceLocked() string {
	user := c.user
	if user == "" {
		user = "~u"
	}
	return c.nick + "!" + user + "@" + c.host
}

// pctx is the context of core calls: the connection's, acting for its
// principal.
func (c *conn) pctx() context.Context {
	c.mu.Lock()
	p := c.principal
	c.mu.Unlock()
	return agentik.WithPrincipal(c.ctx, p)
}

// run reads and handles lines until the connection ends, then cleans up.
func (c *conn) run() {
	go c.writer()
	defer c.cleanup()
	var rd ircreader.Reader
	rd.Initialize(c.nc, 512, maxReadLine)
	c.started = time.Now()
	c.lastRead, c.lastCmd = c.started, c.started
	for {
		c.nc.SetReadDeadline(c.deadline())
		line, err := rd.ReadLine()
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				if c.timedOut() {
					return
				}
				continue
			case errors.Is(err, ircreader.ErrReadQ):
				c.send(c.numeric(errInputTooLong, "Input line too long"))
				c.quit("Input line too long", false)
			default:
				c.quit("Connection closed", false)
			}
			return
		}
		c.lastRead = time.Now()
		c.pingSentAt = time.Time{}
		if !c.handleLine(line) {
			return
		}
		if c.ctx.Err() != nil {
			return
		}
	}
}

// deadline is when the reader must wake up if nothing arrives.
func (c *conn) deadline() time.Time {
	o := c.srv.opts
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	login := c.started.Add(o.RegistrationTimeout)
	if !registered {
		return login
	}
	d := c.lastRead.Add(o.PingInterval)
	if !c.pingSentAt.IsZero() {
		d = c.pingSentAt.Add(o.PingTimeout)
	}
	if o.IdleTimeout > 0 {
		if idle := c.lastCmd.Add(o.IdleTimeout); idle.Before(d) {
			d = idle
		}
	}
	if _, ok := c.acting(); !ok && login.Before(d) {
		d = login
	}
	return d
}

// timedOut handles a read deadline: true when the connection is closed.
func (c *conn) timedOut() bool {
	o := c.srv.opts
	now := time.Now()
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	_, acting := c.acting()
	switch {
	case !registered:
		c.quit("Registration timed out", false)
		return true
	case !acting && !now.Before(c.started.Add(o.RegistrationTimeout)):
		// Registered without logging in: it could only hold a place.
		c.quit("Login timed out", false)
		return true
	case o.IdleTimeout > 0 && !now.Before(c.lastCmd.Add(o.IdleTimeout)):
		c.quit("Idle timeout", false)
		return true
	case c.pingSentAt.IsZero():
		c.pingSentAt = now
		c.send(ircmsg.MakeMessage(nil, "", "PING", c.srv.opts.ServerName))
		return false
	case !now.Before(c.pingSentAt.Add(o.PingTimeout)):
		c.quit("Ping timeout: "+strconv.Itoa(int(now.Sub(c.lastRead).Seconds()))+" seconds", false)
		return true
	}
	return false
}

// handleLine parses and handles one line; false when the connection ends.
func (c *conn) handleLine(line []byte) bool {
	if !utf8.Valid(line) {
		cmd := "*"
		if m, err := ircmsg.ParseLine(strings.ToValidUTF8(string(line), "?")); err == nil {
			cmd = m.Command
		}
		c.send(ircmsg.MakeMessage(nil, c.srv.opts.ServerName, "FAIL", cmd, "INVALID_UTF8", "Message rejected: it is not valid UTF-8"))
		return true
	}
	msg, err := ircmsg.ParseLineStrict(string(line), true, maxLine)
	switch err {
	case nil:
	case ircmsg.ErrorBodyTooLong, ircmsg.ErrorTagsTooLong:
		c.send(c.numeric(errInputTooLong, "Input line too long"))
		return true
	default: // empty, NUL, unparsable tags: nothing to answer
		return true
	}
	h, ok := commands[msg.Command]
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	if !ok {
		if registered {
			c.send(c.numeric(errUnknownCommand, msg.Command, "Unknown command"))
		} else {
			c.send(c.numeric(errNotRegistered, "You have not registered"))
		}
		return true
	}
	if !registered && !h.preReg {
		c.send(c.numeric(errNotRegistered, "You have not registered"))
		return true
	}
	if len(msg.Params) < h.params {
		c.send(c.numeric(errNeedMoreParams, msg.Command, "Not enough parameters"))
		return true
	}
	if registered && msg.Command != "PING" && msg.Command != "PONG" {
		c.lastCmd = time.Now()
		if d := c.lag.delay(c.lastCmd); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return false
			}
		}
	}
	r := &reply{}
	if _, label := msg.GetTag("label"); label != "" && len(label) <= 64 && c.capSet().has(capLabeled|capBatch) {
		r.label = label
	}
	keep := h.fn(c, r, msg)
	c.finish(r)
	return keep
}

// reply collects the response to one command, so that a labeled command
// gets exactly one labeled response (labeled-response).
type reply struct {
	label   string
	msgs    []ircmsg.Message
	handled bool     // answered already (an echo carries the label)
	after   []func() // run once the response is queued (followers start)
}

func (r *reply) add(m ircmsg.Message) { r.msgs = append(r.msgs, m) }

// finish sends a command's response: unlabeled as it is; labeled, as one
// line with the label, one batch with the label on its start, or a
// labeled-response batch around the lines — or ACK when there are none.
// Then it runs what waited for the response to be queued.
func (c *conn) finish(r *reply) {
	msgs := r.msgs
	if !r.handled {
		msgs = labeled(c, r.label, msgs)
	}
	for _, m := range msgs {
		if !c.sendWait(m) {
			break
		}
	}
	for _, f := range r.after {
		f()
	}
	r.after = nil
}

// isOneBatch reports whether msgs are exactly one batch, start to end.
func isOneBatch(msgs []ircmsg.Message) bool {
	if len(msgs) < 2 || msgs[0].Command != "BATCH" || msgs[0].HasTag("batch") || len(msgs[0].Params) == 0 {
		return false
	}
	end := msgs[len(msgs)-1]
	return end.Command == "BATCH" && len(end.Params) > 0 && end.Params[0] == "-"+msgs[0].Params[0][1:]
}

func (c *conn) newBatchRef() string { return "b" + strconv.FormatUint(c.batch.Add(1), 36) }

// numeric builds a numeric reply to this client: params follow its nick.
func (c *conn) numeric(code string, params ...string) ircmsg.Message {
	return ircmsg.MakeMessage(nil, c.srv.opts.ServerName, code, append([]string{c.target()}, params...)...)
}

// notice builds a server NOTICE to this client.
func (c *conn) notice(text string) ircmsg.Message {
	return ircmsg.MakeMessage(nil, c.srv.opts.ServerName, "NOTICE", c.target(), text)
}

// encode serializes m for this client: tags it did not negotiate are
// removed (TAGMSG and BATCH lines need message-tags and batch), and the
// line is kept within the limits (tags over their limit drop Agentik's own
// tags first).
func (c *conn) encode(m ircmsg.Message) []byte {
	cs := c.capSet()
	switch {
	case m.Command == "TAGMSG" && !cs.has(capTags):
		return nil
	case m.Command == "BATCH" && !cs.has(capBatch):
		return nil
	}
	all := m.AllTags()
	var tags map[string]string
	for k, v := range all {
		var keep bool
		switch k {
		case "time":
			keep = cs.has(capServerTime)
		case "batch":
			keep = cs.has(capBatch)
		case "label":
			keep = cs.has(capLabeled | capBatch)
		default:
			keep = cs.has(capTags)
		}
		if keep {
			if tags == nil {
				tags = make(map[string]string, len(all))
			}
			tags[k] = v
		}
	}
	out := ircmsg.MakeMessage(tags, m.Source, m.Command, m.Params...)
	b, err := out.LineBytesStrict(false, maxLine)
	if err == ircmsg.ErrorTagsTooLong {
		for k := range tags {
			if strings.HasPrefix(k, vendor) || strings.HasPrefix(k, "+") {
				out.DeleteTag(k)
			}
		}
		b, err = out.LineBytesStrict(false, maxLine)
	}
	switch err {
	case nil, ircmsg.ErrorBodyTooLong: // cut within the limit, UTF-8 kept whole
		return b
	}
	c.srv.log.Debug("irc: line not sent", "command", m.Command, "err", err)
	return nil
}

// send queues m without waiting: lines that other clients' actions cause,
// and the server's own (PING, errors), use it. A client whose queue is full
// is disconnected.
func (c *conn) send(m ircmsg.Message) {
	b := c.encode(m)
	if b == nil {
		return
	}
	if !c.out.push(b) {
		c.quit("SendQ exceeded", true)
	}
}

// sendWait queues m, waiting for room: replies to the client's own
// commands use it. False when the connection ends.
func (c *conn) sendWait(m ircmsg.Message) bool {
	b := c.encode(m)
	if b == nil {
		return true
	}
	if !c.out.pushWait(c.ctx, b, c.out.max, c.srv.opts.WriteTimeout) {
		c.quit("SendQ exceeded", true)
		return false
	}
	return true
}

// followLine queues m, a line of one of the client's conversations (from
// its follower, whose context is ctx), so that the queue is at most half
// full with it: the other half stays for the lines that cannot wait
// (send). When there is no room now, without wait it reports false; with
// wait it waits up to SendQWait for room, and a client that makes none is
// disconnected. waited tells whether it had to wait. Only the follower
// waits, never the turn: the bus holds the conversation's events for it
// (see follower for what it may drop meanwhile).
func (c *conn) followLine(ctx context.Context, m ircmsg.Message, wait bool) (queued, waited bool) {
	b := c.encode(m)
	if b == nil {
		return true, false
	}
	mark := c.out.max / 2
	if c.out.tryPush(b, mark) {
		return true, false
	}
	if !wait {
		return false, false
	}
	if c.out.pushWait(ctx, b, mark, c.srv.opts.SendQWait) {
		return true, true
	}
	if ctx.Err() == nil {
		c.quit("SendQ exceeded", true)
	}
	return false, true
}

// quit ends the connection with "ERROR :Closing link (reason)" after what
// is queued (discard: instead of it). Safe from any goroutine; the first
// call wins.
func (c *conn) quit(reason string, discard bool) {
	line := []byte("ERROR :Closing link (" + oneLine(reason, 300) + ")\r\n")
	if c.out.close(line, discard) {
		c.srv.log.Debug("irc: closing link", "client", c.id, "reason", reason)
	}
}

// writer writes queued lines until the queue is closed and drained, then
// closes the connection.
func (c *conn) writer() {
	defer close(c.wdone)
	defer c.nc.Close()
	defer c.cancel()
	// The nick is free before the client sees the link close: a client
	// that logs in again at once is not told it is in use.
	defer c.freeNick()
	for {
		lines, final := c.out.take(c.ctx.Done())
		if len(lines) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
			bufs := net.Buffers(lines)
			if _, err := bufs.WriteTo(c.nc); err != nil {
				c.out.close(nil, true)
				return
			}
		}
		if final {
			return
		}
	}
}

// freeNick gives up the nick the connection holds, if it still does.
func (c *conn) freeNick() {
	c.mu.Lock()
	nick := c.nick
	c.mu.Unlock()
	if nick != "" {
		c.srv.releaseNick(c, nick)
	}
}

// cleanup runs when the reader ends: the client leaves its channels, the
// followers stop, what is queued is flushed, the connection is closed.
func (c *conn) cleanup() {
	c.quit("Connection closed", false)
	c.mu.Lock()
	c.ended = true
	if c.stopWatch != nil {
		c.stopWatch()
		c.stopWatch = nil
	}
	nick := c.nick
	src := c.sourceLocked()
	registered := c.registered
	joins := make([]*joined, 0, len(c.channels)+len(c.direct))
	for _, j := range c.channels {
		joins = append(joins, j)
	}
	for _, j := range c.direct {
		joins = append(joins, j)
	}
	c.mu.Unlock()
	seen := map[*conn]bool{}
	for _, j := range joins {
		j.stop()
		if j.direct {
			continue
		}
		for _, o := range c.srv.part(c, j.conv.ID()) {
			if registered && !seen[o] {
				seen[o] = true
				o.send(ircmsg.MakeMessage(nil, src, "QUIT", "Quit"))
			}
		}
	}
	// The writer ends once the queue drains (or the peer stops reading
	// past the write timeout); the followers end with the context.
	select {
	case <-c.wdone:
	case <-time.After(c.srv.opts.WriteTimeout):
	}
	c.cancel()
	c.nc.Close()
	<-c.wdone
	c.wg.Wait()
	c.mu.Lock()
	if c.cutoff != nil {
		c.cutoff.Stop()
	}
	c.mu.Unlock()
	c.srv.remove(c, nick)
}

// watchCredential watches the credential the client logged in with
// (Options.Watch) until the connection ends.
func (c *conn) watchCredential(token, principal string) {
	w := c.srv.opts.Watch
	if w == nil {
		return
	}
	stop := w(token, principal, c.revoked) // may call revoked at once: c.mu is free
	c.mu.Lock()
	c.stopWatch = stop
	c.mu.Unlock()
}

// revoked ends a connection whose credential was revoked: it acts no more
// at once (a command being read now is refused), what is queued is
// dropped, and it gets "ERROR :Closing link (Credentials revoked)"; a
// writer stuck on a client that does not read is cut a second later.
// Called once, from any goroutine; it does not block.
func (c *conn) revoked() {
	c.mu.Lock()
	c.authed = false
	if c.cutoff == nil && !c.ended {
		c.cutoff = time.AfterFunc(time.Second, func() { c.nc.Close() })
	}
	c.mu.Unlock()
	c.quit("Credentials revoked", true)
}
