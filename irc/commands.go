package irc

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
	"github.com/ergochat/irc-go/ircutils"
)

// command is one command's handler. fn returns false when the connection
// ends. preReg commands may be sent before registration completes; params
// is the least number of parameters (fewer: ERR_NEEDMOREPARAMS).
type command struct {
	fn     func(c *conn, r *reply, m ircmsg.Message) bool
	preReg bool
	params int
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"CAP":          {fn: (*conn).cmdCAP, preReg: true, params: 1},
		"AUTHENTICATE": {fn: (*conn).cmdAUTHENTICATE, preReg: true, params: 1},
		"PASS":         {fn: (*conn).cmdPASS, preReg: true, params: 1},
		"NICK":         {fn: (*conn).cmdNICK, preReg: true},
		"USER":         {fn: (*conn).cmdUSER, preReg: true, params: 4},
		"PING":         {fn: (*conn).cmdPING, preReg: true, params: 1},
		"PONG":         {fn: (*conn).cmdPONG, preReg: true},
		"QUIT":         {fn: (*conn).cmdQUIT, preReg: true},
		"MOTD":         {fn: (*conn).cmdMOTD},
		"AWAY":         {fn: (*conn).cmdAWAY},
		"USERHOST":     {fn: (*conn).cmdUSERHOST, params: 1},
		"ISON":         {fn: (*conn).cmdISON, params: 1},
		"MODE":         {fn: (*conn).cmdMODE, params: 1},
		"WHOIS":        {fn: (*conn).cmdWHOIS, params: 1},
		"WHO":          {fn: (*conn).cmdWHO},
		"NAMES":        {fn: (*conn).cmdNAMES},
		"LIST":         {fn: (*conn).cmdLIST},
		"TOPIC":        {fn: (*conn).cmdTOPIC, params: 1},
		"JOIN":         {fn: (*conn).cmdJOIN, params: 1},
		"PART":         {fn: (*conn).cmdPART, params: 1},
		"PRIVMSG":      {fn: (*conn).cmdPRIVMSG},
		"NOTICE":       {fn: (*conn).cmdNOTICE},
		"TAGMSG":       {fn: (*conn).cmdTAGMSG, params: 1},
		"CHATHISTORY":  {fn: (*conn).cmdCHATHISTORY},
		"VERSION":      {fn: (*conn).cmdVERSION},
	}
}

// --- registration -----------------------------------------------------------

func (c *conn) authOn() bool { return c.srv.opts.Authenticate != nil }

// offered is the capability list of CAP LS: sasl only when there is auth.
func (c *conn) offered(v302 bool) []string {
	var out []string
	for _, cp := range capNames {
		switch {
		case cp.bit == capSASL && !c.authOn():
			continue
		case cp.bit == capSASL && v302:
			out = append(out, "sasl=PLAIN")
		default:
			out = append(out, cp.name)
		}
	}
	return out
}

func (c *conn) cmdCAP(r *reply, m ircmsg.Message) bool {
	srv := c.srv.opts.ServerName
	nick := c.target()
	sub := strings.ToUpper(m.Params[0])
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	switch sub {
	case "LS":
		if !registered {
			c.capHold = true
		}
		v, _ := strconv.Atoi(m.Params[min(1, len(m.Params)-1)])
		v302 := v >= 302
		if v302 {
			c.caps.Or(uint32(capCapNotify)) // implicit with 302
		}
		caps := c.offered(v302)
		// One line fits every capability offered; continuation lines
		// ("CAP * LS * :…") are for longer lists.
		r.add(ircmsg.MakeMessage(nil, srv, "CAP", nick, "LS", strings.Join(caps, " ")))
	case "LIST":
		var on []string
		cs := c.capSet()
		for _, cp := range capNames {
			if cs.has(cp.bit) {
				on = append(on, cp.name)
			}
		}
		r.add(ircmsg.MakeMessage(nil, srv, "CAP", nick, "LIST", strings.Join(on, " ")))
	case "REQ":
		if !registered {
			c.capHold = true
		}
		if len(m.Params) < 2 {
			r.add(c.numeric(errInvalidCapCmd, "REQ", "Not enough parameters"))
			return true
		}
		req := m.Params[len(m.Params)-1]
		var add, del capSet
		ok := true
		for _, name := range strings.Fields(req) {
			remove := strings.HasPrefix(name, "-")
			name = strings.TrimPrefix(name, "-")
			bit := capSet(0)
			for _, cp := range capNames {
				if cp.name == name && (cp.bit != capSASL || c.authOn()) {
					bit = cp.bit
				}
			}
			if bit == 0 {
				ok = false
				break
			}
			if remove {
				del |= bit
			} else {
				add |= bit
			}
		}
		if !ok || strings.TrimSpace(req) == "" {
			r.add(ircmsg.MakeMessage(nil, srv, "CAP", nick, "NAK", req))
			return true
		}
		for {
			old := c.caps.Load()
			if c.caps.CompareAndSwap(old, (old|uint32(add))&^uint32(del)) {
				break
			}
		}
		r.add(ircmsg.MakeMessage(nil, srv, "CAP", nick, "ACK", req))
	case "END":
		if !registered {
			c.capHold = false
			return c.maybeRegister(r)
		}
	default:
		r.add(c.numeric(errInvalidCapCmd, m.Params[0], "Invalid CAP command"))
	}
	return true
}

