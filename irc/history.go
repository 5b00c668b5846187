package irc

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
)

// CHATHISTORY (IRCv3 draft/chathistory) serves a conversation's journal:
// every journal message is one unit of the limit, sent as the lines it is
// sent as live (user and assistant messages as PRIVMSG, tool calls, results
// and errors as CTCP AGENTIK), in seq order, in a chathistory batch.
// Selectors: msgid=<message id> (or a line's "<id>~<n>") and
// timestamp=<RFC 3339>; both exclusive, as the specification says.

func (c *conn) cmdCHATHISTORY(r *reply, m ircmsg.Message) bool {
	srv := c.srv.opts.ServerName
	fail := func(code string, params ...string) {
		r.add(ircmsg.MakeMessage(nil, srv, "FAIL", append([]string{"CHATHISTORY", code}, params...)...))
	}
	if len(m.Params) == 0 {
		fail("INVALID_PARAMS", "*", "Insufficient parameters")
		return true
	}
	sub := strings.ToUpper(m.Params[0])
	want := 4
	switch sub {
	case "LATEST", "BEFORE", "AFTER", "AROUND", "TARGETS":
	case "BETWEEN":
		want = 5
	default:
		fail("INVALID_PARAMS", m.Params[0], "Unknown command")
		return true
	}
	switch {
	case len(m.Params) < want:
		fail("INVALID_PARAMS", sub, "Insufficient parameters")
		return true
	case len(m.Params) > want:
		fail("INVALID_PARAMS", sub, "Too many parameters")
		return true
	}
	limit, err := strconv.Atoi(m.Params[want-1])
	if err != nil || limit < 0 {
		fail("INVALID_PARAMS", sub, m.Params[want-1], "Invalid limit")
		return true
	}
	if limit == 0 || limit > c.srv.opts.ChathistoryMax {
		limit = c.srv.opts.ChathistoryMax
	}
	principal, ok := c.acting()
	if sub == "TARGETS" {
		a, errA := parseTimestamp(m.Params[1])
		b, errB := parseTimestamp(m.Params[2])
		if errA != nil || errB != nil {
			fail("INVALID_PARAMS", sub, "Invalid timestamp")
			return true
		}
		if !ok {
			fail("INVALID_TARGET", sub, "*", "Messages could not be retrieved")
			return true
		}
		c.targets(r, principal, a, b, limit)
		return true
	}
	target := m.Params[1]
	if !ok {
		fail("INVALID_TARGET", sub, target, "Messages could not be retrieved")
		return true
	}
	v, conv, err := c.historyTarget(target)
	if err != nil {
		if agentik.IsNotFound(err) {
			fail("INVALID_TARGET", sub, target, "Messages could not be retrieved")
		} else {
			fail("MESSAGE_ERROR", sub, target, c.failure(err))
		}
		return true
	}
	var msgs []agentik.Message
	if conv != nil {
		sels := make([]*selector, 0, 2)
		for _, p := range m.Params[2 : want-1] {
			if p == "*" && sub == "LATEST" {
				sels = append(sels, nil)
				continue
			}
			s, code := parseSelector(p)
			if code != "" {
				msg := "Invalid selector"
				if code == "INVALID_MSGREFTYPE" {
					msg = "Only msgid and timestamp selectors are supported"
				}
				fail(code, sub, target, p, msg)
				return true
			}
			sels = append(sels, s)
		}
		j := &journal{ctx: c.pctx(), conv: conv}
		msgs, err = j.query(sub, sels, limit)
		if err != nil {
			fail("MESSAGE_ERROR", sub, target, c.failure(err))
			return true
		}
	}
	ref := c.newBatchRef()
	r.add(ircmsg.MakeMessage(nil, srv, "BATCH", "+"+ref, "chathistory", target))
	for i := range msgs {
		for _, line := range v.message(&msgs[i], true) {
			line.SetTag("batch", ref)
			r.add(line)
		}
	}
	r.add(ircmsg.MakeMessage(nil, srv, "BATCH", "-"+ref))
	return true
}

