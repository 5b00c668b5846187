package irc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/agentik/agentik"
)

// view is how one client sees one conversation: who speaks, to which
// target. Lines of a channel go to the channel; in a direct conversation
// the agent writes to the client's nick and the client to the agent's.
type view struct {
	c      *conn
	agent  *agentUser
	convID string
	target string // channel name; "" for a direct conversation
}

func (j *joined) view() view {
	v := view{c: j.c, agent: j.agent, convID: j.conv.ID()}
	if !j.direct {
		v.target = j.name
	}
	return v
}

func (v view) agentSource() string { return v.agent.source(v.c.srv.opts.ServerName) }

// agentTarget is where the agent's lines go.
func (v view) agentTarget() string {
	if v.target == "" {
		return v.c.currentNick()
	}
	return v.target
}

// metaSource is the metadata key of the user messages stored from IRC
// that holds the sender's mask ("nick!user@host") when it sent them: the
// message is shown from that mask live and in every replay, as it was
// (after a change of nick too, as ergo's history does).
const metaSource = "irc_source"

// userLine returns the source and target of a user message. In a direct
// conversation every user message is the principal's: it is shown as the
// client's own. In a channel it comes from the mask it was sent from
// (metaSource), else from a nick made from its origin ("<nick>!<nick>@<server>":
// a message of another facade, or stored before masks were); both are the
// same whenever the message is sent.
func (v view) userLine(m *agentik.Message) (src, target string) {
	if v.target == "" {
		return v.c.source(), v.agent.nick
	}
	nick, rest := sentFrom(m)
	if nick == "" {
		nick = "user"
		if o := originOf(m); o != nil {
			switch {
			case o.DisplayName != "":
				nick = nickOf(o.DisplayName)
			case o.User != "":
				nick = nickOf(o.User)
			}
		}
		rest = "!" + nick + "@" + v.c.srv.opts.ServerName
	}
	if v.c.agentNamed(nick) != nil {
		nick += "_" // never looks like an agent (of those the client sees)
	}
	return nick + rest, v.target
}

// sentFrom splits the mask an IRC user message was sent from into the
// nick and "!user@host"; "" when it has none (or not one that makes a
// line: the metadata of a message sent through another facade is the
// client's to set).
func sentFrom(m *agentik.Message) (nick, rest string) {
	o := originOf(m)
	if o == nil || o.Channel != "irc" {
		return "", ""
	}
	mask := m.Context.Metadata[metaSource]
	nick, uh, ok1 := strings.Cut(mask, "!")
	user, host, ok2 := strings.Cut(uh, "@")
	if !ok1 || !ok2 || !validNick(nick) || !maskPart(user, maxUserLen+1) || !maskPart(host, 255) {
		return "", ""
	}
	return nick, "!" + uh
}

// maskPart reports whether s can be the user or host of a mask.
func maskPart(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '!' || c == '@' || c == 0x7f {
			return false
		}
	}
	return true
}

func originOf(m *agentik.Message) *agentik.Origin {
	if m.Context == nil {
		return nil
	}
	return m.Context.Origin
}

// tagTime is the server-time form of t.
func tagTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// privmsg builds one PRIVMSG with the tags every Agentik line carries.
func privmsg(src, target, text, msgid string, at time.Time, bot bool) ircmsg.Message {
	m := ircmsg.MakeMessage(nil, src, "PRIVMSG", target, text)
	m.SetTag("time", tagTime(at))
	if msgid != "" {
		m.SetTag("msgid", msgid)
	}
	if bot {
		m.SetTag("bot", "")
	}
	return m
}

// lineID is the msgid of line i (from 0) of the n lines a journal message
// is sent as: the last line carries the message's own id, so a client
// that saw a message to its end can page history from it; the others add
// "~<i>". Both forms are accepted as CHATHISTORY selectors.
func lineID(id string, i, n int) string {
	if i == n-1 {
		return id
	}
	return id + "~" + strconv.Itoa(i+1)
}

// stampPrefix is put before history lines sent to a client without
// server-time, which would otherwise take old lines for new ones.
func (v view) stampPrefix(at time.Time) string {
	if v.c.capSet().has(capServerTime) {
		return ""
	}
	return "[" + at.UTC().Format("2006-01-02 15:04") + "] "
}

// textLines splits text into PRIVMSG lines from src to target, each prefix
// + piece, with msgids from id.
func textLines(src, target, prefix, text, id string, at time.Time, bot bool) []ircmsg.Message {
	pieces := splitText(text, budget(src, "PRIVMSG", target, len(prefix)))
	out := make([]ircmsg.Message, len(pieces))
	for i, p := range pieces {
		out[i] = privmsg(src, target, prefix+p, lineID(id, i, len(pieces)), at, bot)
	}
	return out
}

// imageNote is the text of a line that stands for an image: its type and,
// when the server has an HTTP side, the authenticated URL to fetch it.
func (v view) imageNote(p agentik.Content, seq int64, n int) string {
	note := "[image " + p.MIME + "]"
	if f := v.c.srv.opts.ImageURL; f != nil && seq > 0 {
		if u := f(v.agent.id, v.convID, seq, n); u != "" {
			note += " " + u
		}
	}
	return note
}

