package irc

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// typingEvery is how often +typing=active is repeated while a turn runs:
// the typing spec's throttle (3 s) under its 6 s expiry.
const typingEvery = 3 * time.Second

// follower turns one conversation's events into one client's lines. The
// answer streams line by line: each complete line is sent as soon as it is
// complete; the last one (whose msgid is the stored message's id) when the
// assistant_message event arrives.
//
// The lines of stored events (messages, tool lines, notices) wait for room
// in the client's send queue (conn.followLine): a client that reads gets a
// message of any size. While the follower waits, the bus holds the
// conversation's events for it, and may drop deltas it has no room for;
// the bus then says so, and the stream hands the follower the text it lost
// from the stored message, just before that message (engine streams mend
// it), so a response's text never has a gap. Live lines never wait: a
// response whose lines cannot all be sent live is "lagging": its deltas
// are ignored from then on, and its lines are sent, waiting, from its
// stored message. A follower cut off by the bus resumes from its last
// durable event.
type follower struct {
	c        *conn
	j        *joined
	v        view
	phase    string
	split    streamSplitter
	sawDelta bool             // the current response came as deltas
	text     strings.Builder  // text of the current response so far
	emitted  int              // lines of it sent
	resumed  string           // text sent before a resubscription
	lagging  bool             // the current response is sent from its message
	backlog  []ircmsg.Message // its complete lines not sent yet
	final    bool             // sending from the message: live lines wait
	replyTo  string
	cut      cutAnswer // the last answer stored as interrupted
	cursor   int64
	typing   *time.Ticker
}

// cutAnswer is an answer stored as interrupted: the INTERRUPTED line that
// follows it takes its msgid from it.
type cutAnswer struct{ id, replyTo string }

// eventTime is the time of an event's line: the event's date (for an
// interrupted turn, that of the cut answer), so that it is the same live
// and in history.
func eventTime(ev agentik.Event) time.Time {
	if ev.Date.IsZero() {
		return time.Now()
	}
	return ev.Date.Time
}

// follow runs until j is stopped, the connection ends, or the conversation
// goes away. A stream that is cut off (the client's follower fell behind)
// is resumed from the last durable cursor.
func (c *conn) follow(j *joined, stream agentik.Stream[agentik.Event], after int64) {
	f := &follower{c: c, j: j, v: j.view(), cursor: after}
	defer f.stopTyping(false)
	for {
		err := f.run(stream)
		stream.Close()
		if j.ctx.Err() != nil {
			return
		}
		if err == nil || agentik.IsNotFound(err) { // the agent is shutting down, or the conversation is gone
			if _, ierr := j.conv.Info(j.ctx); agentik.IsNotFound(err) || agentik.IsNotFound(ierr) {
				c.lost(j, "The conversation was deleted")
			}
			return
		}
		if !errors.Is(err, agentik.ErrSlowSubscriber) {
			c.srv.log.Warn("irc: conversation stream failed; resuming", "client", c.id, "conversation", j.conv.ID(), "err", err)
		}
		if f.phase == agentik.EvStartResponse {
			f.resumed = f.text.String()
		}
		var serr error
		stream, serr = j.conv.Events(j.ctx, f.cursor)
		if serr != nil {
			if j.ctx.Err() == nil {
				c.lost(j, "The conversation's events could not be followed: "+c.failure(serr))
			}
			return
		}
	}
}

// run pulls the stream's events on the connection's follower goroutine
// (edge.Pull): a follower costs the engine no goroutine or channel.
func (f *follower) run(stream agentik.Stream[agentik.Event]) error {
	events := edge.Pull(stream, edge.EventFrame)
	ready, done := events.Ready(), events.Done()
	for {
		ev, ok, ended, err := edge.Take(events)
		switch {
		case ended && err != nil:
			return err
		case ended:
			return events.Err()
		case ok:
			f.handle(ev)
			continue
		}
		var tick <-chan time.Time
		if f.typing != nil {
			tick = f.typing.C
		}
		select {
		case <-f.j.ctx.Done():
			return nil
		case <-ready:
		case <-done:
		case <-tick:
			f.sendTyping("active")
		}
	}
}

