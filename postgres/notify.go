package postgres

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentik/agentik"
)

// Notifications on the store's channel carry one or more entries, one per
// line, after a header "<node> <seq> ":
//
//	e <conversation id> <cursor> …  events of each conversation
//	                             up to its cursor are committed
//	a <cursor>                   agent events up to cursor are numbered
//	d <mac> <prev> <event JSON>  a durable event this process committed, whose
//	                             predecessor in its conversation is <prev> (0:
//	                             none); it also says the events up to its
//	                             cursor are committed, as an e entry would.
//	                             <mac> signs "<prev> <event JSON>" (signDurable)
//	o <before> <event JSON>      an online event (working, append_text, end, …),
//	                             published before this process committed any
//	                             event of its conversation with a cursor ≥
//	                             <before> (Event.SentBefore); "o <event JSON>"
//	                             (before unknown) is read too
//	i <conversation id> <reason> <unless> [<reply to>]  interrupt the
//	                             conversation's running turn unless it answers message
//	                             <unless> ("-": any); with <reply to>, only the turn
//	                             answering that message
//
// node is the sending process's id (a process ignores its own), seq a counter
// of that process: PostgreSQL folds identical payloads sent in one
// transaction into one, and two equal deltas must both arrive. A sender packs
// the entries it has queued into as few payloads as fit (one notification
// each, in order): every notification costs the database and every listening
// process the same whatever its size. JSON never holds a raw newline.
//
// PostgreSQL refuses payloads of 8000 bytes or more. maxPayload leaves room
// for the header; an append_text event that does not fit is split into
// several (their texts concatenate to the original), any other online event
// that does not fit is not sent to other processes (see docs/postgres.md).
const maxPayload = 7999

// maxHeader bounds a payload's header: a node id, a seq and two spaces.
const maxHeader = 64

// maxEntry bounds one entry, so that it fits a payload with any header.
const maxEntry = maxPayload - maxHeader

// Notification kinds.
const (
	kindEvents    = 'e'
	kindDurable   = 'd'
	kindAgent     = 'a'
	kindOnline    = 'o'
	kindInterrupt = 'i'
)

// notification is a decoded payload.
type notification struct {
	node    string
	seq     uint64
	kind    byte
	cursor  int64         // a
	events  []convCursor  // e
	event   agentik.Event // o, d
	raw     string        // o, read by its head (onlineHead): the entry; event has its conversation and type only
	prev    int64         // d
	mac     string        // d: the signature, hex
	signed  string        // d, decoded: what mac signs, as received
	conv    string        // i
	reason  string        // i
	unless  string        // i: "" for any turn
	replyTo string        // i: "" for any turn
}

var errBadNotification = errors.New("malformed notification")

// maxPresized bounds the entries decodePayload allocates room for at once.
const maxPresized = 64

// encodeNotification renders n as a payload of its own.
func encodeNotification(n notification) (string, error) {
	e, err := encodeEntry(n)
	if err != nil {
		return "", err
	}
	return header(n.node, n.seq) + e, nil
}

func header(node string, seq uint64) string {
	return node + " " + strconv.FormatUint(seq, 10) + " "
}

// encodeEntry renders n without its header: "<kind> <body>".
func encodeEntry(n notification) (string, error) {
	var b strings.Builder
	b.WriteByte(n.kind)
	b.WriteByte(' ')
	switch n.kind {
	case kindEvents:
		if len(n.events) == 0 {
			return "", errBadNotification
		}
		for i, e := range n.events {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(e.conv)
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(e.cursor, 10))
		}
	case kindAgent:
		b.WriteString(strconv.FormatInt(n.cursor, 10))
	case kindOnline:
		j, err := agentik.MarshalEvent(&n.event)
		if err != nil || n.event.SentBefore < 0 {
			return "", errBadNotification
		}
		if n.event.SentBefore > 0 { // 0: not known, as an older process writes it
			b.WriteString(strconv.FormatInt(n.event.SentBefore, 10))
			b.WriteByte(' ')
		}
		b.Write(j)
	case kindDurable:
		j, err := agentik.MarshalEvent(&n.event)
		if err != nil || n.mac == "" || strings.Contains(n.mac, " ") {
			return "", errBadNotification
		}
		b.WriteString(n.mac)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(n.prev, 10))
		b.WriteByte(' ')
		b.Write(j)
	case kindInterrupt:
		b.WriteString(n.conv)
		b.WriteByte(' ')
		b.WriteString(n.reason)
		b.WriteByte(' ')
		if n.unless == "" {
			b.WriteByte('-')
		} else {
			b.WriteString(n.unless)
		}
		if n.replyTo != "" {
			b.WriteByte(' ')
			b.WriteString(n.replyTo)
		}
	default:
		return "", errBadNotification
	}
	return b.String(), nil
}

