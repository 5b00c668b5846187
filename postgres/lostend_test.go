package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/tools"
	"github.com/jackc/pgx/v5"
)

// outrun is the sequencer statement of a process whose every run loses the
// race issue 53 found: it picks events that another process's run numbered
// after its snapshot was taken, so it numbers none of them and reports how
// many it picked and no cursor (n > 0, top 0). The events are numbered, by
// the real statement, before it answers.
func outrun(ran chan<- struct{}) func(context.Context, querier) (int, int64, bool, error) {
	return func(ctx context.Context, q querier) (int, int64, bool, error) {
		n, _, busy, err := sequenceUnlessBusy(ctx, q)
		if ran != nil && n > 0 {
			select {
			case ran <- struct{}{}:
			default:
			}
		}
		return n, 0, busy, err
	}
}

// split returns the types of evs, durable and online apart: each is
// delivered in its own order (durable by cursor, online as published), and
// the two are not ordered with each other across processes.
//
// Text deltas in a row are one "append_text(<their text>)": a process
// merges the deltas it has not sent yet into one (Bus.queueDelta), so
// another process sees the same text in as many pieces as the sender's
// timing made.
func split(evs []agentik.Event) (durable, online string) {
	var d, o []string
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			o = append(o, "append_text("+text.String()+")")
			text.Reset()
		}
	}
	for _, ev := range evs {
		switch {
		case ev.Cursor != 0:
			d = append(d, ev.Type)
		case ev.Type == agentik.EvAppendText:
			text.WriteString(ev.Text)
		default:
			flush()
			o = append(o, ev.Type)
		}
	}
	flush()
	return strings.Join(d, " "), strings.Join(o, " ")
}

