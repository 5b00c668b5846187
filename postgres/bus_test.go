package postgres

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

func newBus(t *testing.T, s *Store, poll time.Duration) *Bus {
	t.Helper()
	b, err := NewBus(t.Context(), s, BusOptions{PollInterval: poll})
	if err != nil {
		t.Fatalf("NewBus: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

func createConv(t *testing.T, s *Store) string {
	t.Helper()
	id := agentik.NewID()
	now := agentik.Now()
	if _, err := s.CreateConversation(t.Context(), agentik.ConversationRecord{ID: id, Owner: "alice", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return id
}

func userEvent(conv, text string) agentik.Event {
	m := &agentik.Message{ID: agentik.NewID(), ConversationID: conv, Date: agentik.Now(), Type: agentik.MsgUser,
		Content: []agentik.Content{agentik.Text(text)}}
	return agentik.MessageEvent(m)
}

// commitPublish commits one user message through s and publishes its event
// on b, as the engine does.
func commitPublish(t *testing.T, s *Store, b *Bus, conv, text string) agentik.Event {
	t.Helper()
	evs, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: conv, Events: []agentik.Event{userEvent(conv, text)}})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	b.Publish(evs[0])
	return evs[0]
}

func next(t *testing.T, sub agentik.Subscriber[agentik.Event]) agentik.Event {
	t.Helper()
	select {
	case ev, ok := <-sub.C():
		if !ok {
			t.Fatal("subscriber cut off")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	panic("unreachable")
}

// pair is two processes on one fresh schema: their stores and Buses (an
// hour between polls, so delivery comes from the notifications), and a
// conversation created through the first and followed through the second.
type pair struct {
	dsn    string
	sa, sb *Store
	ba, bb *Bus
	conv   string
	sub    agentik.Subscriber[agentik.Event]
}

func newPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{dsn: freshSchema(t)}
	p.sa, p.sb = openDSN(t, p.dsn), openDSN(t, p.dsn)
	p.ba, p.bb = newBus(t, p.sa, time.Hour), newBus(t, p.sb, time.Hour)
	p.conv = createConv(t, p.sa)
	p.sub = p.bb.Subscribe(p.conv)
	t.Cleanup(p.sub.Close)
	return p
}

// TestBusAcrossProcesses: durable and online events published through one
// handle reach subscribers of another, in order.
func TestBusAcrossProcesses(t *testing.T) {
	p := newPair(t)
	sa, ba, bb, conv, sub := p.sa, p.ba, p.bb, p.conv, p.sub
	agentSub := bb.SubscribeAgent()
	defer agentSub.Close()

	first := commitPublish(t, sa, ba, conv, "one")
	ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvWorking, ReplyTo: first.Message.ID})
	big := strings.Repeat("é<>&\"\n", 4000) // 24,000 bytes, more when escaped
	ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvAppendText, Text: big})
	ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvAppendImage, MIME: "image/png", Data: strings.Repeat("A", 9000)})
	second := commitPublish(t, sa, ba, conv, "two")
	ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvEnd, ReplyTo: first.Message.ID, Reason: agentik.EndCompleted})

	if got := next(t, sub); got.Cursor != first.Cursor || got.Message.ID != first.Message.ID {
		t.Fatalf("first event %+v, want cursor %d", got, first.Cursor)
	}
	if got := next(t, sub); got.Type != agentik.EvWorking || got.ReplyTo != first.Message.ID {
		t.Fatalf("want working, got %+v", got)
	}
	var text strings.Builder
	parts := 0
	for text.Len() < len(big) {
		got := next(t, sub)
		if got.Type != agentik.EvAppendText {
			t.Fatalf("want append_text parts, got %s after %d bytes", got.Type, text.Len())
		}
		text.WriteString(got.Text)
		parts++
	}
	if text.String() != big || parts < 4 {
		t.Fatalf("split text arrived in %d parts, equal: %v", parts, text.String() == big)
	}
	// The oversized image is not sent to other processes (documented rule).
	if got := next(t, sub); got.Cursor != second.Cursor {
		t.Fatalf("want the second message, got %+v", got)
	}
	if got := next(t, sub); got.Type != agentik.EvEnd {
		t.Fatalf("want end, got %+v", got)
	}
}