func (c *conn) cmdPASS(r *reply, m ircmsg.Message) bool {
	c.mu.Lock()
	registered := c.registered
	c.mu.Unlock()
	if registered {
		r.add(c.numeric(errAlreadyRegistered, "You may not reregister"))
		return true
	}
	c.pass = m.Params[len(m.Params)-1]
	return true
}

func (c *conn) cmdAUTHENTICATE(r *reply, m ircmsg.Message) bool {
	arg := m.Params[0]
	c.mu.Lock()
	authed := c.authed
	c.mu.Unlock()
	switch {
	case !c.authOn() || !c.capSet().has(capSASL):
		r.add(c.numeric(errSASLFail, "SASL authentication failed"))
		return true
	case authed:
		r.add(c.numeric(errSASLAlready, "You have already authenticated using SASL"))
		return true
	case arg == "*":
		if c.saslMech != "" {
			c.saslMech = ""
			c.sasl.Clear()
			r.add(c.numeric(errSASLAborted, "SASL authentication aborted"))
		} else {
			r.add(c.numeric(errSASLFail, "SASL authentication failed"))
		}
		return true
	case c.saslMech == "":
		if !strings.EqualFold(arg, "PLAIN") {
			r.add(c.numeric(rplSASLMechs, "PLAIN", "are available SASL mechanisms"))
			r.add(c.numeric(errSASLFail, "SASL authentication failed"))
			return true
		}
		c.saslMech = "PLAIN"
		r.add(ircmsg.MakeMessage(nil, "", "AUTHENTICATE", "+"))
		return true
	}
	done, raw, err := c.sasl.Add(arg)
	if !done {
		return true
	}
	c.saslMech = ""
	if errors.Is(err, ircutils.ErrSASLLimitExceeded) || errors.Is(err, ircutils.ErrSASLTooLong) {
		r.add(c.numeric(errSASLTooLong, "SASL message too long"))
		return true
	}
	// PLAIN: authzid NUL authcid NUL password.
	parts := bytes.Split(raw, []byte{0})
	if err == nil && len(parts) == 3 {
		authz, authc, token := string(parts[0]), string(parts[1]), string(parts[2])
		if p, ok := c.srv.opts.Authenticate(authc, token); ok && p == authc && (authz == "" || authz == authc) {
			c.loggedIn(r, p, token)
			r.add(c.numeric(rplSASLSuccess, "SASL authentication successful"))
			return true
		}
	}
	c.saslFails++
	r.add(c.numeric(errSASLFail, "SASL authentication failed"))
	if c.saslFails >= 3 {
		c.finish(r)
		*r = reply{}
		c.quit("Too many failed authentication attempts", false)
		return false
	}
	return true
}

// loggedIn makes the client act for principal p (RPL_LOGGEDIN), which
// token authenticated.
func (c *conn) loggedIn(r *reply, p, token string) {
	c.mu.Lock()
	c.principal, c.authed = p, true
	registered := c.registered
	src := c.sourceLocked()
	if c.nick == "" {
		src = "*" // no nick yet (SASL before NICK): "*", as ergo
	}
	c.mu.Unlock()
	c.watchCredential(token, p)
	r.add(c.numeric(rplLoggedIn, src, p, "You are now logged in as "+p))
	if registered {
		c.renameFromAgent(r)
		c.srv.admitted(c)
		c.attachDirect()
		c.watchAgents()
	}
}