// TestEveryEventReachesTheStreamingProcess is issue 53's lost end: many
// conversations created and streamed on process A, their messages posted
// to process B, at once, while B also creates conversations (agent events
// its sequencer numbers) and its sequencer runs are outrun as they were
// under load. Every stream must receive every event of its turn within 10
// s: the online ones (working, start_response, append_text, end; and
// awaiting_approval, with an approval policy) as well as the durable ones.
func TestEveryEventReachesTheStreamingProcess(t *testing.T) {
	five := func(llmtest.Request) llmtest.Reply {
		return llmtest.Stream().Role().Content("one ").Content("two ").Content("three ").Content("four ").Content("five").Finish("stop").Done()
	}
	for _, tc := range []struct {
		name     string
		approval bool
	}{{"plain", false}, {"approval", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const convs = 50
			llm := llmtest.NewServer()
			defer llm.Close()
			o := nodeOptions{scan: time.Second, sequence: outrun(nil)}
			llm.Handle(five)
			if tc.approval {
				var mu sync.Mutex
				asked := map[string]bool{} // by the first user text
				llm.Handle(func(r llmtest.Request) llmtest.Reply {
					mu.Lock()
					defer mu.Unlock()
					if text := r.LastUserText(); !asked[text] {
						asked[text] = true
						return llmtest.ToolCalls(llmtest.Call("send_mail", `{}`).WithID("m1"))
					}
					return five(r)
				})
				o.tools = tools.NewRegistry(&countTool{})
				o.approval, _ = agentik.ParseApprovalPolicy("send_*=ask")
			}
			dsn := freshSchema(t)
			a := newNode(t, dsn, llm, o)
			b := newNode(t, dsn, llm, o)
			ctx := agentik.WithPrincipal(context.Background(), "alice")
			var wg sync.WaitGroup
			for i := range convs {
				wg.Go(func() {
					info, err := a.eng.CreateConversation(ctx, agentik.CreateRequest{})
					if err != nil {
						t.Error(err)
						return
					}
					onA, _ := a.eng.Conversation(ctx, info.ID)
					s, err := onA.Events(ctx, agentik.LiveOnly)
					if err != nil {
						t.Error(err)
						return
					}
					defer s.Close()
					// An agent event for B's sequencer, as the benchmark's
					// clients created conversations on every process.
					if _, err := b.eng.CreateConversation(ctx, agentik.CreateRequest{}); err != nil {
						t.Error(err)
						return
					}
					onB, _ := b.eng.Conversation(ctx, info.ID)
					if _, err := onB.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text(fmt.Sprint("m", i))}}); err != nil {
						t.Error(err)
						return
					}
					var seen []agentik.Event
					deadline := time.NewTimer(10 * time.Second)
					defer deadline.Stop()
					// until reads the stream until done says so.
					until := func(what string, done func(durable, online string) bool) bool {
						for {
							d, o := split(seen)
							if done(d, o) {
								return true
							}
							select {
							case ev, open := <-s.C():
								if !open {
									t.Errorf("%s: stream ended before %s: %v", info.ID, what, s.Err())
									return false
								}
								seen = append(seen, ev)
							case <-deadline.C:
								t.Errorf("%s: no %s within 10s; durable [%s], online [%s]", info.ID, what, d, o)
								return false
							}
						}
					}
					wantDurable := "user_message assistant_message"
					wantOnline := "working start_response append_text(one two three four five) end"
					if tc.approval {
						if !until("awaiting_approval", func(_, o string) bool { return strings.Contains(o, agentik.EvAwaitingApproval) }) {
							return
						}
						if err := onB.Resolve(ctx, "m1", agentik.Resolution{Approved: true}); err != nil {
							t.Error(err)
							return
						}
						wantDurable = "user_message tool_call approval_requested approval_resolved tool_result assistant_message"
						wantOnline = "working awaiting_approval working start_response append_text(one two three four five) end"
					}
					if !until("every event", func(d, o string) bool { return d == wantDurable && strings.HasSuffix(o, " end") }) {
						return
					}
					if _, o := split(seen); o != wantOnline {
						t.Errorf("%s: online events [%s], want [%s]", info.ID, o, wantOnline)
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestSequencerRunThatNumberedNothingSaysNothing: a sequencer run that
// numbered none of the events it picked (another process's run numbered
// them) sends no agent notification: issue 53's lost end was the empty
// entry it sent, which made every other process refuse the whole payload
// it was packed in — the online events of the turns that process ran.
func TestSequencerRunThatNumberedNothingSaysNothing(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	st := openDSN(t, dsn)
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{"agentik " + st.schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	b, err := NewBus(ctx, st, BusOptions{sequence: outrun(ran)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conv := createConv(t, st) // an agent event, unnumbered
	b.PublishAgent(agentik.AgentEvent{Type: agentik.AgentEvCreated, ConversationID: conv})
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the sequencer did not run")
	}
	end := agentik.Event{ConversationID: conv, Date: agentik.Now(), Type: agentik.EvEnd, Reason: agentik.EndCompleted}
	b.Publish(end)
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("no end notification: %v", err)
		}
		ns, bad, err := decodePayload(n.Payload, nil)
		if err != nil || bad > 0 {
			t.Fatalf("the Bus sent %q: %v, %d malformed entries", n.Payload, err, bad)
		}
		for _, n := range ns {
			if n.kind == kindAgent {
				t.Fatalf("a run that numbered nothing announced agent cursor %d", n.cursor)
			}
			if n.kind == kindOnline && n.event.Type == agentik.EvEnd {
				return
			}
		}
	}
}

// TestMalformedEntryCostsOnlyItself: a payload another sender packed with
// a malformed entry among valid ones delivers the valid ones.
func TestMalformedEntryCostsOnlyItself(t *testing.T) {
	dsn := freshSchema(t)
	ctx := context.Background()
	st := openDSN(t, dsn)
	b, err := NewBus(ctx, st, BusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conv := createConv(t, st)
	sub := b.Subscribe(conv)
	defer sub.Close()
	var got atomic.Value
	go func() {
		for ev := range sub.C() {
			if ev.Type == agentik.EvEnd {
				got.Store(ev)
				return
			}
		}
	}()
	end, err := encodeEntry(notification{kind: kindOnline, event: agentik.Event{ConversationID: conv, Date: agentik.Now(), Type: agentik.EvEnd, Reason: agentik.EndCompleted, SentBefore: 1}})
	if err != nil {
		t.Fatal(err)
	}
	payload := header(agentik.NewID(), 1) + "\n" + end // an empty entry first, as issue 53's sender packed it
	if _, err := st.pool.Exec(ctx, "SELECT pg_notify($1, $2)", b.channel, payload); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); got.Load() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the end packed after a malformed entry was not delivered within 10s")
		}
	}
}

// TestLateOnlineEventsOfAReplayedTurn: a subscriber whose replay reads
// another process's answer from the store before this process has heard
// that turn's online events (its listener held back here, as a busy
// machine can) does not get that turn's working and deltas live after the
// replay: a door would show the answer twice. The next turn's online
// events all arrive.
func TestLateOnlineEventsOfAReplayedTurn(t *testing.T) {
	dsn := freshSchema(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	var gate atomic.Pointer[chan struct{}]
	a := newNode(t, dsn, llm, nodeOptions{})
	b := newNode(t, dsn, llm, nodeOptions{handling: func() {
		if g := gate.Load(); g != nil {
			<-*g
		}
	}})
	ctx := context.Background()
	_, cs := sharedConversation(t, ctx, a, b)
	onA := liveEvents(t, ctx, cs[0])

	held := make(chan struct{})
	gate.Store(&held) // b hears nothing from here
	llm.Enqueue(llmtest.Text("the first answer"))
	first, onB := answerThenReplay(t, ctx, onA, cs)
	gate.Store(nil)
	close(held) // b hears the first turn's notifications now

	llm.Enqueue(llmtest.Text("the second answer"))
	second := sendText(t, cs[0], "two")
	live := waitFor(t, onB, "the second turn's end", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == second.MessageID
	})
	for _, ev := range live {
		// Its end came after its answer was committed: a subscriber that
		// replayed the answer may get it, as one that joined between the
		// two always could.
		if ev.Cursor == 0 && ev.ReplyTo == first.MessageID && ev.Type != agentik.EvEnd {
			t.Errorf("a late online event of the replayed turn: %+v", ev)
		}
	}
	liveTurn(t, live, second.MessageID, "the second answer")
}

// answerThenReplay sends a message through cs[0], waits for its turn's end
// on onA, then subscribes through cs[1] from the start and reads the
// replay up to that turn's answer.
func answerThenReplay(t *testing.T, ctx context.Context, onA agentik.Stream[agentik.Event], cs []agentik.Conversation) (agentik.SendResult, agentik.Stream[agentik.Event]) {
	t.Helper()
	first := sendText(t, cs[0], "one")
	waitFor(t, onA, "the first turn's end", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == first.MessageID
	})
	onB, err := cs[1].Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { onB.Close() })
	waitFor(t, onB, "the replayed answer", func(ev agentik.Event) bool {
		return ev.Message != nil && ev.Message.ReplyTo == first.MessageID && ev.Message.ClosesTurn()
	})
	return first, onB
}