// TestBusSendsDurableEventsWhole: a durable event another process
// committed reaches a subscriber here without a read of the store when it
// follows the last one delivered (the notification carries it whole); one
// with an image, or too large for a notification, is read from the store,
// and so is one whose predecessor was never heard of here.
func TestBusSendsDurableEventsWhole(t *testing.T) {
	p := newPair(t)
	sa, ba, bb, conv, sub := p.sa, p.ba, p.bb, p.conv, p.sub
	before := bb.eventReads.Load()
	var want []agentik.Event
	for i := range 10 {
		want = append(want, commitPublish(t, sa, ba, conv, fmt.Sprint("small ", i)))
	}
	stored, err := sa.Events(t.Context(), conv, 0, 0)
	if err != nil || len(stored) != len(want) {
		t.Fatalf("%d events stored, %v", len(stored), err)
	}
	for i, w := range want {
		// What a follower gets is what a read of the store gives.
		if got := next(t, sub); got.Cursor != w.Cursor || !reflect.DeepEqual(got, stored[i]) {
			t.Fatalf("got %+v\nwant %+v", got, stored[i])
		}
	}
	if after := bb.eventReads.Load(); after != before {
		t.Fatalf("the subscriber's process read events %d times for events sent whole", after-before)
	}

	// Read from the store: an image, a text too large, and an event after
	// one committed by a process without a Bus (its notification never
	// sent).
	img := userEvent(conv, "look")
	img.Message.Content = append(img.Message.Content, agentik.Image("image/png", []byte("\x89PNG")))
	evs, _, err := sa.Commit(t.Context(), agentik.Write{ConversationID: conv, Events: []agentik.Event{img}})
	if err != nil {
		t.Fatal(err)
	}
	ba.Publish(evs[0])
	large := commitPublish(t, sa, ba, conv, strings.Repeat("é", 5000))
	silent, _, err := openDSN(t, p.dsn).Commit(t.Context(), agentik.Write{ConversationID: conv, Events: []agentik.Event{userEvent(conv, "unannounced")}})
	if err != nil {
		t.Fatal(err)
	}
	last := commitPublish(t, sa, ba, conv, "after the gap")
	for _, w := range []agentik.Event{evs[0], large, silent[0], last} {
		got := next(t, sub)
		if got.Cursor != w.Cursor || !reflect.DeepEqual(got.Message.Content, w.Message.Content) {
			t.Fatalf("got cursor %d, want %d (contents equal: %v)", got.Cursor, w.Cursor, reflect.DeepEqual(got.Message.Content, w.Message.Content))
		}
	}
	if after := bb.eventReads.Load(); after == before {
		t.Fatal("no read of the store for the events that needed one")
	}
}

// TestBusRefusesForgedDurableEvents: anyone allowed to connect may NOTIFY
// on the channel; a durable event not signed with the database's key is
// not delivered, and the conversation's real events still are (one with a
// cursor far ahead, delivered, would have hidden every event after it).
func TestBusRefusesForgedDurableEvents(t *testing.T) {
	p := newPair(t)
	sa, ba, conv, sub := p.sa, p.ba, p.conv, p.sub
	forged := userEvent(conv, "forged")
	forged.Cursor = 1_000_000_000
	j, err := agentik.MarshalEvent(&forged)
	if err != nil {
		t.Fatal(err)
	}
	signed := "0 " + string(j)
	for _, mac := range []string{strings.Repeat("0", macHex), signDurable([]byte("a key of another database"), signed)} {
		if _, err := sa.pool.Exec(t.Context(), "SELECT pg_notify($1, $2)", ba.channel, "mallory 1 d "+mac+" "+signed); err != nil {
			t.Fatal(err)
		}
	}
	real := commitPublish(t, sa, ba, conv, "real")
	if got := next(t, sub); got.Cursor != real.Cursor || got.Message.ID != real.Message.ID {
		t.Fatalf("got %+v, want the real event (cursor %d)", got, real.Cursor)
	}
}

