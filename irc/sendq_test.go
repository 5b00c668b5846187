package irc

import (
	"context"
	"testing"
	"time"
)

// Lines that wait for room fill the queue only up to their mark, leaving
// the rest to lines that cannot wait; once the writer took what was
// queued, a waiting line goes in at once.
func TestSendqWaitingLinesLeaveRoom(t *testing.T) {
	ctx := context.Background()
	q := newSendq(100)
	line := make([]byte, 30)
	if !q.pushWait(ctx, line, 50, time.Second) {
		t.Fatal("a waiting line refused by an empty queue")
	}
	if q.pushWait(ctx, line, 50, 10*time.Millisecond) {
		t.Fatal("a waiting line took the queue past its mark")
	}
	for range 2 {
		if !q.push(line) {
			t.Fatal("the room left by waiting lines was not there for the others")
		}
	}
	if q.push(line) {
		t.Fatal("a line took the queue past its limit")
	}
	if lines, final := q.take(nil); len(lines) != 3 || final {
		t.Fatalf("took %d lines (final %v), want 3", len(lines), final)
	}
	if !q.pushWait(ctx, line, 50, time.Second) {
		t.Fatal("a waiting line refused after the queue was taken")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if q.pushWait(cancelled, line, 50, time.Hour) {
		t.Fatal("a waiting line went past its mark")
	}
	q.close(nil, false)
	if q.pushWait(ctx, line, 50, time.Hour) {
		t.Fatal("a line queued after close")
	}
}