// liveTurn fails t unless live holds the turn answering replyTo, streamed:
// its working and exactly the text want.
func liveTurn(t *testing.T, live []agentik.Event, replyTo, want string) {
	t.Helper()
	var text strings.Builder
	working := false
	for _, ev := range live {
		if ev.Type == agentik.EvAppendText {
			text.WriteString(ev.Text)
		}
		working = working || (ev.Type == agentik.EvWorking && ev.ReplyTo == replyTo)
	}
	if text.String() != want || !working {
		t.Fatalf("live text %q, working %v; events %+v", text.String(), working, live)
	}
}

// TestRegenerateAfterAReplayedAnswerStreams: a subscriber sharing the
// store whose replay holds a turn's answer sees that turn's regenerate
// live (working, its text, end completed): the same message answered
// again, by a run that moved the head after the answer, is not a late
// event of the answered run.
func TestRegenerateAfterAReplayedAnswerStreams(t *testing.T) {
	dsn := freshSchema(t)
	llm := llmtest.NewServer()
	defer llm.Close()
	a := newNode(t, dsn, llm, nodeOptions{})
	b := newNode(t, dsn, llm, nodeOptions{})
	ctx := context.Background()
	_, cs := sharedConversation(t, ctx, a, b)
	onA := liveEvents(t, ctx, cs[0])

	llm.Enqueue(llmtest.Text("first"))
	first, onB := answerThenReplay(t, ctx, onA, cs)
	llm.Enqueue(llmtest.Text("again"))
	if _, err := cs[0].Regenerate(ctx, agentik.RegenerateRequest{Seq: first.Seq}); err != nil {
		t.Fatal(err)
	}
	live := waitFor(t, onB, "the regenerate's answer", func(ev agentik.Event) bool {
		return ev.Message != nil && ev.Message.ReplyTo == first.MessageID && ev.Cursor > 0 && ev.Message.ClosesTurn()
	})
	live = append(live, waitFor(t, onB, "the regenerate's end", func(ev agentik.Event) bool {
		return ev.Type == agentik.EvEnd && ev.ReplyTo == first.MessageID
	})...)
	liveTurn(t, live, first.MessageID, "again")
}