// renameFromAgent gives a client that logged in after registering a new
// nick when its nick is one of the agents it now sees (it could take it
// while it saw none).
func (c *conn) renameFromAgent(r *reply) {
	c.mu.Lock()
	old, src := c.nick, c.sourceLocked()
	c.mu.Unlock()
	if c.agentNamed(old) == nil {
		return
	}
	// Clients are finite: one of these is free.
	nick := "Guest" + strconv.FormatUint(c.id, 10)
	for n := 1; c.agentNamed(nick) != nil || !c.srv.claimNick(c, old, nick); n++ {
		nick = "Guest" + strconv.FormatUint(c.id, 10) + "-" + strconv.Itoa(n)
	}
	c.mu.Lock()
	c.nick = nick
	c.mu.Unlock()
	r.add(ircmsg.MakeMessage(nil, src, "NICK", nick))
}

func (c *conn) cmdNICK(r *reply, m ircmsg.Message) bool {
	if len(m.Params) == 0 || m.Params[0] == "" {
		r.add(c.numeric(errNoNicknameGiven, "No nickname given"))
		return true
	}
	nick := m.Params[0]
	if !validNick(nick) {
		r.add(c.numeric(errErroneusNickname, nick, "Erroneous nickname"))
		return true
	}
	c.mu.Lock()
	old, registered, src := c.nick, c.registered, c.sourceLocked()
	c.mu.Unlock()
	if old == nick {
		return true
	}
	// An agent the client sees holds its nick; one it does not see does
	// not (a 433 would tell that it exists). Before a client logs in it
	// sees none; registration checks the nick again then.
	if c.agentNamed(nick) != nil || !c.srv.claimNick(c, old, nick) {
		r.add(c.numeric(errNicknameInUse, nick, "Nickname is already in use"))
		return true
	}
	c.mu.Lock()
	c.nick = nick
	chans := slices.Collect(maps.Values(c.channels))
	c.mu.Unlock()
	if !registered {
		return c.maybeRegister(r)
	}
	change := ircmsg.MakeMessage(nil, src, "NICK", nick)
	r.add(change)
	seen := map[*conn]bool{c: true}
	for _, j := range chans {
		for _, o := range c.srv.channelMembers(j.conv.ID()) {
			if !seen[o] {
				seen[o] = true
				o.send(change)
			}
		}
	}
	return true
}

func (c *conn) cmdUSER(r *reply, m ircmsg.Message) bool {
	c.mu.Lock()
	if c.registered || c.user != "" {
		c.mu.Unlock()
		r.add(c.numeric(errAlreadyRegistered, "You may not reregister"))
		return true
	}
	user := nickOf(m.Params[0])
	if len(user) > maxUserLen {
		user = user[:maxUserLen]
	}
	c.user, c.realname = user, m.Params[3]
	c.mu.Unlock()
	return c.maybeRegister(r)
}