func (f *follower) handle(ev agentik.Event) {
	if ev.Cursor > f.cursor {
		f.cursor = ev.Cursor
	}
	c, v := f.c, f.v
	switch ev.Type {
	case agentik.EvWorking:
		f.replyTo = ev.ReplyTo
		f.startTyping()
	case agentik.EvStartReasoning:
		f.phase = ev.Type
	case agentik.EvStartResponse:
		if f.resumed != "" && f.phase == agentik.EvStartResponse {
			return // the same response, resumed: its text so far comes next
		}
		f.phase = ev.Type
		f.newResponse()
	case agentik.EvAppendText:
		if f.phase != agentik.EvStartResponse {
			return // reasoning is not shown
		}
		if f.lagging {
			f.sawDelta = true
			return
		}
		t := ev.Text
		if f.resumed != "" {
			if strings.HasPrefix(t, f.resumed) {
				t = t[len(f.resumed):]
			} else {
				f.newResponse()
			}
			f.resumed = ""
		}
		f.sawDelta = true
		f.text.WriteString(t)
		f.split.write(t, f.live)
	case agentik.EvAssistantMessage:
		if ev.Message == nil {
			return
		}
		if ev.Message.Interrupted {
			f.cut = cutAnswer{id: ev.Message.ID, replyTo: ev.Message.ReplyTo}
		}
		if f.sawDelta {
			// What the deltas did not bring (a lagging response, or one
			// resumed after it was stored) is in the message: its lines
			// follow those already sent.
			f.final = true
			for _, m := range f.backlog {
				f.put(m)
			}
			f.backlog = nil
			if full, so := agentik.JoinText(ev.Message.Content), f.text.String(); len(full) > len(so) && strings.HasPrefix(full, so) {
				f.text.WriteString(full[len(so):])
				f.split.write(full[len(so):], f.live)
			}
			f.finishResponse(ev.Message)
			f.final = false
		} else {
			f.sendAll(v.message(ev.Message, false))
		}
		f.phase = ""
		f.resumed = ""
		f.newResponse()
	case agentik.EvUserMessage:
		if ev.Message != nil {
			f.userMessage(ev.Message)
		}
	case agentik.EvToolCall, agentik.EvToolResult, agentik.EvToolFailed, agentik.EvError:
		if ev.Message != nil {
			f.sendAll(v.message(ev.Message, false))
		}
	case agentik.EvInterrupted, agentik.EvCompactionTriggered:
		f.put(f.eventLine(ev))
	case agentik.EvApprovalRequested:
		// SPEC §10: a NOTICE stating the call and how to answer (handled
		// in conn.approval). A subscriber that (re)connects is told again.
		src, target := v.agentSource(), v.agentTarget()
		f.sendAll(c.noticeLines(f.j, approvalNotice(ev.Name, string(ev.Arguments), ev.CallID, budget(src, "NOTICE", target, 0))))
	case agentik.EvApprovalResolved:
		f.sendAll(c.noticeLines(f.j, resolvedNotice(ev)))
	case agentik.EvEnd:
		f.stopTyping(true)
		f.phase = ""
	}
}

// eventLine is the CTCP line of an interrupted or compaction_triggered
// event, its msgid derived from the event (eventID). An INTERRUPTED line
// follows the cut answer when there is one (as in history, where it is
// replayed after that message), else the user message the turn answered.
func (f *follower) eventLine(ev agentik.Event) ircmsg.Message {
	if ev.Type == agentik.EvInterrupted {
		anchor := ev.ReplyTo
		if f.cut.replyTo == ev.ReplyTo && f.cut.id != "" {
			anchor = f.cut.id
		}
		return f.v.ctcp("", "INTERRUPTED", ev.Reason, eventID(anchor, "interrupted"), eventTime(ev), map[string]string{
			"event": agentik.EvInterrupted, "reason": ev.Reason, "reply-to": ev.ReplyTo})
	}
	anchor := ev.ReplyTo
	if anchor == "" {
		anchor = f.replyTo
	}
	dropped, tokens := strconv.Itoa(ev.Dropped), strconv.Itoa(ev.SummaryTokens)
	return f.v.ctcp("", "COMPACTION", "dropped="+dropped+" summary_tokens="+tokens,
		eventID(anchor, "compaction-"+strconv.FormatInt(ev.Cursor, 10)), eventTime(ev),
		map[string]string{"event": agentik.EvCompactionTriggered, "dropped": dropped, "summary-tokens": tokens})
}

// approvalNotice states a call that waits for approval in one line of at
// most max bytes: the tool, its arguments (shortened to fit) and the call
// id with the commands that answer it, which are never shortened.
func approvalNotice(name, args, callID string, max int) string {
	head := "Approval needed: " + oneLine(name, 100) + " "
	tail := " — answer !approve " + callID + " or !deny " + callID + " [reason]"
	room := max - len(head) - len(tail)
	if room < 4 {
		room = 4 // a call id too long to fit: splitText makes two lines
	}
	return head + oneLine(args, room) + tail
}

// resolvedNotice says how a call that waited was answered.
func resolvedNotice(ev agentik.Event) string {
	verdict := "denied"
	if ev.Approved != nil && *ev.Approved {
		verdict = "approved"
	}
	s := "Tool call " + ev.CallID + " " + verdict
	if ev.By != "" {
		s += " by " + ev.By
	}
	if ev.Reason != "" {
		s += ": " + oneLine(ev.Reason, 300)
	}
	return s
}

func (f *follower) newResponse() {
	f.lagging, f.backlog = false, nil
	f.split.reset()
	f.split.max = budget(f.v.agentSource(), "PRIVMSG", f.v.agentTarget(), 0)
	f.text.Reset()
	f.sawDelta = false
	f.emitted = 0
}

