package agui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentik/agentik"
)

// The translator's repairs for what a live HTTP test cannot provoke at will:
// deltas dropped for a slow reader, a resubscription that missed a start,
// a turn that ends without its error record, several turns in one run.
func TestTranslatorRepairs(t *testing.T) {
	asst := func(replyTo, text string) agentik.Event {
		m := &agentik.Message{ID: "j-" + text, Type: agentik.MsgAssistant, ReplyTo: replyTo, Content: []agentik.Content{agentik.Text(text)}}
		return agentik.MessageEvent(m)
	}
	cases := []struct {
		name  string
		turns []string
		evs   []agentik.Event
		want  string
	}{{
		name:  "dropped deltas are completed from the durable answer",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "Hel"},
			asst("u1", "Hello"),
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted},
		},
		want: "TEXT_MESSAGE_START:m1 TEXT_MESSAGE_CONTENT:m1:Hel TEXT_MESSAGE_CONTENT:m1:lo TEXT_MESSAGE_END:m1 RUN_FINISHED",
	}, {
		name:  "an answer that was never streamed is shown whole",
		turns: []string{"u1"},
		evs:   []agentik.Event{asst("u1", "Whole"), {Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted}},
		want:  "TEXT_MESSAGE_START:j-Whole TEXT_MESSAGE_CONTENT:j-Whole:Whole TEXT_MESSAGE_END:j-Whole RUN_FINISHED",
	}, {
		name:  "an unrecorded failure still ends the run with RUN_ERROR, text closed",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "x"},
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndError},
			{Type: agentik.EvWorking, ReplyTo: "u2"},
		},
		want: "TEXT_MESSAGE_START:m1 TEXT_MESSAGE_CONTENT:m1:x TEXT_MESSAGE_END:m1 RUN_ERROR:internal",
	}, {
		name:  "an interrupted turn finishes as cancelled",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvStartReasoning, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "hm"},
			{Type: agentik.EvInterrupted, ReplyTo: "u1", Reason: agentik.ReasonUser},
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndInterrupted},
		},
		want: "REASONING_START:m1 REASONING_MESSAGE_START:m1 REASONING_MESSAGE_CONTENT:m1:hm REASONING_MESSAGE_END:m1 REASONING_END:m1 RUN_FINISHED:cancelled",
	}, {
		name:  "two turns: foreign deltas between them are not shown",
		turns: []string{"u1", "u2"},
		evs: []agentik.Event{
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "a"},
			asst("u1", "a"),
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted},
			{Type: agentik.EvStartResponse, ReplyTo: "other"},
			{Type: agentik.EvAppendText, Text: "foreign"},
			{Type: agentik.EvEnd, ReplyTo: "other", Reason: agentik.EndCompleted},
			{Type: agentik.EvStartResponse, ReplyTo: "u2"},
			{Type: agentik.EvAppendText, Text: "b"},
			asst("u2", "b"),
			{Type: agentik.EvEnd, ReplyTo: "u2", Reason: agentik.EndCompleted},
			{Type: agentik.EvStartResponse, ReplyTo: "u3"},
		},
		want: "TEXT_MESSAGE_START:m1 TEXT_MESSAGE_CONTENT:m1:a TEXT_MESSAGE_END:m1 TEXT_MESSAGE_START:m2 TEXT_MESSAGE_CONTENT:m2:b TEXT_MESSAGE_END:m2 RUN_FINISHED",
	}, {
		name:  "a resubscription's join continues the open text",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "ab"},
			{Type: "resubscribed"},
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "abcd"},
			{Type: agentik.EvAppendText, Text: "e"},
			asst("u1", "abcde"),
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted},
		},
		want: "TEXT_MESSAGE_START:m1 TEXT_MESSAGE_CONTENT:m1:ab TEXT_MESSAGE_CONTENT:m1:cd TEXT_MESSAGE_CONTENT:m1:e TEXT_MESSAGE_END:m1 RUN_FINISHED",
	}, {
		name:  "a resubscription after the phase closed starts anew",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvStartReasoning, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "hm"},
			{Type: "resubscribed"},
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "Hi"},
			asst("u1", "Hi"),
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted},
		},
		want: "REASONING_START:m1 REASONING_MESSAGE_START:m1 REASONING_MESSAGE_CONTENT:m1:hm REASONING_MESSAGE_END:m1 REASONING_END:m1 TEXT_MESSAGE_START:m2 TEXT_MESSAGE_CONTENT:m2:Hi TEXT_MESSAGE_END:m2 RUN_FINISHED",
	}, {
		// A run posting client tool results continues the turn; the end of
		// the round it answers, published before the run subscribed, can
		// reach the process late (it came from another process).
		name:  "the late end of the round a run posted results for is not the run's",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndClientTools},
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			{Type: agentik.EvStartResponse, ReplyTo: "u1"},
			{Type: agentik.EvAppendText, Text: "blue"},
			asst("u1", "blue"),
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndCompleted},
		},
		want: "TEXT_MESSAGE_START:m1 TEXT_MESSAGE_CONTENT:m1:blue TEXT_MESSAGE_END:m1 RUN_FINISHED",
	}, {
		name:  "a round ending for client tools ends the run",
		turns: []string{"u1"},
		evs: []agentik.Event{
			{Type: agentik.EvWorking, ReplyTo: "u1"},
			agentik.MessageEvent(&agentik.Message{ID: "c1", Type: agentik.MsgToolCall, ReplyTo: "u1", CallID: "call1", Name: "pick"}),
			{Type: agentik.EvEnd, ReplyTo: "u1", Reason: agentik.EndClientTools},
		},
		want: "TOOL_CALL_START TOOL_CALL_END RUN_FINISHED:success",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			tr := newTranslator("t", "r", c.turns, nil, func() string { n++; return fmt.Sprintf("m%d", n) })
			var got []string
			for _, ev := range c.evs {
				if ev.Type == "resubscribed" {
					tr.resubscribed()
					continue
				}
				for _, out := range tr.event(ev) {
					s := out.Type
					switch {
					case out.Delta != "":
						s += ":" + out.MessageID + ":" + out.Delta
					case out.MessageID != "":
						s += ":" + out.MessageID
					case out.Code != "":
						s += ":" + out.Code
					case out.Outcome != nil:
						s += ":" + out.Outcome.Type
					}
					got = append(got, s)
				}
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Fatalf("got  %s\nwant %s", g, c.want)
			}
			if !tr.done {
				t.Fatal("run not done")
			}
		})
	}
}
