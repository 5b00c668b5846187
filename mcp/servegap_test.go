package mcp

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/agentik/agentik"
)

// gapConv is a conversation whose first event stream is cut off as a slow
// subscriber before its turn ends; the turn's end lies in the gap.
type gapConv struct {
	agentik.Conversation // only the methods below are called
	mu                   sync.Mutex
	streams              []*fakeStream
	afters               []int64
	journal              []agentik.Message
}

func (c *gapConv) ID() string { return "c1" }

func (c *gapConv) Events(_ context.Context, after int64) (agentik.Stream[agentik.Event], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.afters = append(c.afters, after)
	s := c.streams[0]
	c.streams = c.streams[1:]
	return s, nil
}

func (c *gapConv) Messages(_ context.Context, req agentik.MessagesRequest) (agentik.MessagePage, error) {
	var out []agentik.Message
	for _, m := range c.journal {
		if m.Seq > req.After {
			out = append(out, m)
		}
	}
	return agentik.MessagePage{Messages: out}, nil
}

type fakeStream struct {
	c   chan agentik.Event
	err error
}

func newFakeStream(err error, evs ...agentik.Event) *fakeStream {
	s := &fakeStream{c: make(chan agentik.Event, len(evs)), err: err}
	for _, ev := range evs {
		s.c <- ev
	}
	if err != nil {
		close(s.c)
	}
	return s
}

func (s *fakeStream) C() <-chan agentik.Event { return s.c }
func (s *fakeStream) Err() error              { return s.err }
func (s *fakeStream) Close() error            { return nil }

func TestFollowRecoversAnEndLostInAGap(t *testing.T) {
	user := agentik.Message{ID: "u1", Seq: 1, Type: agentik.MsgUser}
	for _, tc := range []struct {
		name    string
		journal []agentik.Message
		second  []agentik.Event // what the resumed stream replays, then stays open
		reason  string
		answer  string
	}{{
		name: "completed in the gap",
		journal: []agentik.Message{user,
			{ID: "a1", Seq: 2, Type: agentik.MsgAssistant, ReplyTo: "u1", Content: []agentik.Content{agentik.Text("Let me look.")}},
			{ID: "t1", Seq: 3, Type: agentik.MsgToolCall, ReplyTo: "u1"},
			{ID: "r1", Seq: 4, Type: agentik.MsgToolResult, ReplyTo: "u1"},
			{ID: "a2", Seq: 5, Type: agentik.MsgAssistant, ReplyTo: "u1", Content: []agentik.Content{agentik.Text("Found it.")}}},
		reason: agentik.EndCompleted,
		answer: "Let me look.\n\nFound it.",
	}, {
		name:    "failed in the gap",
		journal: []agentik.Message{user, {ID: "e1", Seq: 2, Type: agentik.MsgError, ReplyTo: "u1", Code: "llm_error", Details: "no model"}},
		reason:  agentik.EndError,
	}, {
		name:    "interrupted silently: the replay carries it",
		journal: []agentik.Message{user},
		second:  []agentik.Event{{Cursor: 12, Type: agentik.EvInterrupted, ReplyTo: "u1", Reason: agentik.ReasonUser}},
		reason:  agentik.EndInterrupted,
	}, {
		name:    "still running after the gap",
		journal: []agentik.Message{user, {ID: "a1", Seq: 2, Type: agentik.MsgAssistant, ReplyTo: "u1", Content: []agentik.Content{agentik.Text("Let me look.")}}, {ID: "t1", Seq: 3, Type: agentik.MsgToolCall, ReplyTo: "u1"}},
		second: []agentik.Event{
			{Cursor: 13, Type: agentik.EvAssistantMessage, Message: &agentik.Message{ID: "a2", ReplyTo: "u1", Content: []agentik.Content{agentik.Text("Done.")}}},
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted}},
		reason: agentik.EndCompleted,
		answer: "Let me look.\n\nDone.",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			first := newFakeStream(agentik.ErrSlowSubscriber,
				agentik.Event{Cursor: 10, Type: agentik.EvUserMessage, Message: &user},
				agentik.Event{Type: agentik.EvWorking, ReplyTo: "u1"},
				agentik.Event{Type: agentik.EvStartResponse, ReplyTo: "u1"},
				agentik.Event{Type: agentik.EvAppendText, Text: "Let"})
			second := &fakeStream{c: make(chan agentik.Event, len(tc.second))}
			for _, ev := range tc.second {
				second.c <- ev
			}
			conv := &gapConv{streams: []*fakeStream{second}, journal: tc.journal}
			f := &front{h: &Handler{log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			tr := &turn{userID: "u1", userSeq: 1}
			if _, err := f.follow(context.Background(), conv, first, tr, nil); err != nil {
				t.Fatal(err)
			}
			if !tr.ended || tr.reason != tc.reason {
				t.Fatalf("ended %v %q, want %q", tr.ended, tr.reason, tc.reason)
			}
			if len(conv.afters) != 1 || conv.afters[0] != 10 {
				t.Fatalf("resubscribed after %v, want after the last durable cursor 10", conv.afters)
			}
			_, out, _ := tr.result("c1")
			if out.Answer != tc.answer {
				t.Fatalf("answer %q, want %q", out.Answer, tc.answer)
			}
		})
	}
}