// message renders a journal message as the lines it is sent as. history
// adds what live clients learn from other events (the INTERRUPTED marker
// of a cut answer) and dates lines for clients without server-time.
func (v view) message(m *agentik.Message, history bool) []ircmsg.Message {
	at := m.Date.Time
	prefix := ""
	if history {
		prefix = v.stampPrefix(at)
	}
	switch m.Type {
	case agentik.MsgUser, agentik.MsgAssistant:
		src, target, bot := v.agentSource(), v.agentTarget(), true
		if m.Type == agentik.MsgUser {
			src, target = v.userLine(m)
			bot = false
		}
		text := agentik.JoinText(m.Content)
		n := 0
		for _, p := range m.Content {
			if p.Type == agentik.ContentImage {
				text += "\n" + v.imageNote(p, m.Seq, n)
				n++
			}
		}
		out := textLines(src, target, prefix, text, m.ID, at, bot)
		if history && m.Type == agentik.MsgAssistant && m.Interrupted {
			// The journal keeps that the answer was cut and why: the line
			// says what the live one said.
			tags := map[string]string{"event": agentik.EvInterrupted, "reply-to": m.ReplyTo}
			if m.InterruptReason != "" {
				tags["reason"] = m.InterruptReason
			}
			out = append(out, v.ctcp(prefix, "INTERRUPTED", m.InterruptReason, eventID(m.ID, "interrupted"), at, tags))
		}
		return out
	case agentik.MsgToolCall:
		return []ircmsg.Message{v.toolCall(m, prefix)}
	case agentik.MsgToolResult:
		return []ircmsg.Message{v.toolResult(m, prefix)}
	case agentik.MsgError:
		return []ircmsg.Message{v.errorLine(m, prefix)}
	}
	return nil
}

// eventID is the msgid of a line that stands for an event rather than a
// journal message (INTERRUPTED, COMPACTION): "<anchor>~<what>", where the
// anchor is the id of the journal message the event follows. It is the
// same live and in every replay, so clients de-duplicate the line, and
// CHATHISTORY resolves it (as the anchor) like a line's "<id>~<n>".
// Without an anchor the line has no msgid.
func eventID(anchor, what string) string {
	if anchor == "" {
		return ""
	}
	return anchor + "~" + what
}

// ctcp builds a CTCP AGENTIK line from the agent: "\x01AGENTIK <kind>
// <text>\x01", the text cut to fit, with the vendor tags (names without
// the vendor prefix) for clients with message-tags. msgid is derived from
// what the line stands for (a journal message, eventID), never made up:
// the line must carry the same id whenever it is sent.
func (v view) ctcp(prefix, kind, text, msgid string, at time.Time, tags map[string]string) ircmsg.Message {
	src, target := v.agentSource(), v.agentTarget()
	head := prefix + "\x01AGENTIK " + kind
	body := head
	if text != "" {
		room := budget(src, "PRIVMSG", target, len(head)+2) // " " and the closing \x01
		body += " " + oneLine(text, room)
	}
	m := privmsg(src, target, body+"\x01", msgid, at, true)
	for k, val := range tags {
		if val != "" || k == "is-error" {
			m.SetTag(vendor+k, val)
		}
	}
	return m
}

// compactJSON returns the arguments of a tool call on one line.
func compactJSON(raw agentik.RawJSON) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// maxArgumentsTag bounds the arguments carried in a tag; longer ones are
// only in the (cut) CTCP text.
const maxArgumentsTag = 2048

func (v view) toolCall(m *agentik.Message, prefix string) ircmsg.Message {
	args := compactJSON(m.Arguments)
	tags := map[string]string{"event": agentik.EvToolCall, "call-id": m.CallID, "tool": m.Name, "reply-to": m.ReplyTo}
	if len(args) <= maxArgumentsTag {
		tags["arguments"] = args
	}
	return v.ctcp(prefix, "TOOL_CALL", m.Name+" "+m.CallID+" "+args, m.ID, m.Date.Time, tags)
}

func (v view) toolResult(m *agentik.Message, prefix string) ircmsg.Message {
	status, event := "ok", agentik.EvToolResult
	if m.IsError {
		status, event = "error", agentik.EvToolFailed
	}
	text := agentik.JoinText(m.Content)
	n := 0
	for _, p := range m.Content {
		if p.Type == agentik.ContentImage {
			text += " " + v.imageNote(p, m.Seq, n)
			n++
		}
	}
	tags := map[string]string{"event": event, "call-id": m.CallID, "tool": m.Name, "reply-to": m.ReplyTo}
	if m.IsError {
		tags["is-error"] = ""
	}
	return v.ctcp(prefix, "TOOL_RESULT", strings.TrimSpace(m.Name+" "+m.CallID+" "+status+" "+text), m.ID, m.Date.Time, tags)
}

func (v view) errorLine(m *agentik.Message, prefix string) ircmsg.Message {
	return v.ctcp(prefix, "ERROR", m.Code+" "+m.Details, m.ID, m.Date.Time,
		map[string]string{"event": agentik.EvError, "code": m.Code, "reply-to": m.ReplyTo})
}