// historyTarget finds the conversation a CHATHISTORY target names: a
// channel (joined or not) or an agent's nick (the direct conversation; nil
// conversation when it has not started yet).
func (c *conn) historyTarget(target string) (view, agentik.Conversation, error) {
	ctx := c.pctx()
	principal := agentik.PrincipalFrom(ctx)
	if strings.HasPrefix(target, "#") {
		if j := c.joinedChannel(target); j != nil {
			return j.view(), j.conv, nil
		}
		if !validChannel(target) {
			return view{}, nil, agentik.Errorf(agentik.ENotFound, "no such channel")
		}
		a, conv, err := c.openChannel(ctx, target, false)
		if err != nil {
			return view{}, nil, err
		}
		return view{c: c, agent: a, convID: conv.ID(), target: target}, conv, nil
	}
	a := c.srv.agentByNick(principal, target)
	if a == nil {
		return view{}, nil, agentik.Errorf(agentik.ENotFound, "no such nick")
	}
	v := view{c: c, agent: a, convID: directID(a.id, principal)}
	conv, err := a.agent.Conversation(ctx, v.convID)
	if agentik.IsNotFound(err) {
		return v, nil, nil
	}
	return v, conv, err
}

// selector is a parsed msgid= or timestamp= reference.
type selector struct {
	msgid string
	at    time.Time
}

// parseSelector parses a selector; the code is the FAIL code when it is
// not one.
func parseSelector(p string) (*selector, string) {
	kind, val, ok := strings.Cut(p, "=")
	if !ok || val == "" {
		return nil, "INVALID_PARAMS"
	}
	switch kind {
	case "msgid":
		id, _, _ := strings.Cut(val, "~")
		return &selector{msgid: id}, ""
	case "timestamp":
		t, err := time.Parse(time.RFC3339Nano, val)
		if err != nil {
			return nil, "INVALID_PARAMS"
		}
		return &selector{at: t}, ""
	}
	return nil, "INVALID_MSGREFTYPE"
}

func parseTimestamp(p string) (time.Time, error) {
	val, ok := strings.CutPrefix(p, "timestamp=")
	if !ok {
		return time.Time{}, agentik.Errorf(agentik.EInvalid, "not a timestamp")
	}
	return time.Parse(time.RFC3339Nano, val)
}

// journal answers history queries from one conversation's journal, paged
// by seq. A timestamp is found by binary search over seq (journal dates
// grow with seq).
type journal struct {
	ctx   context.Context
	conv  agentik.Conversation
	last  int64 // greatest seq; -1 until read
	dates map[int64]time.Time
}

// bounds of a selector in seq: messages before it have seq < below, those
// after it seq > above.
type bounds struct{ below, above int64 }

func (j *journal) page(req agentik.MessagesRequest) ([]agentik.Message, error) {
	p, err := j.conv.Messages(j.ctx, req)
	return p.Messages, err
}

func (j *journal) lastSeq() (int64, error) {
	if j.dates == nil {
		j.dates = map[int64]time.Time{}
		msgs, err := j.page(agentik.MessagesRequest{Before: maxInt64, Limit: 1})
		if err != nil {
			return 0, err
		}
		j.last = 0
		if len(msgs) > 0 {
			j.last = msgs[0].Seq
		}
	}
	return j.last, nil
}

func (j *journal) dateAt(seq int64) (time.Time, error) {
	if d, ok := j.dates[seq]; ok {
		return d, nil
	}
	msgs, err := j.page(agentik.MessagesRequest{After: seq - 1, Limit: 1})
	if err != nil {
		return time.Time{}, err
	}
	if len(msgs) == 0 {
		return time.Time{}, agentik.Errorf(agentik.EInternal, "journal has no message %d", seq)
	}
	j.dates[seq] = msgs[0].Date.Time
	return msgs[0].Date.Time, nil
}

