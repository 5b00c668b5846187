package irc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ergochat/irc-go/ircfmt"
	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
)

// joined is a conversation a client follows: a channel it joined, or its
// direct conversation with an agent. Its follower goroutine streams the
// conversation's events to the client until stop.
type joined struct {
	c       *conn
	name    string // the channel name as the client joined it; "" when direct
	direct  bool
	agent   *agentUser
	conv    agentik.Conversation
	created string // RPL_CREATIONTIME: unix seconds
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	// The client's own messages sent and not yet seen as user_message
	// events, oldest first (under c.mu): the event, when it comes, is the
	// echo-message echo, with the stored id and date.
	echoes []*pendingEcho
}

type pendingEcho struct {
	label string
	nick  string
	text  string
}

// stop ends the follower and waits for it.
func (j *joined) stop() {
	j.cancel()
	<-j.done
}

const maxInt64 = math.MaxInt64

// openChannel finds the conversation of a channel name for the caller; with
// create, a named conversation that does not exist yet is created.
func (c *conn) openChannel(ctx context.Context, name string, create bool) (*agentUser, agentik.Conversation, error) {
	principal := agentik.PrincipalFrom(ctx)
	key := fold(name)
	if isConversationName(key) {
		id := key[1:]
		for _, a := range c.srv.agents {
			if !c.srv.mayUse(principal, a) {
				continue
			}
			conv, err := a.agent.Conversation(ctx, id)
			if err == nil {
				return a, conv, nil
			}
			if !agentik.IsNotFound(err) {
				return nil, nil, err
			}
		}
		return nil, nil, agentik.Errorf(agentik.ENotFound, "you have no conversation %s", id)
	}
	base, agentNick := splitAgent(key)
	a := c.srv.agents[0]
	if agentNick != "" {
		a = c.srv.agentByNick(principal, agentNick)
	} else if !c.srv.mayUse(principal, a) {
		a = nil
	}
	if a == nil || !validChannel(base) {
		return nil, nil, agentik.Errorf(agentik.ENotFound, "no such agent")
	}
	conv, err := c.openNamed(ctx, a, channelID(a.id, principal, base), name, create)
	if err == nil {
		c.srv.rememberName(conv.ID(), name) // listed under it once renamed
	}
	return a, conv, err
}

// openNamed opens (with create: creates) the conversation id of agent a.
func (c *conn) openNamed(ctx context.Context, a *agentUser, id, title string, create bool) (agentik.Conversation, error) {
	conv, err := a.agent.Conversation(ctx, id)
	if err == nil || !create || !agentik.IsNotFound(err) {
		return conv, err
	}
	if _, err := a.agent.CreateConversation(ctx, agentik.CreateRequest{ID: id, Title: title}); err != nil {
		if agentik.ErrorCode(err) != agentik.EConflict {
			return nil, err
		}
		// Another client of the principal created it first — or another
		// principal holds this id (ids are derived, not secret): then it
		// stays not found.
	}
	return a.agent.Conversation(ctx, id)
}

// channelName is how a conversation is shown as a channel to this client:
// the name it joined it under, else its named form when the title still
// derives to its id, else the name the server remembers it by (a named
// conversation renamed since), else "#<id>".
func (c *conn) channelName(principal string, a *agentUser, info agentik.ConversationInfo) string {
	c.mu.Lock()
	for _, j := range c.channels {
		if j.conv.ID() == info.ID {
			c.mu.Unlock()
			return j.name
		}
	}
	c.mu.Unlock()
	if t := info.Title; validChannel(t) {
		base, agentNick := splitAgent(fold(t))
		owner := c.srv.agents[0]
		if agentNick != "" {
			owner = c.srv.byNick[agentNick]
		}
		if owner == a && validChannel(base) && channelID(a.id, principal, base) == info.ID {
			c.srv.rememberName(info.ID, t)
			return t
		}
	}
	if name := c.srv.nameOf(info.ID); name != "" {
		return name
	}
	return "#" + info.ID
}

func (c *conn) joinedChannel(name string) *joined {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.channels[fold(name)]
}