// maybeRegister completes registration once NICK and USER are in and
// capability negotiation is over: PASS is checked, the welcome sent.
func (c *conn) maybeRegister(r *reply) bool {
	c.mu.Lock()
	ready := !c.registered && c.nick != "" && c.user != "" && !c.capHold
	authed := c.authed
	c.mu.Unlock()
	if !ready {
		return true
	}
	if c.authOn() && !authed && c.pass != "" {
		p, token, ok := c.checkPass(c.pass)
		if !ok {
			r.add(c.numeric(errPasswdMismatch, "Password incorrect"))
			c.finish(r)
			*r = reply{}
			c.quit("Bad password", false)
			return false
		}
		c.mu.Lock()
		c.principal, c.authed = p, true
		c.mu.Unlock()
		c.watchCredential(token, p)
		c.passLogin = true
	}
	c.pass = ""
	// The nick was claimed before the client's agents were known: one of
	// them has it after all.
	c.mu.Lock()
	nick := c.nick
	c.mu.Unlock()
	if c.agentNamed(nick) != nil {
		c.mu.Lock()
		c.nick = ""
		c.mu.Unlock()
		c.srv.releaseNick(c, nick)
		r.add(c.numeric(errNicknameInUse, nick, "Nickname is already in use"))
		return true
	}
	c.mu.Lock()
	c.registered = true
	nick, src, principal := c.nick, c.sourceLocked(), c.principal
	authed = c.authed
	c.mu.Unlock()
	o := c.srv.opts
	r.add(c.numeric(rplWelcome, "Welcome to the "+o.Network+" IRC gateway, "+nick))
	r.add(c.numeric(rplYourHost, "Your host is "+o.ServerName+", running agentik "+o.Version))
	r.add(c.numeric(rplCreated, "This server was created "+c.srv.created.UTC().Format(time.RFC1123)))
	r.add(c.numeric(rplMyInfo, o.ServerName, "agentik-"+o.Version, "iB", "bnt", "b"))
	tokens := c.srv.isupport()
	for len(tokens) > 0 {
		n := min(len(tokens), 12)
		r.add(c.numeric(rplISupport, append(tokens[:n:n], "are supported by this server")...))
		tokens = tokens[n:]
	}
	if authed && c.passLogin {
		r.add(c.numeric(rplLoggedIn, src, principal, "You are now logged in as "+principal))
	} else if !authed && c.authOn() {
		r.add(c.notice("You are not logged in: authenticate with SASL PLAIN (user = your principal, password = your token) or PASS <token> to join channels and talk to agents."))
	}
	c.motd(r)
	if _, ok := c.acting(); ok {
		c.srv.admitted(c)
		c.attachDirect()
		c.watchAgents()
	}
	return true
}

// checkPass checks a PASS value: a bare token, or "principal:token". It
// returns the principal and the token.
func (c *conn) checkPass(v string) (string, string, bool) {
	if p, ok := c.srv.opts.Authenticate("", v); ok {
		return p, v, true
	}
	if user, token, found := strings.Cut(v, ":"); found {
		if p, ok := c.srv.opts.Authenticate(user, token); ok && p == user {
			return p, token, true
		}
	}
	return "", "", false
}

func (c *conn) motd(r *reply) {
	srv := c.srv.opts.ServerName
	r.add(c.numeric(rplMOTDStart, "- "+srv+" Message of the day - "))
	for _, l := range c.srv.motd(c.sees) {
		r.add(c.numeric(rplMOTD, "- "+l))
	}
	r.add(c.numeric(rplEndOfMOTD, "End of /MOTD command."))
}

func (c *conn) cmdMOTD(r *reply, m ircmsg.Message) bool { c.motd(r); return true }

func (c *conn) cmdPING(r *reply, m ircmsg.Message) bool {
	srv := c.srv.opts.ServerName
	r.add(ircmsg.MakeMessage(nil, srv, "PONG", srv, m.Params[len(m.Params)-1]))
	return true
}

func (c *conn) cmdPONG(r *reply, m ircmsg.Message) bool { return true }

func (c *conn) cmdQUIT(r *reply, m ircmsg.Message) bool {
	reason := "Client quit"
	if len(m.Params) > 0 && m.Params[0] != "" {
		reason = "Quit: " + m.Params[0]
	}
	c.finish(r)
	*r = reply{}
	c.quit(reason, false)
	return false
}

func (c *conn) cmdVERSION(r *reply, m ircmsg.Message) bool {
	o := c.srv.opts
	r.add(c.numeric("351", "agentik-"+o.Version, o.ServerName, "Agentik IRC gateway"))
	tokens := c.srv.isupport()
	for len(tokens) > 0 {
		n := min(len(tokens), 12)
		r.add(c.numeric(rplISupport, append(tokens[:n:n], "are supported by this server")...))
		tokens = tokens[n:]
	}
	return true
}

// --- users ----------------------------------------------------------------

func (c *conn) cmdAWAY(r *reply, m ircmsg.Message) bool {
	msg := ""
	if len(m.Params) > 0 {
		msg = m.Params[0]
	}
	c.mu.Lock()
	c.away = msg
	c.mu.Unlock()
	if msg == "" {
		r.add(c.numeric(rplUnAway, "You are no longer marked as being away"))
	} else {
		r.add(c.numeric(rplNowAway, "You have been marked as being away"))
	}
	return true
}

