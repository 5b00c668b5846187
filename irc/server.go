package irc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/defaults"
)

// Agent is one agent the server serves: its id is its nick.
type Agent struct {
	ID    string
	Agent agentik.Agent
}

// Defaults of Options.
const (
	DefaultServerName          = "agentik"
	DefaultNetwork             = "Agentik"
	DefaultHistoryLines        = 20
	DefaultChathistoryMax      = 100
	DefaultFloodBurst          = 5
	DefaultFloodRate           = 2
	DefaultSendQBytes          = 128 << 10
	DefaultPingInterval        = 90 * time.Second
	DefaultPingTimeout         = 60 * time.Second
	DefaultRegistrationTimeout = 60 * time.Second
	DefaultWriteTimeout        = 15 * time.Second
	DefaultSendQWait           = 5 * time.Second
	DefaultMaxClients          = 1000
	DefaultMaxUnregistered     = 256
	DefaultMaxUnregisteredAddr = 16
	DefaultMaxChannels         = 100
)

// Options configures a Server. Zero values take the defaults above, except
// HistoryLines (0: no history on JOIN) and IdleTimeout (0: never).
type Options struct {
	// Agents are the agents served, each a user whose nick is its id. The
	// first is the default agent: named channels without "@agent" are its
	// conversations. At least one is required.
	Agents []Agent
	// MayUse reports whether principal may use the agent with this id; an
	// agent it may not use does not exist for it. Nil: every principal may
	// use every agent.
	MayUse func(principal, agentID string) bool
	// Authenticate maps credentials to a principal: SASL PLAIN gives user =
	// the principal it claims and token = the password; PASS gives user =
	// "" (a bare token) or the part before the first ':' of
	// "principal:token". False refuses them. Nil: an open server where every
	// client acts as the anonymous principal and SASL is not offered.
	Authenticate func(user, token string) (principal string, ok bool)
	// Watch watches the credential a client logged in with (the token and
	// the principal Authenticate gave) for as long as the connection lasts:
	// it calls revoked once, without blocking, when the credential stops
	// being valid (then the client is sent "ERROR :Closing link
	// (Credentials revoked)" and disconnected at once); stop ends the
	// watch. Nil: credentials are checked only when a client logs in.
	Watch func(token, principal string, revoked func()) (stop func() bool)

	ServerName string // the server's name in prefixes and numerics
	Network    string // ISUPPORT NETWORK
	Version    string // shown in 002/004 and CTCP VERSION
	MOTD       []string

	// HistoryLines: lines of history a client without draft/chathistory
	// gets on JOIN (0: none; negative: DefaultHistoryLines).
	HistoryLines int
	// ChathistoryMax is the most messages one CHATHISTORY request returns
	// (ISUPPORT CHATHISTORY); larger limits are clamped to it.
	ChathistoryMax int
	// FloodBurst lines may be sent at once, then FloodRate per second;
	// lines beyond wait. FloodRate < 0 turns flood control off.
	FloodBurst int
	FloodRate  float64
	// SendQBytes bounds what is queued for one client; a client whose queue
	// would pass it is disconnected ("SendQ exceeded"). Lines of the
	// client's conversations fill at most half of it and wait for room, up
	// to SendQWait (then the client is disconnected likewise); replies to
	// its commands wait up to WriteTimeout.
	SendQBytes int
	// SendQWait: how long a line of a conversation waits for room in a
	// client's send queue (default DefaultSendQWait, at most half of
	// WriteTimeout).
	SendQWait time.Duration
	// PingInterval: a client silent this long is sent PING; PingTimeout
	// later without an answer it is disconnected.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// RegistrationTimeout: a connection not registered by then is closed —
	// on a server with Authenticate, also one not logged in by then.
	RegistrationTimeout time.Duration
	// IdleTimeout: a registered client that sends no command other than
	// PING and PONG for this long is disconnected. 0: never.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write to a client and the wait of a reply
	// for room in a full send queue.
	WriteTimeout time.Duration
	MaxClients   int // connections at once; more are refused
	MaxChannels  int // channels one client may be in
	// MaxUnregistered bounds the connections at once that may not act yet
	// (not registered, or not logged in on a server with Authenticate);
	// MaxUnregisteredPerAddr bounds them per remote address (an IPv4
	// address, an IPv6 /64). A connection past either is refused at once;
	// clients that may act are never counted nor refused for them.
	MaxUnregistered        int
	MaxUnregisteredPerAddr int
	// IfBusy is the busy policy of messages sent while a turn runs
	// (default enqueue).
	IfBusy string
	// ImageURL returns the authenticated HTTP URL of the n-th image (from
	// 0) of the journal message with this seq, or "" when there is none.
	ImageURL func(agentID, conversationID string, seq int64, n int) string
	Logger   *slog.Logger
}