// firstAfter returns the smallest seq whose date is after t (or, with
// orEqual, not before t); last+1 when there is none.
func (j *journal) firstAfter(t time.Time, orEqual bool) (int64, error) {
	last, err := j.lastSeq()
	if err != nil {
		return 0, err
	}
	lo, hi := int64(1), last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		d, err := j.dateAt(mid)
		if err != nil {
			return 0, err
		}
		if d.After(t) || orEqual && d.Equal(t) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

func (j *journal) bounds(s *selector) (bounds, error) {
	if s.msgid != "" {
		if !agentik.ValidID(s.msgid) {
			return bounds{}, agentik.Errorf(agentik.ENotFound, "unknown msgid")
		}
		m, err := j.conv.Message(j.ctx, s.msgid)
		if err != nil {
			return bounds{}, err
		}
		return bounds{m.Seq, m.Seq}, nil
	}
	lb, err := j.firstAfter(s.at, true)
	if err != nil {
		return bounds{}, err
	}
	ub, err := j.firstAfter(s.at, false)
	if err != nil {
		return bounds{}, err
	}
	return bounds{below: lb, above: ub - 1}, nil
}

// query runs one CHATHISTORY subcommand; sels holds its selectors (nil for
// LATEST's "*"). The result is in ascending seq order.
func (j *journal) query(sub string, sels []*selector, limit int) ([]agentik.Message, error) {
	bs := make([]bounds, len(sels))
	for i, s := range sels {
		if s == nil {
			continue
		}
		b, err := j.bounds(s)
		if err != nil {
			if agentik.IsNotFound(err) {
				return nil, agentik.Errorf(agentik.ENotFound, "the message referred to is not in this conversation")
			}
			return nil, err
		}
		bs[i] = b
	}
	switch sub {
	case "LATEST":
		if sels[0] == nil {
			return j.page(agentik.MessagesRequest{Before: maxInt64, Limit: limit})
		}
		return j.page(agentik.MessagesRequest{After: bs[0].above, Before: maxInt64, Limit: limit})
	case "BEFORE":
		if bs[0].below <= 1 {
			return nil, nil
		}
		return j.page(agentik.MessagesRequest{Before: bs[0].below, Limit: limit})
	case "AFTER":
		return j.page(agentik.MessagesRequest{After: bs[0].above, Limit: limit})
	case "AROUND":
		var before []agentik.Message
		if half := limit / 2; half > 0 && bs[0].below > 1 {
			var err error
			if before, err = j.page(agentik.MessagesRequest{Before: bs[0].below, Limit: half}); err != nil {
				return nil, err
			}
		}
		rest, err := j.page(agentik.MessagesRequest{After: bs[0].below - 1, Limit: limit - len(before)})
		return append(before, rest...), err
	case "BETWEEN":
		a, b := bs[0], bs[1]
		pa, pb := a.below+a.above, b.below+b.above // twice the midpoints
		switch {
		case pa < pb: // forwards from a
			msgs, err := j.page(agentik.MessagesRequest{After: a.above, Limit: limit})
			return slices.DeleteFunc(msgs, func(m agentik.Message) bool { return m.Seq >= b.below }), err
		case pa > pb: // backwards from a
			if a.below <= b.above+1 {
				return nil, nil
			}
			return j.page(agentik.MessagesRequest{After: b.above, Before: a.below, Limit: limit})
		}
	}
	return nil, nil
}

// targets answers CHATHISTORY TARGETS: the client's conversations whose
// latest activity lies strictly between a and b, as the channel (or the
// agent's nick, for a direct conversation) and the time, oldest first.
func (c *conn) targets(r *reply, principal string, a, b time.Time, limit int) {
	lo, hi := a, b
	backwards := a.After(b)
	if backwards {
		lo, hi = b, a
	}
	type target struct {
		name string
		at   time.Time
	}
	var found []target
	ctx := c.pctx()
	for _, ag := range c.srv.agents {
		if !c.srv.mayUse(principal, ag) {
			continue
		}
		req := agentik.ListRequest{Limit: 200}
	pages:
		for n := 0; n < maxList; {
			page, err := ag.agent.ListConversations(ctx, req)
			if err != nil {
				c.srv.log.Debug("irc: CHATHISTORY TARGETS", "err", err)
				break
			}
			for _, info := range page.Conversations {
				n++
				at := info.UpdatedAt.Time
				if !at.After(lo) {
					break pages // newest first: the rest are older
				}
				if !at.Before(hi) {
					continue
				}
				name := ag.nick
				if info.ID != directID(ag.id, principal) {
					name = c.channelName(principal, ag, info)
				}
				found = append(found, target{name, at})
			}
			if page.Next == "" {
				break
			}
			req.Before = page.Next
		}
	}
	slices.SortFunc(found, func(x, y target) int { return x.at.Compare(y.at) })
	if len(found) > limit {
		if backwards {
			found = found[len(found)-limit:]
		} else {
			found = found[:limit]
		}
	}
	srv := c.srv.opts.ServerName
	ref := c.newBatchRef()
	r.add(ircmsg.MakeMessage(nil, srv, "BATCH", "+"+ref, "draft/chathistory-targets"))
	for _, t := range found {
		line := ircmsg.MakeMessage(nil, srv, "CHATHISTORY", "TARGETS", t.name, tagTime(t.at))
		line.SetTag("batch", ref)
		r.add(line)
	}
	r.add(ircmsg.MakeMessage(nil, srv, "BATCH", "-"+ref))
}