// TestBusReadsUnfollowedDurableEntriesAsCursors: a process that follows
// nothing of a conversation reads another process's d entry of it as the
// e entry it also is (durableHead): it hears that the conversation moved
// (its Coordinator's wake of a kept lease) without decoding the event or
// checking its signature, which an e entry does not have either. A
// subscriber that comes later reads the event from the store.
func TestBusReadsUnfollowedDurableEntriesAsCursors(t *testing.T) {
	p := newPair(t)
	other := createConv(t, p.sa)
	heard := make(chan string, 16)
	h := func(conv string, _ bool) { heard <- conv }
	p.bb.foreign.Store(&h)
	wantHeard := func(conv string) {
		t.Helper()
		select {
		case got := <-heard:
			if got != conv {
				t.Fatalf("heard of %s, want %s", got, conv)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing heard of %s within 10s", conv)
		}
	}
	before := p.bb.eventReads.Load()
	ev := commitPublish(t, p.sa, p.ba, other, "nobody follows this on B")
	wantHeard(other)

	// Signed or not, such an entry moves nothing a subscriber sees: nobody
	// follows the conversation here.
	forged := userEvent(other, "forged")
	forged.Cursor = ev.Cursor + 1
	j, err := agentik.MarshalEvent(&forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.sa.pool.Exec(t.Context(), "SELECT pg_notify($1, $2)", p.ba.channel,
		"mallory 1 d "+strings.Repeat("0", macHex)+" "+strconv.FormatInt(ev.Cursor, 10)+" "+string(j)); err != nil {
		t.Fatal(err)
	}
	wantHeard(other)
	if after := p.bb.eventReads.Load(); after != before {
		t.Fatalf("%d reads of the store for a conversation nobody follows", after-before)
	}

	// The followed conversation's events still come whole.
	real := commitPublish(t, p.sa, p.ba, p.conv, "followed")
	wantHeard(p.conv)
	if got := next(t, p.sub); got.Cursor != real.Cursor || got.Message.ID != real.Message.ID {
		t.Fatalf("got %+v, want %+v", got, real)
	}
	late := p.bb.Subscribe(other)
	defer late.Close()
	last := commitPublish(t, p.sa, p.ba, other, "now followed")
	if got := next(t, late); got.Cursor != last.Cursor || got.Message.ID != last.Message.ID {
		t.Fatalf("the late subscriber got %+v, want %+v", got, last)
	}
}

// onlineOf makes online events of conversation conv.
func onlineOf(conv string) func(typ, replyTo, text string) agentik.Event {
	return func(typ, replyTo, text string) agentik.Event {
		return agentik.Event{ConversationID: conv, Type: typ, ReplyTo: replyTo, Text: text}
	}
}

// TestBusTracksUnfollowedTurnsFromTheirEntries: B follows nothing of a
// conversation whose turn A runs, so it keeps A's online events as their
// entries (onlineHead) and reads them when asked: what the turn answers,
// its phase and its text so far, for an interrupt or a subscriber that
// joins. After the join, A's events reach the subscriber decoded whole.
func TestBusTracksUnfollowedTurnsFromTheirEntries(t *testing.T) {
	p := newPair(t)
	other := createConv(t, p.sa)
	ev := onlineOf(other)
	p.ba.Publish(ev(agentik.EvWorking, "u1", ""))
	p.ba.Publish(ev(agentik.EvStartReasoning, "", ""))
	p.ba.Publish(ev(agentik.EvAppendText, "", "think"))
	p.ba.Publish(ev(agentik.EvStartResponse, "", ""))
	p.ba.Publish(ev(agentik.EvAppendText, "", "partial "))
	p.ba.Publish(ev(agentik.EvAppendText, "", "text"))
	// What B holds of the turn, without reading it: whether it still keeps
	// entries, and the text they and what it read make.
	peek := func() (kept bool, text string) {
		p.bb.turnMu.Lock()
		defer p.bb.turnMu.Unlock()
		tr := p.bb.turns[other]
		if tr == nil {
			return false, ""
		}
		text = tr.partial.String()
		for _, e := range tr.texts {
			n, err := decodeEntry(e)
			if err != nil {
				t.Errorf("kept entry %q: %v", e, err)
			}
			text += n.event.Text
		}
		return tr.working != "" && len(tr.texts) > 0, text
	}
	eventually(t, "A's turn kept as entries on B", func() bool {
		kept, text := peek()
		return kept && text == "partial text"
	})
	want := agentik.RemoteTurn{ReplyTo: "u1", Phase: agentik.DeltaText, Partial: "partial text"}
	if got, ok := p.bb.running(other); !ok || got != want {
		t.Fatalf("running on B: %+v %v, want %+v", got, ok, want)
	}
	if kept, _ := peek(); kept {
		t.Fatal("the entries are kept after the turn was read")
	}
	sub, joined := p.bb.join(other)
	defer sub.Close()
	if joined != want {
		t.Fatalf("joined %+v, want %+v", joined, want)
	}
	p.ba.Publish(ev(agentik.EvAppendText, "", " more"))
	p.ba.Publish(agentik.Event{ConversationID: other, Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted})
	if got := next(t, sub); got.Type != agentik.EvAppendText || got.Text != " more" {
		t.Fatalf("after the join: %+v", got)
	}
	if got := next(t, sub); got.Type != agentik.EvEnd || got.ReplyTo != "u1" {
		t.Fatalf("after the join: %+v", got)
	}
	if got, ok := p.bb.running(other); ok {
		t.Fatalf("running after the end: %+v", got)
	}
}

// TestBusDecodesKeptEntriesOnceFollowed: an online event read by its head
// while nobody followed its conversation, and delivered after someone
// subscribed, reaches the subscriber decoded whole; the turn's text keeps
// its order when entries kept and events decoded mix in one phase; an
// entry whose whole decode names another conversation or type than its
// head is dropped.
func TestBusDecodesKeptEntriesOnceFollowed(t *testing.T) {
	p := newPair(t)
	other, third := createConv(t, p.sa), createConv(t, p.sa)
	items := func(evs ...agentik.Event) []item {
		t.Helper()
		var es []string
		for _, ev := range evs {
			ev.ConversationID, ev.Date = other, agentik.Now()
			e, err := encodeEntry(notification{kind: kindOnline, event: ev})
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, e)
		}
		ns, bad, err := decodePayload(header("a", 1)+strings.Join(es, "\n"), func(string) bool { return true })
		if err != nil || bad != 0 || len(ns) != len(evs) {
			t.Fatalf("%+v, %d, %v", ns, bad, err)
		}
		var its []item
		for _, n := range ns {
			if n.raw == "" {
				t.Fatalf("%+v not read by its head", n)
			}
			its = append(its, item{kind: itemRemote, ev: n.event, raw: n.raw})
		}
		return its
	}
	kept := items(
		agentik.Event{Type: agentik.EvWorking, ReplyTo: "u1"},
		agentik.Event{Type: agentik.EvStartResponse},
		agentik.Event{Type: agentik.EvAppendText, Text: "a"},
		agentik.Event{Type: agentik.EvAppendText, Text: "b"},
		agentik.Event{Type: agentik.EvAppendText, Text: "d"})
	for _, it := range kept[:3] {
		p.bb.deliverRemote(it)
	}
	// Kept before the subscription, a delta whose whole decode names
	// another conversation adds nothing when the turn is read (settle).
	p.bb.deliverRemote(item{kind: itemRemote, ev: agentik.Event{ConversationID: other, Type: agentik.EvAppendText},
		raw: `o {"conversation_id":"` + other + `","date":"2026-01-01T00:00:00.000Z","type":"append_text","text":"y","conversation_id":"` + third + `"}`})
	sub := p.bb.Subscribe(other)
	defer sub.Close()
	p.bb.deliverRemote(kept[3]) // read by its head before the subscription
	if got := next(t, sub); got.Type != agentik.EvAppendText || got.Text != "b" || got.Date.IsZero() {
		t.Fatalf("got %+v, want append_text b decoded whole", got)
	}
	p.bb.deliverRemote(item{kind: itemRemote, ev: agentik.Event{ConversationID: other, Type: agentik.EvAppendText, Text: "c"}})
	if got := next(t, sub); got.Text != "c" {
		t.Fatalf("got %+v, want append_text c", got)
	}
	// Its head says an append_text of other; whole, it is a working of
	// third (a key given twice).
	forged := `o {"conversation_id":"` + other + `","date":"2026-01-01T00:00:00.000Z","type":"append_text","text":"x","conversation_id":"` + third + `","type":"working"}`
	if conv, typ, ok := onlineHead(forged); !ok || conv != other || typ != agentik.EvAppendText {
		t.Fatalf("head of the forged entry: %s %s %v", conv, typ, ok)
	}
	p.bb.deliverRemote(item{kind: itemRemote, ev: agentik.Event{ConversationID: other, Type: agentik.EvAppendText}, raw: forged})
	p.bb.deliverRemote(kept[4])
	if got := next(t, sub); got.Text != "d" {
		t.Fatalf("got %+v, want append_text d (the forged entry dropped)", got)
	}
	want := agentik.RemoteTurn{ReplyTo: "u1", Phase: agentik.DeltaText, Partial: "abcd"}
	if got, ok := p.bb.running(other); !ok || got != want {
		t.Fatalf("running: %+v %v, want %+v", got, ok, want)
	}
	if got, ok := p.bb.running(third); ok {
		t.Fatalf("the forged entry started a turn of another conversation: %+v", got)
	}
}

// TestBusListensWhenStarted: a Bus listens once NewBus returned, so an
// online event another process sends right after is heard. Online events
// travel only in notifications (the poll, here an hour, catches up durable
// events only): a process that served before it listened would never get
// the ones sent in between.
func TestBusListensWhenStarted(t *testing.T) {
	dsn := freshSchema(t)
	sa := openDSN(t, dsn)
	ba := newBus(t, sa, time.Hour)
	conv := createConv(t, sa)
	for i := range 10 {
		bb, err := NewBus(t.Context(), openDSN(t, dsn), BusOptions{PollInterval: time.Hour})
		if err != nil {
			t.Fatalf("NewBus: %v", err)
		}
		sub := bb.Subscribe(conv)
		ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvWorking, ReplyTo: strconv.Itoa(i)})
		if got := next(t, sub); got.Type != agentik.EvWorking || got.ReplyTo != strconv.Itoa(i) {
			t.Fatalf("bus %d: got %+v, want working %d", i, got, i)
		}
		sub.Close()
		bb.Close()
	}
}

