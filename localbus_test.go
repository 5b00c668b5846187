package agentik

import (
	"testing"
)

func TestPublishReachesOnlyTheConversationsSubscribers(t *testing.T) {
	b := NewLocalBus(DefaultBusBuffer)
	a := b.Subscribe("a")
	other := b.Subscribe("b")
	defer a.Close()
	defer other.Close()

	b.Publish(Event{ConversationID: "a", Type: EvUserMessage, Cursor: 1})
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
	b := NewLocalBus(2)
	slow := b.Subscribe("c")
	fast := b.Subscribe("c")
	defer fast.Close()

	b.Publish(Event{ConversationID: "c", Type: EvAppendText, Text: "1"})
	b.Publish(Event{ConversationID: "c", Type: EvAppendText, Text: "2"})
	// Buffer full: an online event is dropped, the subscriber stays.
	b.Publish(Event{ConversationID: "c", Type: EvAppendText, Text: "3"})
	if b.Subscribers("c") != 2 {
		t.Fatalf("online overflow cut a subscriber off")
	}
	for range 2 {
		<-fast.C()
	}
	// A durable event that does not fit cuts the slow one off.
	b.Publish(Event{ConversationID: "c", Type: EvUserMessage, Cursor: 7})
	var got []Event
	for ev := range slow.C() {
		got = append(got, ev)
	}
	if len(got) != 2 || got[0].Text != "1" || got[1].Text != "2" {
		t.Fatalf("slow subscriber got %+v, want the two buffered deltas then close", got)
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
	b := NewLocalBus(DefaultBusBuffer)
	s := b.SubscribeAgent()
	b.PublishAgent(AgentEvent{Cursor: 3, Type: AgentEvCreated})
	if ev := <-s.C(); ev.Cursor != 3 {
		t.Fatalf("got %+v", ev)
	}
	s.Close()
	s.Close()
	if _, ok := <-s.C(); ok {
		t.Fatal("channel open after Close")
	}
	b.PublishAgent(AgentEvent{Cursor: 4}) // no subscriber: must not panic
}

// TestSubscriberQueueKeepsOrderAndShrinks: a subscriber behind by more than
// its channel holds gets every event in order up to the buffer, and holds
// nothing extra once it has caught up.
func TestSubscriberQueueKeepsOrderAndShrinks(t *testing.T) {
	b := NewLocalBus(100)
	s := b.Subscribe("c")
	defer s.Close()
	for i := 1; i <= 100; i++ {
		b.Publish(Event{ConversationID: "c", Type: EvUserMessage, Cursor: int64(i)})
	}
	for i := 1; i <= 100; i++ {
		if ev := <-s.C(); ev.Cursor != int64(i) {
			t.Fatalf("event %d has cursor %d", i, ev.Cursor)
		}
	}
	sub := s.(*localSub[Event])
	sub.pump.Wait() // the pump ends once the queue is empty
	sub.mu.Lock()
	q := sub.queue
	sub.mu.Unlock()
	if q != nil || sub.Pending() {
		t.Fatalf("a caught-up subscriber still holds a queue of cap %d", cap(q))
	}
	// One more than the buffer while nobody reads: cut off.
	for i := 101; i <= 201; i++ {
		b.Publish(Event{ConversationID: "c", Type: EvUserMessage, Cursor: int64(i)})
	}
	n := 0
	for range s.C() {
		n++
	}
	if n == 0 || n > 100 || b.Subscribers("c") != 0 {
		t.Fatalf("a subscriber over its buffer got %d events and is still subscribed: %d", n, b.Subscribers("c"))
	}
}