// packPayloads packs entries, in order, into as few payloads of at most
// maxPayload bytes as they fit, each with a header from seq.
func packPayloads(node string, seq func() uint64, entries []string) []string {
	var out []string
	var b strings.Builder
	for _, e := range entries {
		if b.Len() > 0 && b.Len()+1+len(e) > maxPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(header(node, seq()))
		} else {
			b.WriteByte('\n')
		}
		b.WriteString(e)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// decodePayload parses a payload into its entries, each with the header's
// node and seq, and counts the malformed entries it skipped. A payload
// whose header is malformed is refused whole. A malformed entry costs only
// itself: the entries around it (in a packed payload, events of other
// conversations) are each checked on their own and delivered.
//
// A d entry of a conversation for which unfollowed (when not nil) is true
// comes back as the e entry it also is (durableHead): its event is not
// decoded, nor its signature checked. An o entry of such a conversation
// whose type onlineHead reads comes back with only its conversation and
// type decoded, and the entry in raw: the rest is decoded when needed
// (Bus.deliverRemote).
func decodePayload(p string, unfollowed func(conv string) bool) (ns []notification, bad int, err error) {
	node, rest, ok := strings.Cut(p, " ")
	if !ok || node == "" {
		return nil, 0, errBadNotification
	}
	seqText, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return nil, 0, errBadNotification
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return nil, 0, errBadNotification
	}
	// One allocation for the entries of a payload as senders pack them: a
	// notification is large, and growing the slice copied it over and
	// over. Bounded, so that a forged payload of empty lines does not
	// allocate for each.
	ns = make([]notification, 0, min(strings.Count(rest, "\n")+1, maxPresized))
	for line := range strings.SplitSeq(rest, "\n") {
		if unfollowed != nil && line != "" && line[0] == kindDurable {
			if h, ok := durableHead(line); ok && unfollowed(h.conv) {
				ns = append(ns, notification{node: node, seq: seq, kind: kindEvents, events: []convCursor{h}})
				continue
			}
		}
		if unfollowed != nil && line != "" && line[0] == kindOnline {
			if conv, typ, ok := onlineHead(line); ok && unfollowed(conv) {
				// A copy: line shares the payload's memory, which a turn
				// kept as entries would otherwise hold whole.
				ns = append(ns, notification{node: node, seq: seq, kind: kindOnline, raw: strings.Clone(line),
					event: agentik.Event{ConversationID: conv, Type: typ}})
				continue
			}
		}
		n, err := decodeEntry(line)
		if err != nil {
			bad++
			continue
		}
		n.node, n.seq = node, seq
		ns = append(ns, n)
	}
	return ns, bad, nil
}

// decodeNotification parses a payload of one entry.
func decodeNotification(p string) (notification, error) {
	ns, bad, err := decodePayload(p, nil)
	if err != nil || bad > 0 || len(ns) != 1 {
		return notification{}, errBadNotification
	}
	return ns[0], nil
}

// decodeEntry parses one entry. Anyone allowed to connect can notify on the
// channel, so everything is checked: an online event must be a non-durable
// type of a conversation, a durable one a durable type after its
// predecessor (its signature is the Bus's to check), an interrupt must name
// a conversation.
func decodeEntry(rest string) (notification, error) {
	var n notification
	if len(rest) < 2 || rest[1] != ' ' {
		return n, errBadNotification
	}
	n.kind, rest = rest[0], rest[2:]
	var ok bool
	switch n.kind {
	case kindEvents:
		ok = decodeCursors(&n, rest)
	case kindAgent:
		var err error
		n.cursor, err = strconv.ParseInt(rest, 10, 64)
		ok = err == nil && n.cursor > 0
	case kindOnline:
		ok = decodeOnline(&n, rest)
	case kindDurable:
		ok = decodeDurable(&n, rest)
	case kindInterrupt:
		ok = decodeInterrupt(&n, rest)
	}
	if !ok {
		return n, errBadNotification
	}
	return n, nil
}

// decodeCursors parses an e entry's body: conversations and cursors.
func decodeCursors(n *notification, rest string) bool {
	parts := strings.Split(rest, " ")
	if len(parts)%2 != 0 {
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		c, err := strconv.ParseInt(parts[i+1], 10, 64)
		if err != nil || c <= 0 || !agentik.ValidID(parts[i]) {
			return false
		}
		n.events = append(n.events, convCursor{parts[i], c})
	}
	return true
}

