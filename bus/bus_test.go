package bus

import (
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

func TestPublishReachesOnlyTheConversationsSubscribers(t *testing.T) {
	b := New()
	a := b.Subscribe("a")
	other := b.Subscribe("b")
	defer a.Close()
	defer other.Close()

	b.Publish(agentik.Event{ConversationID: "a", Type: agentik.EvUserMessage, Cursor: 1})
	if ev := <-a.C(); ev.Cursor != 1 {
		t.Fatalf("got cursor %d, want 1", ev.Cursor)
	}
	select {
	case ev := <-other.C():
		t.Fatalf("subscriber of b got %+v", ev)
	default:
	}
}

func TestSlowSubscriberIsCutOffOnDurableAndSkipsOnline(t *testing.T) {
	b := NewBuffered(2)
	slow := b.Subscribe("c")
	fast := b.Subscribe("c")
	defer fast.Close()

	b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvAppendText, Text: "1"})
	b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvAppendText, Text: "2"})
	// Buffer full: an online event is dropped, the subscriber stays.
	b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvAppendText, Text: "3"})
	if b.Subscribers("c") != 2 {
		t.Fatalf("online overflow cut a subscriber off")
	}
	for range 2 {
		<-fast.C()
	}
	// It lost "3" too: it is told.
	if ev := <-fast.C(); ev.Type != agentik.EvDeltasLost {
		t.Fatalf("fast subscriber got %+v, want the marker of the lost delta", ev)
	}
	// A durable event that does not fit cuts the slow one off, and what it
	// had not taken is dropped: it resumes from its cursor.
	b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvUserMessage, Cursor: 7})
	if ev, closed := slow.Next(); ev != nil || !closed {
		t.Fatalf("slow subscriber: Next = %+v, closed %v; want nothing and closed", ev, closed)
	}
	select {
	case <-slow.Ready():
	default:
		t.Fatal("a cut-off subscriber's Ready did not fire")
	}
	if _, ok := <-slow.C(); ok {
		t.Fatal("a cut-off subscriber's channel delivered")
	}
	if ev := <-fast.C(); ev.Cursor != 7 {
		t.Fatalf("fast subscriber got %+v, want cursor 7", ev)
	}
	if b.Subscribers("c") != 1 {
		t.Fatalf("subscribers = %d, want 1", b.Subscribers("c"))
	}
	slow.Close() // idempotent after a cut-off
}

func TestAgentEventsAndClose(t *testing.T) {
	b := New()
	s := b.SubscribeAgent()
	b.PublishAgent(agentik.AgentEvent{Cursor: 3, Type: agentik.AgentEvCreated})
	if ev := <-s.C(); ev.Cursor != 3 {
		t.Fatalf("got %+v", ev)
	}
	s.Close()
	s.Close()
	if _, ok := <-s.C(); ok {
		t.Fatal("channel open after Close")
	}
	b.PublishAgent(agentik.AgentEvent{Cursor: 4}) // no subscriber: must not panic
}

// TestSubscriberQueueKeepsOrderAndShrinks: a subscriber behind by many
// events gets every one in order up to the buffer, all subscribers share
// each event (encoded once), and a caught-up subscriber holds no queue.
func TestSubscriberQueueKeepsOrderAndShrinks(t *testing.T) {
	b := NewBuffered(100)
	s := b.Subscribe("c")
	other := b.Subscribe("c")
	defer s.Close()
	defer other.Close()
	for i := 1; i <= 100; i++ {
		b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvUserMessage, Cursor: int64(i)})
	}
	select {
	case <-s.Ready():
	default:
		t.Fatal("Ready did not fire")
	}
	for i := 1; i <= 100; i++ {
		ev, closed := s.Next()
		if ev == nil || closed || ev.Cursor != int64(i) {
			t.Fatalf("event %d: %+v, closed %v", i, ev, closed)
		}
		o, _ := other.Next()
		if o != ev {
			t.Fatalf("event %d is not shared between subscribers", i)
		}
		a, err := ev.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := o.JSON(); &a[0] != &b[0] {
			t.Fatalf("event %d encoded twice", i)
		}
		if v, err := ev.Value(); err != nil || v.Cursor != int64(i) {
			t.Fatalf("event %d: value %+v, %v", i, v, err)
		}
	}
	if ev, closed := s.Next(); ev != nil || closed {
		t.Fatalf("after the last event: %+v, closed %v", ev, closed)
	}
	sub := s.(*subscriber[agentik.Event])
	sub.mu.Lock()
	q := sub.queue
	sub.mu.Unlock()
	if q != nil || sub.Pending() {
		t.Fatalf("a caught-up subscriber still holds a queue of cap %d", cap(q))
	}
	// A reader that lags steadily by a few events keeps a small queue.
	for i := 101; i <= 10000; i++ {
		b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvAppendText, Text: "x"})
		if i%2 == 0 {
			s.Next()
			s.Next()
		}
		other.Next()
	}
	sub.mu.Lock()
	n := cap(sub.queue)
	sub.mu.Unlock()
	if n > keepQueue {
		t.Fatalf("a reader behind by at most 2 events has a queue of cap %d", n)
	}
	// One more than the buffer while nobody reads: cut off.
	for i := 101; i <= 201; i++ {
		b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvUserMessage, Cursor: int64(i)})
	}
	if ev, closed := s.Next(); ev != nil || !closed || b.Subscribers("c") != 0 {
		t.Fatalf("a subscriber over its buffer: Next = %+v, closed %v; subscribers %d", ev, closed, b.Subscribers("c"))
	}
}

