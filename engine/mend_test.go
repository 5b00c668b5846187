package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/stacktest"
)

// A reader too slow for the deltas (the bus drops those it has no room
// for) still gets the answer's text whole through the stream, without a
// gap or a repeat, and never sees the bus's marker; a reader that keeps up
// gets it delta by delta.
func TestStreamMendsLostDeltas(t *testing.T) {
	s := stacktest.New(t, stacktest.Lossy())
	reply, want := stacktest.LossyAnswer(40)
	s.LLM.Enqueue(reply)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := s.Engine.CreateConversation(ctx, agentik.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := s.Engine.Conversation(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := conv.Events(ctx, agentik.LiveOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pull := st.(agentik.PullStream[agentik.Event])
	if _, err := conv.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("go")}}); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var types []string
	deltas := 0
	for done := false; !done; {
		sh, ended := pull.Next()
		if sh == nil {
			if ended {
				t.Fatalf("stream ended: %v", pull.Err())
			}
			select {
			case <-pull.Ready():
			case <-pull.Done():
			case <-ctx.Done():
				t.Fatalf("no end; got %q", types)
			}
			continue
		}
		ev, err := sh.Value()
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case agentik.EvDeltasLost:
			t.Fatal("the bus's marker reached the reader")
		case agentik.EvAppendText:
			deltas++
			text.WriteString(ev.Text)
		case agentik.EvAssistantMessage:
			if got := agentik.JoinText(ev.Message.Content); got != want {
				t.Fatalf("stored %q", got)
			}
		case agentik.EvEnd:
			done = true
		}
	}
	if text.String() != want {
		t.Fatalf("streamed text %q\nwant %q\n(events %q)", text.String(), want, types)
	}
	if deltas >= 40 {
		t.Fatalf("%d deltas: none was lost, the test shows nothing", deltas)
	}
}