// decodeDurable parses a d entry's body: signature, predecessor, event.
func decodeDurable(n *notification, rest string) bool {
	var ok bool
	if n.mac, n.signed, ok = strings.Cut(rest, " "); !ok || len(n.mac) != macHex {
		return false
	}
	prev, j, ok := strings.Cut(n.signed, " ")
	var err error
	if n.prev, err = strconv.ParseInt(prev, 10, 64); !ok || err != nil || n.prev < 0 {
		return false
	}
	return json.Unmarshal([]byte(j), &n.event) == nil &&
		n.event.Cursor > n.prev && agentik.Durable(n.event.Type) && agentik.ValidID(n.event.ConversationID)
}

// durableHead reads a d entry's conversation and cursor without decoding
// its event or checking its signature, from the first members of the
// event's JSON as MarshalEvent writes them: {"cursor":…,"conversation_id":"…".
// ok is false for an entry that does not start so; it is decoded whole.
//
// To a process that follows nothing of the conversation, the entry says no
// more than an e entry would — the conversation's events up to the cursor
// are committed — and an e entry is not signed either. Decoding the event
// and checking its signature cost such a process most of what reading
// other processes' notifications cost it (issue 53, twelfth session), and
// with messages posted to any process, most conversations are followed by
// one process of several.
func durableHead(entry string) (convCursor, bool) {
	body, ok := strings.CutPrefix(entry, "d ")
	if !ok || len(body) <= macHex || body[macHex] != ' ' {
		return convCursor{}, false
	}
	prevText, j, ok := strings.Cut(body[macHex+1:], " ")
	prev, err := strconv.ParseInt(prevText, 10, 64)
	if !ok || err != nil || prev < 0 {
		return convCursor{}, false
	}
	if j, ok = strings.CutPrefix(j, `{"cursor":`); !ok {
		return convCursor{}, false
	}
	cursorText, j, ok := strings.Cut(j, ",")
	cursor, err := strconv.ParseInt(cursorText, 10, 64)
	if !ok || err != nil || cursor <= prev {
		return convCursor{}, false
	}
	if j, ok = strings.CutPrefix(j, `"conversation_id":"`); !ok {
		return convCursor{}, false
	}
	conv, _, ok := strings.Cut(j, `"`)
	if !ok || !agentik.ValidID(conv) {
		return convCursor{}, false
	}
	return convCursor{conv, cursor}, true
}

// onlineHead reads an o entry's conversation and type without decoding
// its event, from the first members of the event's JSON as MarshalEvent
// writes an online event: {"conversation_id":"…","date":"…","type":"…".
// ok is false for an entry that does not start so, and for a type whose
// other fields a process that follows nothing of the conversation needs
// at once (lazyOnline): it is decoded whole.
//
// Such a process only keeps track of the turn (Bus.trackLocked): which
// message it answers and its text so far, read when someone asks
// (remoteTurn.settle). Decoding every online event of every turn the
// other processes run was most of what reading their notifications still
// cost (issue 53, thirteenth session).
func onlineHead(entry string) (conv, typ string, ok bool) {
	body, ok := strings.CutPrefix(entry, "o ")
	if !ok {
		return "", "", false
	}
	if _, body, ok = cutBefore(body); !ok {
		return "", "", false
	}
	if body, ok = strings.CutPrefix(body, `{"conversation_id":"`); !ok {
		return "", "", false
	}
	if conv, body, ok = strings.Cut(body, `"`); !ok || !agentik.ValidID(conv) {
		return "", "", false
	}
	if body, ok = strings.CutPrefix(body, `,"date":"`); !ok {
		return "", "", false
	}
	if _, body, ok = strings.Cut(body, `"`); !ok {
		return "", "", false
	}
	if body, ok = strings.CutPrefix(body, `,"type":"`); !ok {
		return "", "", false
	}
	if typ, _, ok = strings.Cut(body, `"`); !ok || !lazyOnline(typ) {
		return "", "", false
	}
	return conv, typ, true
}

// decodeRaw decodes an entry onlineHead read as an online event of conv
// of type typ. An entry whose whole decode fails or names another
// conversation or type (hand-made JSON that gives a key twice) is refused:
// only its head was checked.
func decodeRaw(entry, conv, typ string) (agentik.Event, bool) {
	n, err := decodeEntry(entry)
	if err != nil || n.kind != kindOnline || n.event.ConversationID != conv || n.event.Type != typ {
		return agentik.Event{}, false
	}
	return n.event, true
}