// nameFor is the name this client knows conversation id's channel by.
func (c *conn) nameFor(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range c.channels {
		if j.conv.ID() == id {
			return j.name
		}
	}
	return ""
}

// loginRequired is the refusal of a client that has not authenticated.
const loginRequired = "You need to log in first: SASL PLAIN (user = your principal, password = your token) or PASS <token>"

func (c *conn) cmdJOIN(r *reply, m ircmsg.Message) bool {
	if m.Params[0] == "0" {
		c.mu.Lock()
		var names []string
		for _, j := range c.channels {
			names = append(names, j.name)
		}
		c.mu.Unlock()
		for _, n := range names {
			c.part(r, n, "Left all channels")
		}
		return true
	}
	for _, name := range strings.Split(m.Params[0], ",") {
		if name != "" {
			c.join(r, name)
		}
	}
	return true
}

func (c *conn) join(r *reply, name string) {
	if !validChannel(name) {
		r.add(c.numeric(errBadChanName, name, "Illegal channel name"))
		return
	}
	key := fold(name)
	c.mu.Lock()
	_, in := c.channels[key]
	n := len(c.channels)
	c.mu.Unlock()
	if in {
		return
	}
	if n >= c.srv.opts.MaxChannels {
		r.add(c.numeric(errTooManyChannels, name, "You have joined too many channels"))
		return
	}
	if _, ok := c.acting(); !ok {
		r.add(c.numeric(errNeedReggedNick, name, loginRequired))
		return
	}
	if c.srv.isClosing() {
		r.add(c.numeric(errNoSuchChannel, name, "The server is shutting down"))
		return
	}
	ctx := c.pctx()
	a, conv, err := c.openChannel(ctx, name, true)
	if err != nil {
		r.add(c.numeric(errNoSuchChannel, name, c.failure(err)))
		return
	}
	if other := c.nameFor(conv.ID()); other != "" {
		r.add(c.numeric("443", c.currentNick(), name, "is already on channel (as "+other+")"))
		return
	}
	info, err := conv.Info(ctx)
	if err != nil {
		r.add(c.numeric(errNoSuchChannel, name, c.failure(err)))
		return
	}
	j := c.newJoined(a, conv, name)
	j.created = strconv.FormatInt(info.CreatedAt.Unix(), 10)
	// History for clients that do not fetch it themselves, read before
	// subscribing from the page's cursor: nothing in between is missed.
	var history []ircmsg.Message
	lines := c.srv.opts.HistoryLines
	if c.capSet().has(capChathistory) {
		lines = 0 // the client asks for history itself
	}
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Before: maxInt64, Limit: min(max(lines, 1), agentik.MaxMessagesLimit)})
	if err != nil {
		j.cancel()
		r.add(c.numeric(errNoSuchChannel, name, c.failure(err)))
		return
	}
	if lines > 0 {
		v := j.view()
		for i := range page.Messages {
			history = append(history, v.message(&page.Messages[i], true)...)
		}
		if len(history) > lines {
			history = history[len(history)-lines:]
		}
	}
	after := page.Cursor
	stream, err := conv.Events(j.ctx, after)
	if err != nil {
		j.cancel()
		r.add(c.numeric(errNoSuchChannel, name, c.failure(err)))
		return
	}
	c.mu.Lock()
	c.channels[key] = j
	c.mu.Unlock()
	src := c.source()
	others := c.srv.join(c, conv.ID())
	r.add(ircmsg.MakeMessage(nil, src, "JOIN", name))
	for _, o := range others {
		if on := o.nameFor(conv.ID()); on != "" {
			o.send(ircmsg.MakeMessage(nil, src, "JOIN", on))
		}
	}
	c.topic(r, j, info)
	c.names(r, j)
	if len(history) > 0 {
		ref := c.newBatchRef()
		r.add(ircmsg.MakeMessage(nil, c.srv.opts.ServerName, "BATCH", "+"+ref, "chathistory", name))
		for _, h := range history {
			h.SetTag("batch", ref)
			r.add(h)
		}
		r.add(ircmsg.MakeMessage(nil, c.srv.opts.ServerName, "BATCH", "-"+ref))
	}
	r.after = append(r.after, func() { c.startFollower(j, stream, after) })
}