func (o *Options) setDefaults() {
	defaults.String(&o.ServerName, DefaultServerName)
	defaults.String(&o.Network, DefaultNetwork)
	defaults.String(&o.Version, "dev")
	if o.HistoryLines < 0 {
		o.HistoryLines = DefaultHistoryLines
	}
	defaults.Positive(&o.ChathistoryMax, DefaultChathistoryMax)
	o.ChathistoryMax = min(o.ChathistoryMax, agentik.MaxMessagesLimit)
	defaults.Positive(&o.FloodBurst, DefaultFloodBurst)
	if o.FloodRate == 0 {
		o.FloodRate = DefaultFloodRate
	}
	defaults.Positive(&o.SendQBytes, DefaultSendQBytes)
	defaults.Positive(&o.PingInterval, DefaultPingInterval)
	defaults.Positive(&o.PingTimeout, DefaultPingTimeout)
	defaults.Positive(&o.RegistrationTimeout, DefaultRegistrationTimeout)
	defaults.Positive(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.Positive(&o.SendQWait, DefaultSendQWait)
	// A client that stops reading is then cut off for its queue before the
	// writer's blocked write to it times out: the reason can still reach it.
	o.SendQWait = min(o.SendQWait, o.WriteTimeout/2)
	defaults.Positive(&o.MaxClients, DefaultMaxClients)
	defaults.Positive(&o.MaxUnregistered, DefaultMaxUnregistered)
	defaults.Positive(&o.MaxUnregisteredPerAddr, DefaultMaxUnregisteredAddr)
	defaults.Positive(&o.MaxChannels, DefaultMaxChannels)
	defaults.String(&o.IfBusy, agentik.BusyEnqueue)
	defaults.Logger(&o.Logger)
}

// maxRefusing bounds the connections being told at once why they are
// refused (each for at most a second); more are closed without a word.
const maxRefusing = 64

// agentUser is an agent as the server shows it.
type agentUser struct {
	id    string
	nick  string
	agent agentik.Agent
}

func (a *agentUser) source(server string) string { return a.nick + "!" + a.nick + "@" + server }

// Server is an IRC server in front of agents: channels are conversations,
// the agents are users. It is safe for concurrent use. Each connection is
// owned by a goroutine the server starts and waits for.
type Server struct {
	opts    Options
	log     *slog.Logger
	agents  []*agentUser
	byNick  map[string]*agentUser // folded nick
	byID    map[string]*agentUser
	created time.Time

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	nicks     map[string]*conn              // folded nick → client
	unreg     map[string]int                // remote address → its connections that may not act yet
	unregN    int                           // connections that may not act yet
	refusing  chan struct{}                 // one per connection being refused (maxRefusing)
	members   map[string]map[*conn]struct{} // conversation id → clients in its channel
	recalled  map[string]*recalled          // conversation id → what the server remembers of it (recall.go)
	closing   bool
	nextID    uint64
	wg        sync.WaitGroup
}

// NewServer returns a server of opts.Agents. It does no I/O.
func NewServer(opts Options) (*Server, error) {
	opts.setDefaults()
	if len(opts.Agents) == 0 {
		return nil, errors.New("irc: no agents")
	}
	if !agentik.ValidBusyPolicy(opts.IfBusy) {
		return nil, fmt.Errorf("irc: unknown busy policy %q", opts.IfBusy)
	}
	s := &Server{opts: opts, log: opts.Logger, byNick: map[string]*agentUser{}, byID: map[string]*agentUser{},
		created: time.Now(), listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{},
		nicks: map[string]*conn{}, unreg: map[string]int{}, refusing: make(chan struct{}, maxRefusing),
		members: map[string]map[*conn]struct{}{}, recalled: map[string]*recalled{}}
	for _, a := range opts.Agents {
		if a.Agent == nil || a.ID == "" {
			return nil, errors.New("irc: an agent without id")
		}
		u := &agentUser{id: a.ID, nick: nickOf(a.ID), agent: a.Agent}
		if _, dup := s.byNick[fold(u.nick)]; dup {
			return nil, fmt.Errorf("irc: agents %q and another have the same nick %q", a.ID, u.nick)
		}
		s.agents = append(s.agents, u)
		s.byNick[fold(u.nick)] = u
		s.byID[a.ID] = u
	}
	return s, nil
}

// Serve accepts connections on ln until it is closed or the server shuts
// down; it returns nil then. Serve may be called for several listeners.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	addr := addrKey(nc.RemoteAddr())
	s.mu.Lock()
	var reason string
	switch {
	case s.closing:
		reason = "Server shutting down"
	case len(s.conns) >= s.opts.MaxClients:
		reason = "Too many connections"
	case s.unreg[addr] >= s.opts.MaxUnregisteredPerAddr:
		reason = "Too many unregistered connections from your address"
	case s.unregN >= s.opts.MaxUnregistered:
		reason = "Too many unregistered connections"
	}
	if reason != "" {
		refuse := !s.closing
		if refuse {
			select {
			case s.refusing <- struct{}{}:
				s.wg.Add(1)
			default: // refusing too many at once: no word
				refuse = false
			}
		}
		s.mu.Unlock()
		if !refuse {
			nc.Close()
			return
		}
		// On its own goroutine: over TLS the line waits for the
		// handshake, which must not hold up the next Accept.
		go func() {
			defer s.wg.Done()
			defer func() { <-s.refusing }()
			nc.SetDeadline(time.Now().Add(time.Second))
			nc.Write([]byte("ERROR :Closing link (" + reason + ")\r\n"))
			nc.Close()
		}()
		return
	}
	s.nextID++
	c := newConn(s, nc, s.nextID)
	c.addr, c.unreg = addr, true
	s.unreg[addr]++
	s.unregN++
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		c.run()
	}()
}