// live sends one complete line of the answer being written. Its msgid
// cannot be the stored message's (that id does not exist yet): it is the
// id of the user message it answers with a random suffix, which
// CHATHISTORY resolves to that user message.
func (f *follower) live(piece string) {
	id := agentik.NewID()
	if f.replyTo != "" {
		id = f.replyTo + "~" + id[len(id)-12:]
	}
	f.emitted++
	m := privmsg(f.v.agentSource(), f.v.agentTarget(), piece, id, time.Now(), true)
	switch {
	case f.final:
		f.put(m)
	case f.lagging:
		f.backlog = append(f.backlog, m)
	default:
		if ok, _ := f.c.followLine(f.j.ctx, m, false); !ok {
			f.lagging = true
			f.backlog = append(f.backlog, m)
		}
	}
}

// finishResponse sends the rest of a streamed answer and its images; the
// last line carries the message id, the ones before it "<id>~<n>" as in
// history.
func (f *follower) finishResponse(m *agentik.Message) {
	var rest []string
	f.split.flush(func(p string) { rest = append(rest, p) })
	n := 0
	for _, p := range m.Content {
		if p.Type == agentik.ContentImage {
			rest = append(rest, f.v.imageNote(p, m.Seq, n))
			n++
		}
	}
	src, target := f.v.agentSource(), f.v.agentTarget()
	total := f.emitted + len(rest)
	for i, p := range rest {
		f.put(privmsg(src, target, p, lineID(m.ID, f.emitted+i, total), m.Date.Time, true))
	}
}

// userMessage shows a user message: the client's own is echoed (with
// echo-message) or not shown again; another client's or another facade's
// is shown from the nick of its origin. In a direct conversation every
// user message is the principal's own, shown (as sent by this client) only
// to clients that take echoes.
func (f *follower) userMessage(m *agentik.Message) {
	c, j := f.c, f.j
	echo := c.capSet().has(capEcho)
	var own *pendingEcho
	if o := originOf(m); o != nil && o.Channel == "irc" {
		c.mu.Lock()
		if len(j.echoes) > 0 && j.echoes[0].nick == o.DisplayName && j.echoes[0].text == agentik.JoinText(m.Content) {
			own, j.echoes = j.echoes[0], j.echoes[1:]
		}
		c.mu.Unlock()
	}
	switch {
	case own != nil && echo:
		src, target := f.v.userLine(m)
		lines := textLines(src, target, "", agentik.JoinText(m.Content), m.ID, m.Date.Time, false)
		f.sendAll(labeled(c, own.label, lines))
	case own != nil, j.direct && !echo:
	default:
		f.sendAll(f.v.message(m, false))
	}
}

func (f *follower) sendAll(msgs []ircmsg.Message) {
	for _, m := range msgs {
		f.put(m)
	}
}

// put queues one line of a stored event for the client, waiting for room
// (conn.followLine). Deltas the bus dropped meanwhile come back whole from
// the stream, before the response's message.
func (f *follower) put(m ircmsg.Message) {
	f.c.followLine(f.j.ctx, m, true)
}

func (f *follower) startTyping() {
	if !f.c.capSet().has(capTags) {
		return
	}
	f.sendTyping("active")
	if f.typing == nil {
		f.typing = time.NewTicker(typingEvery)
	}
}

// stopTyping ends the typing notifications (with done: tells the client).
func (f *follower) stopTyping(done bool) {
	if f.typing == nil {
		return
	}
	f.typing.Stop()
	f.typing = nil
	if done {
		f.sendTyping("done")
	}
}

func (f *follower) sendTyping(state string) {
	m := ircmsg.MakeMessage(nil, f.v.agentSource(), "TAGMSG", f.v.agentTarget())
	m.SetTag("+typing", state)
	m.SetTag("time", tagTime(time.Now()))
	m.SetTag("bot", "")
	f.c.followLine(f.j.ctx, m, false) // a notification is dropped rather than waited for
}

// labeled returns msgs as the one labeled response to a command:
// unlabeled as they are; one line with the label; or a labeled-response
// batch around them.
func labeled(c *conn, label string, msgs []ircmsg.Message) []ircmsg.Message {
	if label == "" || !c.capSet().has(capLabeled|capBatch) {
		return msgs
	}
	srv := c.srv.opts.ServerName
	switch {
	case len(msgs) == 0:
		ack := ircmsg.MakeMessage(nil, srv, "ACK")
		ack.SetTag("label", label)
		return []ircmsg.Message{ack}
	case len(msgs) == 1 || isOneBatch(msgs):
		msgs[0].SetTag("label", label)
		return msgs
	}
	ref := c.newBatchRef()
	start := ircmsg.MakeMessage(nil, srv, "BATCH", "+"+ref, "labeled-response")
	start.SetTag("label", label)
	out := make([]ircmsg.Message, 0, len(msgs)+2)
	out = append(out, start)
	for _, m := range msgs {
		if !m.HasTag("batch") {
			m.SetTag("batch", ref)
		}
		out = append(out, m)
	}
	return append(out, ircmsg.MakeMessage(nil, srv, "BATCH", "-"+ref))
}