// TestSubscriberChannel: C delivers in order and is closed by Close.
func TestSubscriberChannel(t *testing.T) {
	b := New()
	s := b.Subscribe("c")
	for i := 1; i <= 50; i++ {
		b.Publish(agentik.Event{ConversationID: "c", Type: agentik.EvUserMessage, Cursor: int64(i)})
	}
	for i := 1; i <= 50; i++ {
		if ev := <-s.C(); ev.Cursor != int64(i) {
			t.Fatalf("event %d has cursor %d", i, ev.Cursor)
		}
	}
	s.Close()
	for range s.C() {
	}
}

// drain takes every event Next has ready, as their types (and texts).
func drain(t *testing.T, s agentik.Subscriber[agentik.Event]) []string {
	t.Helper()
	var got []string
	for {
		sh, closed := s.Next()
		if sh == nil {
			if closed {
				t.Fatal("subscriber closed")
			}
			return got
		}
		ev, err := sh.Value()
		if err != nil || ev.Type != sh.Type {
			t.Fatalf("event %s: %+v %v", sh.Type, ev, err)
		}
		got = append(got, ev.Type+":"+ev.Text)
	}
}

// A subscriber that had no room for deltas finds one marker where they
// were, before what came after them; control events still fit in the room
// kept for them, and one that takes everything in time never sees a marker.
func TestDroppedDeltasLeaveAMarker(t *testing.T) {
	b := NewBuffered(2)
	slow := b.Subscribe("c")
	defer slow.Close()
	fast := b.Subscribe("c")
	defer fast.Close()
	var fastGot []string
	pub := func(typ, text string) {
		b.Publish(agentik.Event{ConversationID: "c", Type: typ, Text: text})
		fastGot = append(fastGot, drain(t, fast)...)
	}
	pub(agentik.EvAppendText, "1")
	pub(agentik.EvAppendText, "2")
	pub(agentik.EvAppendText, "3") // dropped
	pub(agentik.EvAppendText, "4") // dropped
	pub(agentik.EvEnd, "")         // a control event: fits
	got := drain(t, slow)
	want := []string{"append_text:1", "append_text:2", "deltas_lost:", "end:"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("slow got %q, want %q", got, want)
	}
	if strings.Contains(strings.Join(fastGot, " "), agentik.EvDeltasLost) || len(fastGot) != 5 {
		t.Fatalf("fast got %q", fastGot)
	}

	// Lost at the end of the queue: the marker comes once the queue is
	// empty, and only once.
	pub(agentik.EvAppendText, "5")
	pub(agentik.EvAppendText, "6")
	pub(agentik.EvAppendText, "7") // dropped
	got = drain(t, slow)
	if strings.Join(got, " ") != "append_text:5 append_text:6 deltas_lost:" {
		t.Fatalf("slow got %q", got)
	}
	pub(agentik.EvAppendText, "8")
	if got = drain(t, slow); strings.Join(got, " ") != "append_text:8" {
		t.Fatalf("after the marker: %q", got)
	}
	// Through C as well.
	pub(agentik.EvAppendText, "9")
	pub(agentik.EvAppendText, "10")
	pub(agentik.EvAppendText, "11") // dropped
	var viaC []string
	for range 3 {
		ev := <-slow.C()
		viaC = append(viaC, ev.Type)
	}
	if viaC[2] != agentik.EvDeltasLost {
		t.Fatalf("through C: %q", viaC)
	}
}

func BenchmarkPublishToFullSubscriber(b *testing.B) {
	bus := NewBuffered(1)
	s := bus.Subscribe("c")
	defer s.Close()
	ev := agentik.Event{ConversationID: "c", Type: agentik.EvAppendText, Text: "x"}
	bus.Publish(ev)
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(ev) // dropped: marks the loss without allocating for it
	}
}