// addrKey is the remote address connections are counted under: the IP
// address, for IPv6 its /64 (what one host is commonly given).
func addrKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		if h, _, err := net.SplitHostPort(a.String()); err == nil {
			return h
		}
		return a.String()
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// admitted stops counting c among the connections that may not act yet.
// Idempotent.
func (s *Server) admitted(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uncountLocked(c)
}

func (s *Server) uncountLocked(c *conn) {
	if !c.unreg {
		return
	}
	c.unreg = false
	s.unregN--
	if s.unreg[c.addr]--; s.unreg[c.addr] <= 0 {
		delete(s.unreg, c.addr)
	}
}

// Unregistered returns the number of connections that may not act yet.
func (s *Server) Unregistered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unregN
}

// BeginShutdown stops accepting connections and refuses new messages; the
// connected clients stay, so the answers of running turns still reach them.
// Idempotent.
func (s *Server) BeginShutdown() {
	s.mu.Lock()
	s.closing = true
	lns := make([]net.Listener, 0, len(s.listeners))
	for ln := range s.listeners {
		lns = append(lns, ln)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Close begins the shutdown, sends every client "ERROR :Closing link" and
// waits until each connection has flushed and closed, or ctx ends (the rest
// are then closed at once). Idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.BeginShutdown()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.quit("Server shutting down", false)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	for _, c := range conns {
		c.nc.Close()
	}
	<-done
	return ctx.Err()
}

// Clients returns the number of connected clients.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// mayUse reports whether principal may use agent a.
func (s *Server) mayUse(principal string, a *agentUser) bool {
	return s.opts.MayUse == nil || s.opts.MayUse(principal, a.id)
}

// agentByNick returns the agent with this nick that principal may use.
func (s *Server) agentByNick(principal, nick string) *agentUser {
	a := s.byNick[fold(nick)]
	if a == nil || !s.mayUse(principal, a) {
		return nil
	}
	return a
}

// claimNick reserves nick for c, releasing its old one; false when another
// client has it, or it is the server's name. Agents' nicks are the caller's
// to check (conn.agentNamed): an agent a client cannot see does not hold
// its nick for that client.
func (s *Server) claimNick(c *conn, old, nick string) bool {
	k := fold(nick)
	if k == fold(s.opts.ServerName) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, ok := s.nicks[k]; ok && other != c {
		return false
	}
	if old != "" && fold(old) != k {
		delete(s.nicks, fold(old))
	}
	s.nicks[k] = c
	return true
}