// TestBusNoListenerNoStart: a Bus that cannot open its listening
// connection is not started (it could never hear other processes' online
// events).
func TestBusNoListenerNoStart(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	s.cfg.Port = 1 // the pool is open already; only the Bus's own connection uses cfg
	s.cfg.ConnectTimeout = 5 * time.Second
	if b, err := NewBus(t.Context(), s, BusOptions{}); err == nil {
		b.Close()
		t.Fatal("NewBus started without a listening connection")
	} else if !strings.Contains(err.Error(), "start bus") {
		t.Fatalf("NewBus: %v, want a start bus error", err)
	}
}

// TestBusListensAgainAfterLoss: when its listening session is terminated,
// a Bus reconnects and LISTENs again: online events sent afterwards are
// heard (the poll, an hour here, would not bring them).
func TestBusListensAgainAfterLoss(t *testing.T) {
	dsn := freshSchema(t)
	sa, sb := openDSN(t, dsn), openDSN(t, dsn)
	app := "agentik-listener-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sb.cfg.RuntimeParams["application_name"] = app
	ba, bb := newBus(t, sa, time.Hour), newBus(t, sb, time.Hour)
	conv := createConv(t, sa)
	sub := bb.Subscribe(conv)
	defer sub.Close()
	listener := func() (pid int) {
		t.Helper()
		err := sa.pool.QueryRow(t.Context(), `SELECT COALESCE(max(pid), 0) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	old := listener()
	var ok bool
	if err := sa.pool.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, old).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the listening session %d: %v, %v", old, ok, err)
	}
	// Reconnecting takes a backoff (100 ms first). A new session first, so
	// that the event below cannot come through the one terminated; then
	// probe until its LISTEN hears.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for pid := listener(); pid == 0 || pid == old; pid = listener() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the bus opened no new listening session within 10 s")
		}
	}
	for {
		ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvWorking})
		select {
		case ev := <-sub.C():
			if ev.Type != agentik.EvWorking {
				t.Fatalf("got %+v, want working", ev)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatal("the bus did not listen again within 10 s")
		}
	}
}

// TestBusOrderAcrossWriters: two processes commit to the same conversations
// at once; subscribers on both see every durable event exactly once, in
// cursor order, although each process learns of the other's events late.
func TestBusOrderAcrossWriters(t *testing.T) {
	dsn := freshSchema(t)
	stores := []*Store{openDSN(t, dsn), openDSN(t, dsn)}
	buses := []*Bus{newBus(t, stores[0], 50*time.Millisecond), newBus(t, stores[1], 50*time.Millisecond)}
	convs := []string{createConv(t, stores[0]), createConv(t, stores[0])}
	type key struct{ bus, conv int }
	subs := map[key]agentik.Subscriber[agentik.Event]{}
	for i, b := range buses {
		for j, c := range convs {
			subs[key{i, j}] = b.Subscribe(c)
		}
	}
	const writers, each = 4, 30
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				s, b := stores[w%2], buses[w%2]
				conv := convs[(w+i)%2]
				evs, _, err := s.Commit(context.Background(), agentik.Write{ConversationID: conv,
					Events: []agentik.Event{userEvent(conv, fmt.Sprint(w, i))}})
				if err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				b.Publish(evs[0])
			}
		})
	}
	wg.Wait()
	for j, c := range convs {
		want, err := stores[0].Events(t.Context(), c, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range buses {
			sub := subs[key{i, j}]
			for n, w := range want {
				got := next(t, sub)
				if got.Cursor != w.Cursor {
					t.Fatalf("bus %d, conversation %d: event %d has cursor %d, want %d", i, j, n, got.Cursor, w.Cursor)
				}
			}
			sub.Close()
		}
	}
}

// TestBusLostNotification: an event committed by a process that died before
// notifying still reaches the other processes, through the poll.
func TestBusLostNotification(t *testing.T) {
	dsn := freshSchema(t)
	sa, sb := openDSN(t, dsn), openDSN(t, dsn)
	bb := newBus(t, sb, 100*time.Millisecond)
	conv := createConv(t, sa)
	sub := bb.Subscribe(conv)
	defer sub.Close()
	evs, _, err := sa.Commit(t.Context(), agentik.Write{ConversationID: conv, Events: []agentik.Event{userEvent(conv, "silent")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, sub); got.Cursor != evs[0].Cursor {
		t.Fatalf("got %+v, want cursor %d", got, evs[0].Cursor)
	}
}

// TestBusLocalOrder: within one process, events reach subscribers in publish
// order, online ones between durable ones, and agent events too.
func TestBusLocalOrder(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	b := newBus(t, s, time.Hour)
	conv := createConv(t, s)
	sub := b.Subscribe(conv)
	defer sub.Close()
	asub := b.SubscribeAgent()
	defer asub.Close()
	var want []string
	for i := range 20 {
		ev := commitPublish(t, s, b, conv, fmt.Sprint(i))
		want = append(want, fmt.Sprint(ev.Cursor))
		b.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvAppendText, Text: fmt.Sprint(i)})
		want = append(want, "text "+fmt.Sprint(i))
	}
	var got []string
	for range want {
		ev := next(t, sub)
		if ev.Cursor != 0 {
			got = append(got, fmt.Sprint(ev.Cursor))
		} else {
			got = append(got, "text "+ev.Text)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("order\n got  %v\n want %v", got, want)
	}
	_, aev, err := s.RenameConversation(t.Context(), conv, "x", agentik.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.PublishAgent(aev)
	// The created event was committed but never published: the bus reads
	// it from the store before the renamed one, in cursor order.
	for _, typ := range []string{agentik.AgentEvCreated, agentik.AgentEvRenamed} {
		select {
		case got := <-asub.C():
			if got.Type != typ || got.ConversationID != conv || got.Owner != "alice" {
				t.Fatalf("agent event %+v, want %s", got, typ)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no agent event")
		}
	}
}

// TestLateRemoteOnlineEventsDuringALocalTurn: while B runs a turn of the
// conversation, online events another process sent for its own, earlier
// turn (heard late) do not reach B's subscribers — a delta names no turn
// and would join B's text, a working would take B's phase away — except
// that turn's end. Once B's turn ended, A's events pass again.
func TestLateRemoteOnlineEventsDuringALocalTurn(t *testing.T) {
	p := newPair(t)
	conv, sub := p.conv, p.sub
	ev := onlineOf(conv)
	p.bb.Publish(ev(agentik.EvWorking, "u2", ""))
	p.bb.Publish(ev(agentik.EvStartResponse, "u2", ""))
	p.ba.Publish(ev(agentik.EvWorking, "u1", ""))
	p.ba.Publish(ev(agentik.EvAppendText, "", "late"))
	p.ba.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted})
	var seen []string
	for {
		got := next(t, sub)
		seen = append(seen, got.Type+" "+got.ReplyTo+got.Text)
		if got.Type == agentik.EvEnd {
			break
		}
	}
	if want := []string{"working u2", "start_response u2", "end u1"}; !slices.Equal(seen, want) {
		t.Fatalf("during B's turn: %q, want %q", seen, want)
	}
	p.bb.Publish(ev(agentik.EvAppendText, "", "mine"))
	p.bb.Publish(agentik.Event{ConversationID: conv, Type: agentik.EvEnd, ReplyTo: "u2", Reason: agentik.EndCompleted})
	p.ba.Publish(ev(agentik.EvWorking, "u3", ""))
	seen = nil
	for len(seen) < 3 {
		got := next(t, sub)
		seen = append(seen, got.Type+" "+got.ReplyTo+got.Text)
	}
	if want := []string{"append_text mine", "end u2", "working u3"}; !slices.Equal(seen, want) {
		t.Fatalf("after B's turn: %q, want %q", seen, want)
	}
}