// lazyOnline tells the online event types onlineHead reads: those whose
// other fields a process tracking the turn reads only when asked.
func lazyOnline(typ string) bool {
	switch typ {
	case agentik.EvWorking, agentik.EvStartReasoning, agentik.EvStartResponse, agentik.EvAppendText, agentik.EvEnd:
		return true
	}
	return false
}

// decodeOnline parses an o entry's body: what the event was sent before
// (absent from an older process's entries), then the event.
func decodeOnline(n *notification, rest string) bool {
	before, rest, ok := cutBefore(rest)
	if !ok || json.Unmarshal([]byte(rest), &n.event) != nil {
		return false
	}
	n.event.SentBefore = before
	return n.event.Cursor == 0 && n.event.Type != "" && !agentik.Durable(n.event.Type) && agentik.ValidID(n.event.ConversationID)
}

// cutBefore splits an o entry's body into what its event was sent before
// (0 when absent, as an older process writes it) and the event's JSON.
func cutBefore(body string) (before int64, event string, ok bool) {
	if strings.HasPrefix(body, "{") {
		return 0, body, true
	}
	b, j, ok := strings.Cut(body, " ")
	before, err := strconv.ParseInt(b, 10, 64)
	return before, j, ok && err == nil && before >= 1
}

// decodeInterrupt parses an i entry's body.
func decodeInterrupt(n *notification, rest string) bool {
	parts := strings.Split(rest, " ")
	if len(parts) < 3 || len(parts) > 4 || !agentik.ValidID(parts[0]) || (parts[2] != "-" && !agentik.ValidID(parts[2])) ||
		(len(parts) == 4 && !agentik.ValidID(parts[3])) {
		return false
	}
	switch parts[1] {
	case agentik.ReasonUser, agentik.ReasonBusyPolicy:
	default:
		return false
	}
	n.conv, n.reason = parts[0], parts[1]
	if parts[2] != "-" {
		n.unless = parts[2]
	}
	if len(parts) == 4 {
		n.replyTo = parts[3]
	}
	return true
}

// durableEntry encodes a durable event this process committed, after the
// event prev of its conversation, for other processes, signed with key:
// "" when it does not fit an entry or holds an image (both are read from
// the store instead).
func durableEntry(key []byte, ev agentik.Event, prev int64) string {
	if ev.Message != nil && slices.ContainsFunc(ev.Message.Content, func(c agentik.Content) bool { return c.Type != agentik.ContentText }) {
		return ""
	}
	j, err := agentik.MarshalEvent(&ev)
	if err != nil {
		return ""
	}
	signed := strconv.FormatInt(prev, 10) + " " + string(j)
	e := string(kindDurable) + " " + signDurable(key, signed) + " " + signed
	if len(e) > maxEntry {
		return ""
	}
	return e
}

// macHex is the length of a d entry's signature: the first 128 bits of
// HMAC-SHA256, in hex.
const macHex = 32

// signDurable signs a d entry's "<prev> <event JSON>" with the database's
// bus key (migrations/0018): a durable event from a notification moves
// what a process has delivered of its conversation, so one that anybody
// allowed to connect could NOTIFY would stop its streams (a cursor far
// ahead), where a forged e entry only costs a read of the store.
func signDurable(key []byte, signed string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signed))
	return hex.EncodeToString(m.Sum(nil)[:macHex/2])
}

// signedBy says whether d entry n was signed with key.
func signedBy(key []byte, n notification) bool {
	return len(key) > 0 && hmac.Equal([]byte(n.mac), []byte(signDurable(key, n.signed)))
}

// onlineEntries encodes an online event for other processes, splitting an
// append_text that does not fit into one entry. It returns nil for any
// other event that does not fit.
func onlineEntries(ev agentik.Event) []string {
	e, err := encodeEntry(notification{kind: kindOnline, event: ev})
	if err != nil {
		return nil
	}
	if len(e) <= maxEntry {
		return []string{e}
	}
	if ev.Type != agentik.EvAppendText || len(ev.Text) < 2 {
		return nil
	}
	// Halve at a rune boundary until each part fits: JSON escaping makes the
	// encoded size hard to predict from the text alone.
	mid := len(ev.Text) / 2
	for mid > 0 && !utf8.RuneStart(ev.Text[mid]) {
		mid--
	}
	if mid == 0 {
		return nil
	}
	first, second := ev, ev
	first.Text, second.Text = ev.Text[:mid], ev.Text[mid:]
	a := onlineEntries(first)
	b := onlineEntries(second)
	if a == nil || b == nil {
		return nil
	}
	return append(a, b...)
}