// releaseNick frees nick if c holds it.
func (s *Server) releaseNick(c *conn, nick string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nicks[fold(nick)] == c {
		delete(s.nicks, fold(nick))
	}
}

func (s *Server) nickOwner(nick string) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nicks[fold(nick)]
}

// join records c in the channel of conversation id and returns the other
// clients there.
func (s *Server) join(c *conn, id string) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[id]
	if m == nil {
		m = map[*conn]struct{}{}
		s.members[id] = m
	}
	others := make([]*conn, 0, len(m))
	for o := range m {
		if o != c {
			others = append(others, o)
		}
	}
	m[c] = struct{}{}
	return others
}

// part removes c from the channel of conversation id and returns the
// clients left there.
func (s *Server) part(c *conn, id string) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[id]
	delete(m, c)
	if len(m) == 0 {
		delete(s.members, id)
	}
	others := make([]*conn, 0, len(m))
	for o := range m {
		others = append(others, o)
	}
	return others
}

// channelMembers returns the clients in the channel of conversation id.
func (s *Server) channelMembers(id string) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.members[id]))
	for o := range s.members[id] {
		out = append(out, o)
	}
	return out
}

// principalConns returns the registered clients acting for principal.
func (s *Server) principalConns(principal string) []*conn {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	out := conns[:0]
	for _, c := range conns {
		if p, ok := c.acting(); ok && p == principal {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) remove(c *conn, nick string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.uncountLocked(c)
	if nick != "" && s.nicks[fold(nick)] == c {
		delete(s.nicks, fold(nick))
	}
}

// isupport is the server's RPL_ISUPPORT tokens.
func (s *Server) isupport() []string {
	return []string{
		"AWAYLEN=200", "BOT=B", "CASEMAPPING=ascii", fmt.Sprintf("CHANLIMIT=#:%d", s.opts.MaxChannels),
		"CHANMODES=b,,,nt", fmt.Sprintf("CHANNELLEN=%d", maxChannelLen), "CHANTYPES=#",
		fmt.Sprintf("CHATHISTORY=%d", s.opts.ChathistoryMax), "CLIENTTAGDENY=*", "ELIST=",
		"LINELEN=512", "MSGREFTYPES=msgid,timestamp",
		"NETWORK=" + s.opts.Network, fmt.Sprintf("NICKLEN=%d", maxNickLen), "PREFIX=(o)@",
		"TARGMAX=PRIVMSG:4,NOTICE:4,TAGMSG:4,JOIN:,PART:,NAMES:1,WHOIS:1",
		fmt.Sprintf("TOPICLEN=%d", maxTopicLen), fmt.Sprintf("USERLEN=%d", maxUserLen), "UTF8ONLY",
	}
}

// motd is the message of the day: the configured one, or how to use the
// server, naming the agents sees lets the client see.
func (s *Server) motd(sees func(*agentUser) bool) []string {
	if len(s.opts.MOTD) > 0 {
		return s.opts.MOTD
	}
	def := "the default agent"
	if sees(s.agents[0]) {
		def = s.agents[0].nick
	}
	lines := []string{
		"Agentik: every channel is a conversation with an agent.",
		"  /join #<name>          your conversation <name> with " + def + " (created on join)",
		"  /join #<name>@<agent>  your conversation <name> with another agent",
		"  /join #<id>            an existing conversation of yours, by its id",
		"  /msg <agent> <text>    your direct conversation with that agent",
		"  /topic <title>         renames the conversation; /list shows yours",
		"  !stop                  interrupts the answer being written",
		"  !approve <id>          runs a tool call that waits for approval (the id alone when one waits)",
		"  !deny <id> [reason]    refuses it",
		"Tool calls and other events arrive as CTCP AGENTIK messages.",
	}
	var nicks []string
	for _, a := range s.agents {
		if sees(a) {
			nicks = append(nicks, a.nick)
		}
	}
	if len(nicks) == 0 {
		nicks = []string{"none you can see (log in first?)"}
	}
	lines = append(lines, "Agents: "+strings.Join(nicks, ", "))
	return lines
}
