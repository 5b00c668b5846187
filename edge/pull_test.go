package edge_test

import (
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/edge"
)

// chanStream is a Stream that cannot be pulled (as a remote client's).
type chanStream struct {
	c    chan agentik.Event
	quit chan struct{}
}

func (s *chanStream) C() <-chan agentik.Event { return s.c }
func (s *chanStream) Err() error              { return nil }
func (s *chanStream) Close() error {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	return nil
}

// A stream that cannot be pulled is read through its channel, one event at
// a time, in order, and ends when its channel closes; one closed while an
// event waits lets its reader go.
func TestPullReadsAStreamThroughItsChannel(t *testing.T) {
	s := &chanStream{c: make(chan agentik.Event), quit: make(chan struct{})}
	go func() {
		defer close(s.c)
		for i := int64(1); i <= 3; i++ {
			select {
			case s.c <- agentik.Event{Cursor: i, Type: agentik.EvUserMessage}:
			case <-s.quit:
				return
			}
		}
	}()
	p := edge.Pull[agentik.Event](s, edge.EventFrame)
	var got []int64
	for {
		ev, ok, ended, err := edge.Take(p)
		if err != nil {
			t.Fatal(err)
		}
		if ended {
			break
		}
		if !ok {
			select {
			case <-p.Ready():
			case <-p.Done():
			}
			continue
		}
		got = append(got, ev.Cursor)
	}
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("got %v", got)
	}
	if edge.Pull[agentik.Event](p, edge.EventFrame) != p {
		t.Fatal("a pulled stream is wrapped again")
	}

	// Closed with an event held: the feeding goroutine goes.
	s2 := &chanStream{c: make(chan agentik.Event), quit: make(chan struct{})}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		defer close(s2.c)
		for {
			select {
			case s2.c <- agentik.Event{Type: agentik.EvWorking}:
			case <-s2.quit:
				return
			}
		}
	}()
	p2 := edge.Pull[agentik.Event](s2, edge.EventFrame)
	<-p2.Ready()
	p2.Close()
	<-fed
	<-p2.Done()
}