// newJoined makes the record of a followed conversation; its context acts
// for the client's principal and ends with the connection.
func (c *conn) newJoined(a *agentUser, conv agentik.Conversation, name string) *joined {
	ctx, cancel := context.WithCancel(c.pctx())
	return &joined{c: c, name: name, direct: name == "", agent: a, conv: conv, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// startFollower runs j's follower unless the connection is ending.
func (c *conn) startFollower(j *joined, stream agentik.Stream[agentik.Event], after int64) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		stream.Close()
		j.cancel()
		close(j.done)
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer close(j.done)
		c.follow(j, stream, after)
	}()
}

// failure is the text of a refusal the client sees.
func (c *conn) failure(err error) string {
	if agentik.ErrorCode(err) == agentik.EInternal {
		c.srv.log.Error("irc: request failed", "client", c.id, "err", err)
	}
	return agentik.ErrorMessage(err)
}

func (c *conn) topic(r *reply, j *joined, info agentik.ConversationInfo) {
	if info.Title == "" {
		r.add(c.numeric(rplNoTopic, j.name, "No topic is set"))
		return
	}
	r.add(c.numeric(rplTopic, j.name, oneLine(info.Title, maxTopicLen)))
	// Who set the title and when, if this server saw it change; else the
	// agent, at the conversation's creation — exact for the title it was
	// created with (every channel made by JOIN). Conversation info keeps
	// no time of a rename (its updated_at is the last activity).
	set, ok := c.srv.topicOf(info.ID, info.Title)
	if !ok {
		set = topicSet{by: j.agent.source(c.srv.opts.ServerName), at: info.CreatedAt.Time}
	}
	r.add(c.numeric(rplTopicWhoTime, j.name, set.by, strconv.FormatInt(set.at.Unix(), 10)))
}

