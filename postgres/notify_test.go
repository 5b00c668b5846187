package postgres

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

func TestNotificationRoundTrip(t *testing.T) {
	node, conv := agentik.NewID(), agentik.NewID()
	mac := strings.Repeat("ab", 16)
	for _, n := range []notification{
		{node: node, seq: 1, kind: kindEvents, events: []convCursor{{conv, 42}}},
		{node: node, seq: 6, kind: kindEvents, events: []convCursor{{conv, 42}, {node, 9}}},
		{node: node, seq: 2, kind: kindAgent, cursor: 7},
		{node: node, seq: 3, kind: kindOnline, event: agentik.Event{ConversationID: conv, Date: agentik.Now(), Type: agentik.EvAppendText, Text: "hi \x00 there", SentBefore: 5}},
		{node: node, seq: 7, kind: kindDurable, prev: 41, mac: strings.Repeat("ab", 16), event: agentik.Event{ConversationID: conv, Cursor: 42, Date: agentik.Now(), Type: agentik.EvUserMessage,
			Message: &agentik.Message{ID: node, ConversationID: conv, Seq: 3, Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("hi\n")}}}},
		{node: node, seq: 8, kind: kindDurable, mac: strings.Repeat("0", 32), event: agentik.Event{ConversationID: conv, Cursor: 1, Type: agentik.EvStateUpdated}},
		{node: node, seq: 4, kind: kindInterrupt, conv: conv, reason: agentik.ReasonUser},
		{node: node, seq: 5, kind: kindInterrupt, conv: conv, reason: agentik.ReasonBusyPolicy, unless: node},
		{node: node, seq: 6, kind: kindInterrupt, conv: conv, reason: agentik.ReasonUser, replyTo: node},
	} {
		p, err := encodeNotification(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeNotification(p)
		got.signed = ""
		if err != nil || !reflect.DeepEqual(got, n) {
			t.Fatalf("%q decoded to %+v, %v; want %+v", p, got, err, n)
		}
	}
	// An older process's o entry says nothing of what it came before.
	if got, err := decodeNotification(node + ` 1 o {"conversation_id":"` + conv + `","type":"end"}`); err != nil || got.event.SentBefore != 0 || got.event.Type != agentik.EvEnd {
		t.Fatalf("an o entry without before: %+v, %v", got, err)
	}
	for _, bad := range []string{
		"", "x", node + " 1 e", node + " 1 e 42", node + " 1 e " + conv + " 0", node + " 1 e " + conv + " -3",
		node + " 1 e " + conv, node + " 1 e " + conv + " 1 " + conv, node + " 1 e nope 1", node + " 1 e " + conv + "  1",
		node + " x e " + conv + " 1", node + " 1 z 1",
		node + " 1 o {}", node + ` 1 o {"conversation_id":"` + conv + `","type":"user_message"}`,
		node + ` 1 o {"conversation_id":"` + conv + `","type":"end","cursor":3}`,
		node + ` 1 o 0 {"conversation_id":"` + conv + `","type":"end"}`, node + ` 1 o -2 {"conversation_id":"` + conv + `","type":"end"}`,
		node + ` 1 o x {"conversation_id":"` + conv + `","type":"end"}`, node + ` 1 o 3`, node + ` 1 o 3 {}`,
		node + " 1 d " + mac + ` 3 {"conversation_id":"` + conv + `","type":"user_message","cursor":3}`,
		node + " 1 d " + mac + ` -1 {"conversation_id":"` + conv + `","type":"user_message","cursor":3}`,
		node + " 1 d " + mac + ` {"conversation_id":"` + conv + `","type":"user_message","cursor":3}`,
		node + " 1 d " + mac + ` 1 {"conversation_id":"` + conv + `","type":"end","cursor":3}`,
		node + " 1 d " + mac + ` 1 {"conversation_id":"nope","type":"user_message","cursor":3}`,
		node + ` 1 d 1 {"conversation_id":"` + conv + `","type":"user_message","cursor":3}`,
		node + " 1 d abc" + ` 1 {"conversation_id":"` + conv + `","type":"user_message","cursor":3}`,
		node + " 1 i " + conv + " restart -", node + " 1 i nope user -", node + " 1 i " + conv + " user", node + " 1 i " + conv + " user x",
		node + " 1 i " + conv + " user - -", node + " 1 i " + conv + " user - x", node + " 1 i " + conv + " user - " + conv + " " + conv,
	} {
		if _, err := decodeNotification(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestOnlinePayloadsFit(t *testing.T) {
	node, conv := agentik.NewID(), agentik.NewID()
	var seq uint64
	next := func() uint64 { seq++; return seq }
	text := strings.Repeat("\x01ж", 10000) // escapes to 6 bytes + 2
	es := onlineEntries(agentik.Event{ConversationID: conv, Type: agentik.EvAppendText, Text: text, SentBefore: 1 << 40})
	ps := packPayloads(node, next, es)
	var joined strings.Builder
	for _, p := range ps {
		if len(p) > maxPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		ns, bad, err := decodePayload(p, nil)
		if err != nil || bad > 0 {
			t.Fatal(err, bad)
		}
		for _, n := range ns {
			joined.WriteString(n.event.Text)
		}
	}
	if joined.String() != text {
		t.Fatalf("split text does not join back (%d payloads)", len(ps))
	}
	if es := onlineEntries(agentik.Event{ConversationID: conv, Type: agentik.EvAppendImage, Data: strings.Repeat("A", 8000), SentBefore: 1}); es != nil {
		t.Fatalf("an oversized image was encoded into %d entries", len(es))
	}
}

// TestPackPayloads: entries queued together travel in as few payloads as
// fit, in order, each under PostgreSQL's limit, and decode back to them.
func TestPackPayloads(t *testing.T) {
	node, conv := agentik.NewID(), agentik.NewID()
	var seq uint64
	next := func() uint64 { seq++; return seq }
	var want []notification
	var entries []string
	for i := range 300 {
		var n notification
		switch i % 3 {
		case 0:
			n = notification{kind: kindOnline, event: agentik.Event{ConversationID: conv, Type: agentik.EvAppendText, Text: strings.Repeat("x", i) + "\n", SentBefore: 1 << 40}}
		case 1:
			n = notification{kind: kindEvents, events: []convCursor{{conv, int64(i)}}}
		default:
			n = notification{kind: kindAgent, cursor: int64(i)}
		}
		e, err := encodeEntry(n)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
		want = append(want, n)
	}
	ps := packPayloads(node, next, entries)
	var got []notification
	for _, p := range ps {
		if len(p) > maxPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		ns, bad, err := decodePayload(p, nil)
		if err != nil || bad > 0 {
			t.Fatalf("%q: %v, %d malformed entries", p, err, bad)
		}
		for _, n := range ns {
			if n.node != node {
				t.Fatalf("node %q", n.node)
			}
			n.node, n.seq = "", 0
			got = append(got, n)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%d entries came back as %d", len(want), len(got))
	}
	// 300 entries of about 170 bytes on average: a handful of payloads.
	if len(ps) > 10 {
		t.Fatalf("%d payloads for %d entries", len(ps), len(entries))
	}
	// A malformed entry is skipped alone: its neighbours, which may be
	// other conversations' events, still count (issue 53: an empty entry
	// cost every other process the online events packed with it).
	conv = agentik.NewID()
	end := `o {"conversation_id":"` + conv + `","type":"end"}`
	for _, bad := range []string{"z 1", "", "a 0", "o {}", "e x 1"} {
		ns, n, err := decodePayload(node+" 1 a 3\n"+bad+"\n"+end, nil)
		if err != nil || n != 1 || len(ns) != 2 || ns[0].cursor != 3 || ns[1].event.Type != agentik.EvEnd || ns[1].event.ConversationID != conv {
			t.Fatalf("with %q between: %+v, %d malformed, %v", bad, ns, n, err)
		}
	}
	if _, _, err := decodePayload("x", nil); err == nil {
		t.Fatal("a payload without a header decoded")
	}
}

// TestUnfollowedDurableEntries: a d entry of a conversation this process
// follows nothing of is read as the e entry it also is, without decoding
// its event or checking its signature (durableHead); one of a followed
// conversation, or one whose JSON does not start as MarshalEvent writes
// it, is decoded whole.
func TestUnfollowedDurableEntries(t *testing.T) {
	node, conv, other := agentik.NewID(), agentik.NewID(), agentik.NewID()
	key := []byte("0123456789abcdef0123456789abcdef")
	msg := &agentik.Message{ID: node, ConversationID: conv, Seq: 3, Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("hi")}}
	d := durableEntry(key, agentik.Event{ConversationID: conv, Cursor: 42, Date: agentik.Now(), Type: agentik.EvUserMessage, Message: msg}, 41)
	forged := "d " + strings.Repeat("0", macHex) + d[2+macHex:] // the same event, a bad signature
	reordered := "d " + strings.Repeat("0", macHex) + ` 41 {"conversation_id":"` + conv + `","cursor":42,"type":"user_message"}`
	p := header(node, 1) + strings.Join([]string{d, forged, reordered, "e " + other + " 7"}, "\n")
	onlyOther := func(c string) bool { return c != other }
	ns, bad, err := decodePayload(p, onlyOther)
	asE := notification{node: node, seq: 1, kind: kindEvents, events: []convCursor{{conv, 42}}}
	if err != nil || bad != 0 || len(ns) != 4 || !reflect.DeepEqual(ns[0], asE) || !reflect.DeepEqual(ns[1], asE) ||
		ns[2].kind != kindDurable || ns[3].kind != kindEvents {
		t.Fatalf("unfollowed: %+v, %d malformed, %v", ns, bad, err)
	}
	ns, bad, err = decodePayload(p, func(string) bool { return false })
	if err != nil || bad != 0 || len(ns) != 4 || ns[0].kind != kindDurable || ns[0].event.Message == nil || ns[0].event.Message.Content[0].Text != "hi" ||
		!signedBy(key, ns[0]) || signedBy(key, ns[1]) {
		t.Fatalf("followed: %+v, %d malformed, %v", ns, bad, err)
	}
	for _, e := range []string{
		"d " + strings.Repeat("0", macHex) + ` 42 {"cursor":42,"conversation_id":"` + conv + `"}`, // not after its predecessor
		"d " + strings.Repeat("0", macHex) + ` 1 {"cursor":42,"conversation_id":"nope"}`,
		"d " + strings.Repeat("0", macHex) + ` 1 {"cursor":x,"conversation_id":"` + conv + `"}`,
		"d " + strings.Repeat("0", macHex) + ` {"cursor":42,"conversation_id":"` + conv + `"}`,
		"d abc 1 " + `{"cursor":42,"conversation_id":"` + conv + `"}`,
	} {
		if h, ok := durableHead(e); ok {
			t.Errorf("%q read as %+v", e, h)
		}
	}
}

// FuzzDecodeNotification: any payload someone NOTIFYs on the channel is
// either refused or decodes to a notification that encodes back to itself.
func FuzzDecodeNotification(f *testing.F) {
	node, conv := agentik.NewID(), agentik.NewID()
	for _, s := range []string{
		node + " 1 e " + conv + " 42", node + " 1 e " + conv + " 42 " + node + " 3", node + " 2 a 7", node + " 3 i " + conv + " user -", node + " 4 i " + conv + " busy_policy " + node, node + " 7 i " + conv + " user - " + node,
		node + ` 5 o {"conversation_id":"` + conv + `","date":"2025-01-01T00:00:00.000Z","type":"append_text","text":"hi"}`,
		node + ` 6 o {"conversation_id":"` + conv + `","type":"end","tokens":{"input":1,"output":2}}`,
		node + ` 6 o 3 {"conversation_id":"` + conv + `","date":"2025-01-01T00:00:00.000Z","type":"working","reply_to":"` + node + `"}`,
		node + ` 6 o {"conversation_id":"` + conv + `","date":"x","type":"append_text","type":"end"}`,
		node + " 9 d " + strings.Repeat("ab", 16) + ` 4 {"conversation_id":"` + conv + `","type":"user_message","cursor":7,"message":{"id":"` + node + `","type":"user_message","content":[{"type":"text","text":"x"}]}}`,
		node + " 9 d " + strings.Repeat("ab", 16) + ` 4 {"cursor":7,"conversation_id":"` + conv + `","type":"user_message","conversation_id":"` + node + `"}`,
		"", "x 1 e 1", node + " 99999999999999999999 e 1",
	} {
		f.Add(s)
	}
	f.Add(node + " 8 a 7\ne " + conv + " 3\ni " + conv + " user -")
	f.Fuzz(func(t *testing.T, p string) {
		ns, _, err := decodePayload(p, nil)
		if err != nil || len(ns) == 0 {
			return
		}
		var entries []string
		for _, n := range ns {
			e, err := encodeEntry(n)
			if err != nil {
				t.Fatalf("decoded %q does not encode: %v", p, err)
			}
			entries = append(entries, e)
		}
		again := header(ns[0].node, ns[0].seq) + strings.Join(entries, "\n")
		// Encoded, decoded and encoded again, each entry is what it was
		// encoded as the first time. (The decoded values themselves may
		// differ where the encoding leaves something out: an empty list
		// an entry spelled out comes back as none.)
		ms, bad, err := decodePayload(again, nil)
		if err != nil || bad > 0 || len(ms) != len(ns) {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", p, ns, again, ms, err)
		}
		for i, m := range ms {
			if e, err := encodeEntry(m); err != nil || e != entries[i] || m.node != ns[i].node || m.seq != ns[i].seq {
				t.Fatalf("%q -> %q -> %q, %v", p, entries[i], e, err)
			}
		}
		// Read by a process that follows none of the conversations, a d
		// entry that decodes whole is read whole or as an e entry: the one
		// of its event when its JSON is spelled as MarshalEvent spells it
		// (hand-made JSON, with a key twice say, may name another). An
		// entry durableHead reads may be one that does not decode whole:
		// then the counts differ.
		if cs, _, _ := decodePayload(p, func(string) bool { return true }); len(cs) == len(ns) {
			for i, c := range cs {
				n := ns[i]
				if n.kind != kindDurable || reflect.DeepEqual(c, n) {
					continue
				}
				if c.kind != kindEvents || len(c.events) != 1 || !agentik.ValidID(c.events[0].conv) || c.events[0].cursor <= n.prev {
					t.Fatalf("%q: d entry %+v read as %+v", p, n, c)
				}
				j, err := agentik.MarshalEvent(&n.event)
				if _, signed, _ := strings.Cut(n.signed, " "); err == nil && string(j) == signed && c.events[0] != (convCursor{n.event.ConversationID, n.event.Cursor}) {
					t.Fatalf("%q: d entry %+v read as %+v", p, n, c)
				}
			}
		}
		// An o entry read by its head names a valid conversation and one of
		// the types read so, and keeps the entry. Decoded later, it is its
		// whole decode, or refused when that names another conversation or
		// type. When it is spelled as MarshalEvent spells it, it is never
		// refused.
		cs, _, _ := decodePayload(p, func(string) bool { return true })
		for _, c := range cs {
			if c.raw == "" {
				continue
			}
			if c.kind != kindOnline || !agentik.ValidID(c.event.ConversationID) || !lazyOnline(c.event.Type) {
				t.Fatalf("%q: o entry read as %+v", p, c)
			}
			whole, err := decodeEntry(c.raw)
			ev, ok := decodeRaw(c.raw, c.event.ConversationID, c.event.Type)
			if ok != (err == nil && whole.event.ConversationID == c.event.ConversationID && whole.event.Type == c.event.Type) ||
				ok && !reflect.DeepEqual(ev, whole.event) {
				t.Fatalf("%q: entry %q decoded later as %+v %v; whole %+v, %v", p, c.raw, ev, ok, whole, err)
			}
			if e, err := encodeEntry(whole); err == nil && e == c.raw && !ok {
				t.Fatalf("%q: entry %q as MarshalEvent spells it refused", p, c.raw)
			}
		}
	})
}

// TestUnfollowedOnlineEntries: an o entry of a conversation this process
// follows nothing of comes back with its conversation and type and the
// entry itself (onlineHead), for the types a tracked turn reads later;
// one of a followed conversation, of another type, or whose JSON does not
// start as MarshalEvent writes it, is decoded whole.
func TestUnfollowedOnlineEntries(t *testing.T) {
	node, conv, other := agentik.NewID(), agentik.NewID(), agentik.NewID()
	onlyOther := func(c string) bool { return c != other }
	for _, ev := range []agentik.Event{
		{Type: agentik.EvWorking, ReplyTo: node},
		{Type: agentik.EvStartReasoning},
		{Type: agentik.EvStartResponse, SentBefore: 7},
		{Type: agentik.EvAppendText, Text: `"quoted", {"type":"end"}`},
		{Type: agentik.EvEnd, ReplyTo: node, Reason: agentik.EndCompleted, Tokens: &agentik.TurnTokens{Input: 1}},
	} {
		ev.ConversationID, ev.Date = conv, agentik.Now()
		e, err := encodeEntry(notification{kind: kindOnline, event: ev})
		if err != nil {
			t.Fatal(err)
		}
		ns, bad, err := decodePayload(header(node, 1)+e, onlyOther)
		want := notification{node: node, seq: 1, kind: kindOnline, raw: e, event: agentik.Event{ConversationID: conv, Type: ev.Type}}
		if err != nil || bad != 0 || len(ns) != 1 || !reflect.DeepEqual(ns[0], want) {
			t.Fatalf("unfollowed %s: %+v, %d malformed, %v", ev.Type, ns, bad, err)
		}
		whole, err := decodeEntry(e)
		if err != nil || whole.event.Text != ev.Text || whole.event.ReplyTo != ev.ReplyTo || whole.event.SentBefore != ev.SentBefore {
			t.Fatalf("%s decoded whole later: %+v, %v", ev.Type, whole, err)
		}
		ns, _, _ = decodePayload(header(node, 1)+e, func(string) bool { return false })
		if len(ns) != 1 || ns[0].raw != "" || ns[0].event.Date.IsZero() {
			t.Fatalf("followed %s: %+v", ev.Type, ns)
		}
	}
	approval, err := encodeEntry(notification{kind: kindOnline, event: agentik.Event{ConversationID: conv, Date: agentik.Now(), Type: agentik.EvAwaitingApproval}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{
		approval, // decoded whole: not a type onlineHead reads
		`o {"conversation_id":"` + conv + `","date":"2026-01-01T00:00:00Z","type":"working"}`[:40],
		`o {"date":"2026-01-01T00:00:00Z","conversation_id":"` + conv + `","type":"working"}`,
		`o {"conversation_id":"nope","date":"2026-01-01T00:00:00Z","type":"working"}`,
		`o 0 {"conversation_id":"` + conv + `","date":"2026-01-01T00:00:00Z","type":"working"}`,
		`o x {"conversation_id":"` + conv + `","date":"2026-01-01T00:00:00Z","type":"working"}`,
		`o {"conversation_id":"` + conv + `","type":"working"}`,
		`o {"conversation_id":"` + conv + `","date":"2026-01-01T00:00:00Z","type":"user_message"}`,
		`d {"conversation_id":"` + conv + `","date":"2026-01-01T00:00:00Z","type":"working"}`,
	} {
		if c, typ, ok := onlineHead(e); ok {
			t.Errorf("%q read as %s %s", e, c, typ)
		}
	}
	if c, typ, ok := onlineHead(`o {"conversation_id":"` + conv + `","date":"2026-01-01T00:00:00Z","type":"end"}`); !ok || c != conv || typ != agentik.EvEnd {
		t.Errorf("an older process's entry (no before): %q %q %v", c, typ, ok)
	}
}

// TestFoldCatchUps: neighbouring catch-ups merge into one read; others
// keep their place between them.
func TestFoldCatchUps(t *testing.T) {
	a, b := agentik.NewID(), agentik.NewID()
	online := item{kind: itemRemote, ev: agentik.Event{ConversationID: a, Type: agentik.EvWorking}}
	got := foldCatchUps([]item{
		{kind: itemCatchUp, events: []convCursor{{a, 3}}},
		{kind: itemCatchUp, events: []convCursor{{b, 5}}, agents: 7},
		online,
		{kind: itemCatchUp, agents: 9},
		{kind: itemCatchUp, events: []convCursor{{a, 4}}, agents: 8},
	})
	want := []item{
		{kind: itemCatchUp, events: []convCursor{{a, 3}, {b, 5}}, agents: 7},
		online,
		{kind: itemCatchUp, events: []convCursor{{a, 4}}, agents: 9},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("folded %+v\nwant %+v", got, want)
	}
}

// TestDeltasMergeUntilSent: text deltas queued one after another for the
// other processes merge into one entry while unsent, in order; another
// turn's delta, another event or the bound starts a new one.
func TestDeltasMergeUntilSent(t *testing.T) {
	b := &Bus{outWake: make(chan struct{}, 1)}
	a, other := agentik.NewID(), agentik.NewID()
	delta := func(conv, text string) agentik.Event {
		return agentik.Event{ConversationID: conv, Type: agentik.EvAppendText, Text: text}
	}
	var want strings.Builder
	for i := range 100 {
		b.queueDelta(delta(a, fmt.Sprint(i, " ")))
		want.WriteString(fmt.Sprint(i, " "))
	}
	b.queueDelta(delta(other, "x"))
	b.queueOut("o {}")
	b.queueDelta(delta(a, "after"))
	b.queueDelta(delta(a, strings.Repeat("y", maxDeltaText)))
	var got []string
	for _, e := range b.out {
		if e.delta == nil {
			got = append(got, e.entry)
			continue
		}
		got = append(got, e.delta.ConversationID+":"+e.delta.Text)
	}
	wantOut := []string{a + ":" + want.String(), other + ":x", "o {}", a + ":after", a + ":" + strings.Repeat("y", maxDeltaText)}
	if !reflect.DeepEqual(got, wantOut) {
		t.Fatalf("queued %d entries: %.200q\nwant %.200q", len(got), got, wantOut)
	}
}

// TestDurableEntriesAreSigned: a d entry another process accepts is one
// signed with the database's key; one signed otherwise, or changed after
// signing, is refused.
func TestDurableEntriesAreSigned(t *testing.T) {
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("another key, another database!!")
	conv := agentik.NewID()
	ev := agentik.Event{ConversationID: conv, Cursor: 9, Type: agentik.EvUserMessage,
		Message: &agentik.Message{ID: agentik.NewID(), ConversationID: conv, Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text("hi")}}}
	e := durableEntry(key, ev, 8)
	n, err := decodeEntry(e)
	if err != nil || !signedBy(key, n) || signedBy(other, n) || signedBy(nil, n) {
		t.Fatalf("%q: %v; signed by the key %v, by another %v", e, err, signedBy(key, n), signedBy(other, n))
	}
	for _, forged := range []string{
		strings.Replace(e, `"hi"`, `"ho"`, 1),
		strings.Replace(e, " 8 ", " 0 ", 1),
		strings.Replace(e, `"cursor":9`, `"cursor":999999`, 1),
		durableEntry(other, ev, 8),
	} {
		if n, err := decodeEntry(forged); err == nil && signedBy(key, n) {
			t.Errorf("%q accepted", forged)
		}
	}
}