// userInfo describes a nick: an agent the client may use, or a client.
type userInfo struct {
	nick, user, host, real string
	bot                    bool
	away                   bool
}

func (c *conn) lookupUser(nick string) (userInfo, bool) {
	if a := c.agentNamed(nick); a != nil {
		info := a.agent.Info()
		real := info.Name
		if info.Description != "" {
			real += " — " + info.Description
		}
		return userInfo{nick: a.nick, user: a.nick, host: c.srv.opts.ServerName, real: real, bot: true}, true
	}
	if o := c.srv.nickOwner(nick); o != nil {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.registered {
			return userInfo{nick: o.nick, user: o.user, host: o.host, real: o.realname, away: o.away != ""}, true
		}
	}
	return userInfo{}, false
}

func (c *conn) cmdUSERHOST(r *reply, m ircmsg.Message) bool {
	var out []string
	for _, n := range m.Params[:min(len(m.Params), 5)] {
		if u, ok := c.lookupUser(n); ok {
			away := "+"
			if u.away {
				away = "-"
			}
			out = append(out, u.nick+"="+away+u.user+"@"+u.host)
		}
	}
	r.add(c.numeric(rplUserHost, strings.Join(out, " ")))
	return true
}

func (c *conn) cmdISON(r *reply, m ircmsg.Message) bool {
	var out []string
	for _, p := range m.Params {
		for _, n := range strings.Fields(p) {
			if u, ok := c.lookupUser(n); ok {
				out = append(out, u.nick)
			}
		}
	}
	r.add(c.numeric(rplIsOn, strings.Join(out, " ")))
	return true
}

func (c *conn) cmdWHOIS(r *reply, m ircmsg.Message) bool {
	nick := m.Params[len(m.Params)-1]
	u, ok := c.lookupUser(nick)
	if !ok {
		r.add(c.numeric(errNoSuchNick, nick, "No such nick/channel"))
		r.add(c.numeric(rplEndOfWhois, nick, "End of /WHOIS list"))
		return true
	}
	r.add(c.numeric(rplWhoisUser, u.nick, u.user, u.host, "*", u.real))
	r.add(c.numeric(rplWhoisServer, u.nick, c.srv.opts.ServerName, c.srv.opts.Network))
	if u.bot {
		r.add(c.numeric(rplWhoisBot, u.nick, "is a bot (an Agentik agent)"))
	}
	r.add(c.numeric(rplEndOfWhois, u.nick, "End of /WHOIS list"))
	return true
}

func (c *conn) cmdMODE(r *reply, m ircmsg.Message) bool {
	t := m.Params[0]
	if t != "" && t[0] == '#' {
		j := c.joinedChannel(t)
		if j == nil {
			if len(m.Params) == 1 {
				r.add(c.numeric(errNotOnChannel, t, "You're not on that channel"))
			} else {
				r.add(c.numeric(errChanOPrivsNeeded, t, "You're not channel operator"))
			}
			return true
		}
		switch {
		case len(m.Params) == 1:
			r.add(c.numeric(rplChannelModeIs, j.name, "+nt"))
			r.add(c.numeric(rplCreationTime, j.name, j.created))
		case strings.Trim(m.Params[1], "+") == "b":
			r.add(c.numeric(rplEndOfBanList, j.name, "End of channel ban list"))
		default:
			r.add(c.numeric(errChanOPrivsNeeded, j.name, "You're not channel operator"))
		}
		return true
	}
	if fold(t) != fold(c.currentNick()) {
		r.add(c.numeric(errUsersDontMatch, "Can't change mode for other users"))
		return true
	}
	if len(m.Params) > 1 {
		for _, ch := range m.Params[1] {
			if ch != '+' && ch != '-' && ch != 'i' {
				r.add(c.numeric(errUModeUnknownFlag, "Unknown MODE flag"))
				return true
			}
		}
	}
	r.add(c.numeric(rplUModeIs, "+i"))
	return true
}

func (c *conn) cmdNOTICE(r *reply, m ircmsg.Message) bool {
	return true // notices are never answered, and never reach an agent
}

func (c *conn) cmdTAGMSG(r *reply, m ircmsg.Message) bool {
	return true // client tags are not relayed (CLIENTTAGDENY=*)
}