// names sends NAMES of j: the agent (an operator) and every client of the
// channel.
func (c *conn) names(r *reply, j *joined) {
	nicks := []string{"@" + j.agent.nick}
	for _, o := range c.srv.channelMembers(j.conv.ID()) {
		if n := o.currentNick(); n != "" {
			nicks = append(nicks, n)
		}
	}
	line := ""
	for _, n := range nicks {
		if len(line)+len(n)+1 > 400 {
			r.add(c.numeric(rplNamReply, "=", j.name, line))
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += n
	}
	r.add(c.numeric(rplNamReply, "=", j.name, line))
	r.add(c.numeric(rplEndOfNames, j.name, "End of /NAMES list"))
}

func (c *conn) cmdNAMES(r *reply, m ircmsg.Message) bool {
	if len(m.Params) == 0 {
		r.add(c.numeric(rplEndOfNames, "*", "End of /NAMES list"))
		return true
	}
	for _, name := range strings.Split(m.Params[0], ",") {
		if j := c.joinedChannel(name); j != nil {
			c.names(r, j)
		} else {
			r.add(c.numeric(rplEndOfNames, name, "End of /NAMES list"))
		}
	}
	return true
}

func (c *conn) cmdWHO(r *reply, m ircmsg.Message) bool {
	mask := "*"
	if len(m.Params) > 0 {
		mask = m.Params[0]
	}
	srv := c.srv.opts.ServerName
	who := func(channel string, u userInfo, op bool) {
		flags := "H"
		if u.away {
			flags = "G"
		}
		if op {
			flags += "@"
		}
		if u.bot {
			flags += "B"
		}
		r.add(c.numeric(rplWhoReply, channel, u.user, u.host, srv, u.nick, flags, "0 "+u.real))
	}
	if j := c.joinedChannel(mask); j != nil {
		if u, ok := c.lookupUser(j.agent.nick); ok {
			who(j.name, u, true)
		}
		for _, o := range c.srv.channelMembers(j.conv.ID()) {
			if u, ok := c.lookupUser(o.currentNick()); ok {
				who(j.name, u, false)
			}
		}
	} else if u, ok := c.lookupUser(mask); ok {
		who("*", u, false)
	}
	r.add(c.numeric(rplEndOfWho, mask, "End of /WHO list"))
	return true
}

// maxList bounds the conversations LIST shows per agent.
const maxList = 1000

func (c *conn) cmdLIST(r *reply, m ircmsg.Message) bool {
	principal, ok := c.acting()
	if !ok {
		r.add(c.numeric(errNeedReggedNick, "*", loginRequired))
		return true
	}
	ctx := c.pctx()
	r.add(c.numeric(rplListStart, "Channel", "Users  Name"))
	for _, a := range c.srv.agents {
		if !c.srv.mayUse(principal, a) {
			continue
		}
		req := agentik.ListRequest{Limit: 200}
		for shown := 0; shown < maxList; {
			page, err := a.agent.ListConversations(ctx, req)
			if err != nil {
				r.add(c.notice("LIST: " + c.failure(err)))
				break
			}
			for _, info := range page.Conversations {
				if info.ID == directID(a.id, principal) {
					continue
				}
				name := c.channelName(principal, a, info)
				users := strconv.Itoa(1 + len(c.srv.channelMembers(info.ID)))
				r.add(c.numeric(rplList, name, users, oneLine(info.Title, 300)))
				shown++
			}
			if page.Next == "" {
				break
			}
			req.Before = page.Next
		}
	}
	r.add(c.numeric(rplListEnd, "End of /LIST"))
	return true
}

func (c *conn) cmdTOPIC(r *reply, m ircmsg.Message) bool {
	name := m.Params[0]
	j := c.joinedChannel(name)
	if j == nil {
		r.add(c.numeric(errNotOnChannel, name, "You're not on that channel"))
		return true
	}
	ctx := c.pctx()
	if len(m.Params) < 2 {
		info, err := j.conv.Info(ctx)
		if err != nil {
			r.add(c.numeric(errNoSuchChannel, j.name, c.failure(err)))
			return true
		}
		c.topic(r, j, info)
		return true
	}
	title := ircfmt.Strip(m.Params[1])
	// This client is answered here; the renamed event then tells every
	// other client of the principal (watch), and is skipped for this one.
	id := j.conv.ID()
	c.mu.Lock()
	c.topics[id] = title
	c.mu.Unlock()
	undo := c.srv.settingTopic(id, title, c.source())
	if _, err := j.conv.Rename(ctx, title); err != nil {
		undo()
		c.mu.Lock()
		delete(c.topics, id)
		c.mu.Unlock()
		r.add(c.notice("TOPIC " + j.name + ": " + c.failure(err)))
		return true
	}
	r.add(ircmsg.MakeMessage(nil, c.source(), "TOPIC", j.name, title))
	return true
}

func (c *conn) cmdPART(r *reply, m ircmsg.Message) bool {
	reason := ""
	if len(m.Params) > 1 {
		reason = m.Params[1]
	}
	for _, name := range strings.Split(m.Params[0], ",") {
		c.part(r, name, reason)
	}
	return true
}

func (c *conn) part(r *reply, name, reason string) {
	key := fold(name)
	c.mu.Lock()
	j := c.channels[key]
	delete(c.channels, key)
	c.mu.Unlock()
	if j == nil {
		r.add(c.numeric(errNotOnChannel, name, "You're not on that channel"))
		return
	}
	j.stop()
	src := c.source()
	params := []string{j.name}
	if reason != "" {
		params = append(params, reason)
	}
	r.add(ircmsg.MakeMessage(nil, src, "PART", params...))
	for _, o := range c.srv.part(c, j.conv.ID()) {
		if on := o.nameFor(j.conv.ID()); on != "" {
			o.send(ircmsg.MakeMessage(nil, src, "PART", append([]string{on}, params[1:]...)...))
		}
	}
}

// lost removes a channel whose conversation went away (deleted elsewhere)
// and tells the client, as if the agent had kicked it.
func (c *conn) lost(j *joined, why string) {
	c.mu.Lock()
	if c.channels[fold(j.name)] == j {
		delete(c.channels, fold(j.name))
	} else if !j.direct || c.direct[j.agent.id] != j {
		c.mu.Unlock()
		return
	} else {
		delete(c.direct, j.agent.id)
	}
	nick := c.nick
	c.mu.Unlock()
	if j.direct {
		return
	}
	c.srv.part(c, j.conv.ID())
	c.send(ircmsg.MakeMessage(nil, j.agent.source(c.srv.opts.ServerName), "KICK", j.name, nick, why))
}

// --- direct conversations ---------------------------------------------------

// openDirect follows the client's direct conversation with a (creating it
// with create) and returns it; nil without error when it does not exist.
func (c *conn) openDirect(a *agentUser, create bool) (*joined, error) {
	c.mu.Lock()
	j := c.direct[a.id]
	c.mu.Unlock()
	if j != nil {
		return j, nil
	}
	ctx := c.pctx()
	principal := agentik.PrincipalFrom(ctx)
	conv, err := c.openNamed(ctx, a, directID(a.id, principal), "IRC: "+a.nick+" (direct)", create)
	if err != nil {
		if !create && agentik.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	j = c.newJoined(a, conv, "")
	page, err := conv.Messages(ctx, agentik.MessagesRequest{Before: maxInt64, Limit: 1})
	if err != nil {
		j.cancel()
		return nil, err
	}
	stream, err := conv.Events(j.ctx, page.Cursor)
	if err != nil {
		j.cancel()
		return nil, err
	}
	c.mu.Lock()
	if other := c.direct[a.id]; other != nil || c.ended {
		c.mu.Unlock()
		stream.Close()
		j.cancel()
		return other, nil
	}
	c.direct[a.id] = j
	c.mu.Unlock()
	c.startFollower(j, stream, page.Cursor)
	return j, nil
}

// attachDirect follows the existing direct conversations of the client's
// principal, so a second client of it sees them too.
func (c *conn) attachDirect() {
	principal, ok := c.acting()
	if !ok {
		return
	}
	for _, a := range c.srv.agents {
		if c.srv.mayUse(principal, a) {
			if _, err := c.openDirect(a, false); err != nil {
				c.srv.log.Debug("irc: direct conversation not followed", "client", c.id, "agent", a.id, "err", err)
			}
		}
	}
}

// --- PRIVMSG -----------------------------------------------------------------

func (c *conn) cmdPRIVMSG(r *reply, m ircmsg.Message) bool {
	if len(m.Params) == 0 || m.Params[0] == "" {
		r.add(c.numeric(errNoRecipient, "No recipient given (PRIVMSG)"))
		return true
	}
	if len(m.Params) < 2 || m.Params[1] == "" {
		r.add(c.numeric(errNoTextToSend, "No text to send"))
		return true
	}
	targets := strings.Split(m.Params[0], ",")
	if len(targets) > 4 {
		targets = targets[:4]
	}
	for _, t := range targets {
		c.privmsg(r, t, m.Params[1])
	}
	return true
}

func (c *conn) privmsg(r *reply, target, text string) {
	principal, ok := c.acting()
	if !ok {
		r.add(c.numeric(errNeedReggedNick, target, loginRequired))
		return
	}
	var j *joined
	if strings.HasPrefix(target, "#") {
		if j = c.joinedChannel(target); j == nil {
			r.add(c.numeric(errCannotSendToChan, target, "Join the channel first"))
			return
		}
	} else {
		a := c.srv.agentByNick(principal, target)
		if a == nil {
			if c.srv.nickOwner(target) != nil {
				r.add(c.numeric(errCannotSendToChan, target, "Only agents take messages here"))
			} else {
				r.add(c.numeric(errNoSuchNick, target, "No such nick/channel"))
			}
			return
		}
		c.mu.Lock()
		j = c.direct[a.id]
		c.mu.Unlock()
		if j == nil {
			var err error
			if j, err = c.openDirect(a, true); err != nil || j == nil {
				if err == nil {
					err = agentik.Errorf(agentik.ENotFound, "conversation not found")
				}
				r.add(c.numeric(errCannotSendToChan, target, c.failure(err)))
				return
			}
			// The principal's other clients follow the new direct
			// conversation too.
			for _, o := range c.srv.principalConns(principal) {
				if o != c {
					if _, err := o.openDirect(a, false); err != nil {
						c.srv.log.Debug("irc: direct conversation not followed", "client", o.id, "err", err)
					}
				}
			}
		}
	}
	if strings.HasPrefix(text, "\x01") {
		cmd, arg := parseCTCP(text)
		if cmd != "ACTION" {
			c.ctcpQuery(j, cmd, arg)
			return
		}
		text = "/me " + arg
	}
	text = ircfmt.Strip(text)
	if strings.TrimSpace(text) == "" {
		r.add(c.numeric(errNoTextToSend, "No text to send"))
		return
	}
	switch word, rest, _ := strings.Cut(strings.TrimSpace(text), " "); strings.ToLower(word) {
	// A command acts once its echo is queued, so that the client sees the
	// echo before what the command caused (the cut answer, the tool's
	// result).
	case "!stop":
		c.echoCommand(r, j, target, text)
		r.after = append(r.after, func() {
			stopped, err := j.conv.Interrupt(c.pctx())
			switch {
			case err != nil:
				c.agentNotice(j, "!stop: "+c.failure(err))
			case !stopped:
				c.agentNotice(j, "Nothing to stop: no answer is being written.")
			}
		})
		return
	case "!approve", "!deny":
		c.echoCommand(r, j, target, text)
		approve, which := strings.ToLower(word) == "!approve", strings.TrimSpace(rest)
		r.after = append(r.after, func() { c.approval(j, approve, which) })
		return
	}
	if c.srv.isClosing() {
		r.add(c.numeric(errCannotSendToChan, target, "The server is shutting down"))
		return
	}
	nick := c.currentNick()
	// The user_message event of this message, when it comes, is known as
	// the client's own by this record: echoed with echo-message, else not
	// shown again.
	pe := &pendingEcho{label: r.label, nick: nick, text: text}
	echo := c.capSet().has(capEcho)
	c.mu.Lock()
	j.echoes = append(j.echoes, pe)
	c.mu.Unlock()
	_, err := j.conv.Send(c.pctx(), agentik.SendRequest{
		Content: []agentik.Content{agentik.Text(text)},
		Context: &agentik.MessageContext{Origin: &agentik.Origin{Channel: "irc", User: principal, DisplayName: nick},
			Metadata: map[string]string{metaSource: c.source()}},
		IfBusy: c.srv.opts.IfBusy,
	})
	if err != nil {
		c.mu.Lock()
		for i, e := range j.echoes {
			if e == pe {
				j.echoes = append(j.echoes[:i:i], j.echoes[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		msg := c.failure(err)
		if agentik.ErrorCode(err) == agentik.EBusy {
			msg = "The agent is still answering; wait for the end, or send !stop"
		}
		r.add(c.numeric(errCannotSendToChan, target, msg))
		return
	}
	if echo {
		r.handled = r.label != "" // the echo carries the label
	}
}

// approval answers a call of j's conversation that waits for approval
// (SPEC §10): "!approve [<id>]" or "!deny [<id>] [reason]". Without an id
// (for !deny: when the first word is not a waiting call's id) the one call
// that waits is meant. What went wrong is told in a NOTICE; the outcome
// itself comes as the approval_resolved NOTICE.
func (c *conn) approval(j *joined, approve bool, rest string) {
	cmd := "!deny"
	if approve {
		cmd = "!approve"
	}
	ctx := c.pctx()
	pending, err := j.conv.Approvals(ctx)
	if err != nil {
		c.agentNotice(j, cmd+": "+c.failure(err))
		return
	}
	id, reason, _ := strings.Cut(rest, " ")
	known := slices.ContainsFunc(pending, func(p agentik.PendingApproval) bool { return p.CallID == id })
	switch {
	case id == "" || (!known && !approve && len(pending) == 1):
		// No id: the one call that waits (a !deny's words are its reason).
		if len(pending) != 1 {
			c.agentNotice(j, c.whichCall(cmd, pending))
			return
		}
		id, reason = pending[0].CallID, rest
	case approve && reason != "":
		c.agentNotice(j, "Usage: !approve [<call id>] (the edited arguments of an approval go through the HTTP API)")
		return
	}
	res := agentik.Resolution{Approved: approve}
	if !approve {
		res.Reason = strings.TrimSpace(reason)
	}
	if err := j.conv.Resolve(ctx, id, res); err != nil {
		msg := c.failure(err)
		if agentik.IsNotFound(err) {
			msg = "no tool call " + oneLine(id, 100) + " waits for approval here"
			if len(pending) > 0 {
				msg += "; " + c.whichCall(cmd, pending)
			}
		}
		c.agentNotice(j, cmd+": "+msg)
	}
}

// whichCall says which calls wait, for a command that did not name one.
func (c *conn) whichCall(cmd string, pending []agentik.PendingApproval) string {
	if len(pending) == 0 {
		return "Nothing waits for approval here."
	}
	ids := make([]string, 0, len(pending))
	for _, p := range pending {
		ids = append(ids, p.CallID)
	}
	n := fmt.Sprintf("%d tool calls wait", len(pending))
	if len(pending) == 1 {
		n = "1 tool call waits"
	}
	return fmt.Sprintf("%s for approval (%s): say which, %s <call id>", n, oneLine(strings.Join(ids, ", "), 300), cmd)
}

// echoCommand echoes a !command to a client with echo-message. The
// command is not stored; its msgid is still one CHATHISTORY resolves
// (clients page from the last msgid they saw): the last stored message's
// id with a unique suffix ("<id>~cmd-<random>"), so a client that pages
// from it gets what followed. In a conversation with no message yet the
// echo has no msgid.
func (c *conn) echoCommand(r *reply, j *joined, target, text string) {
	if !c.capSet().has(capEcho) {
		return
	}
	var anchor string
	if page, err := j.conv.Messages(c.pctx(), agentik.MessagesRequest{Before: maxInt64, Limit: 1}); err == nil && len(page.Messages) > 0 {
		anchor = page.Messages[0].ID
	}
	id := agentik.NewID()
	r.add(privmsg(c.source(), target, text, eventID(anchor, "cmd-"+id[len(id)-12:]), agentik.Now().Time, false))
}

// agentNotice sends a NOTICE from j's agent to the client, in j.
func (c *conn) agentNotice(j *joined, text string) {
	for _, m := range c.noticeLines(j, text) {
		c.send(m)
	}
}

// noticeLines is text as the NOTICE lines from j's agent to the client.
func (c *conn) noticeLines(j *joined, text string) []ircmsg.Message {
	v := j.view()
	src, target := v.agentSource(), v.agentTarget()
	var out []ircmsg.Message
	for _, p := range splitText(text, budget(src, "NOTICE", target, 0)) {
		m := ircmsg.MakeMessage(nil, src, "NOTICE", target, p)
		m.SetTag("time", tagTime(agentik.Now().Time))
		m.SetTag("bot", "")
		out = append(out, m)
	}
	return out
}

// parseCTCP splits "\x01CMD arg\x01".
func parseCTCP(text string) (cmd, arg string) {
	body := strings.TrimSuffix(strings.TrimPrefix(text, "\x01"), "\x01")
	cmd, arg, _ = strings.Cut(body, " ")
	return strings.ToUpper(cmd), arg
}

// ctcpQuery answers the CTCP queries an agent answers (VERSION, PING, TIME,
// CLIENTINFO) with a CTCP reply NOTICE to the client; others are ignored.
func (c *conn) ctcpQuery(j *joined, cmd, arg string) {
	var answer string
	switch cmd {
	case "VERSION":
		answer = "VERSION Agentik " + c.srv.opts.Version
	case "PING":
		answer = "PING " + oneLine(arg, 100)
	case "TIME":
		answer = "TIME " + agentik.Now().String()
	case "CLIENTINFO":
		answer = "CLIENTINFO ACTION CLIENTINFO PING TIME VERSION"
	default:
		return
	}
	src := j.agent.source(c.srv.opts.ServerName)
	c.send(ircmsg.MakeMessage(nil, src, "NOTICE", c.currentNick(), "\x01"+answer+"\x01"))
}
