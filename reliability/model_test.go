package reliability_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// scripts answers model requests by the text of the last user message, so
// that conversations running side by side each get their own script. A text
// with no script left gets a plain answer.
type scripts struct {
	mu sync.Mutex
	m  map[string][]llmtest.Reply
}

func (s *scripts) set(text string, replies ...llmtest.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[text] = replies
}

func (s *scripts) handle(r llmtest.Request) llmtest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := r.LastUserText()
	if q := s.m[text]; len(q) > 0 {
		s.m[text] = q[1:]
		return q[0]
	}
	return llmtest.Text("answer to " + text)
}

func newScripts(s *server) *scripts {
	sc := &scripts{m: map[string][]llmtest.Reply{}}
	s.llm.Handle(sc.handle)
	return sc
}

// TestModelFaults plays each model fault in one conversation while another
// conversation is being answered: the fault gives its documented outcome
// (retried to an answer, or a durable error and end{reason:error}), the
// other conversation is served meanwhile, and the faulty conversation
// answers its next message.
func TestModelFaults(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	runFaults(t, 20*time.Second, []fault{
		{"500 then answer", []llmtest.Reply{llmtest.ServerError(), llmtest.Text("fine")}, "", "fine", 0},
		{"429 Retry-After then answer", []llmtest.Reply{llmtest.RateLimited("1"), llmtest.Text("waited")}, "", "waited", time.Second},
		{"500 until retries run out", []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()}, agentik.CodeLLMError, "", 0},
		{"connection reset mid-stream", []llmtest.Reply{llmtest.Stream().Role().Content("Hel").Reset()}, agentik.CodeLLMError, "", 0},
		{"malformed chunk", []llmtest.Reply{llmtest.Stream().Role().Content("Hel").Raw("data: {\"choices\":[{\"delta\":{\"content\":\"lo\"\n\n")}, agentik.CodeLLMError, "", 0},
		{"error object in the stream", []llmtest.Reply{llmtest.Stream().Role().Content("Hel").StreamError("overloaded")}, agentik.CodeLLMError, "", 0},
		{"finish but no [DONE]", []llmtest.Reply{llmtest.Stream().Role().Content("complete").Finish("stop")}, "", "complete", 0},
		{"neither finish nor [DONE]", []llmtest.Reply{llmtest.Stream().Role().Content("cut")}, agentik.CodeLLMError, "", 0},
		{"1 MiB chunk", []llmtest.Reply{llmtest.Stream().Role().Content(big).Finish("stop").Done()}, "", big, 0},
	})
}

// TestModelOversizedLine: one SSE line over the adapter's 32 MiB limit
// ends the turn with llm_error; it never grows memory without bound. The
// model timeout is long here: on a machine busy enough, reading 32 MiB
// under -race took longer than TestModelFaults' 20 s of silence, and the
// turn ended with llm_timeout first.
func TestModelOversizedLine(t *testing.T) {
	oversized := `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("y", 33<<20) + `"}}]}`
	runFaults(t, 2*time.Minute, []fault{
		{"33 MiB chunk", []llmtest.Reply{llmtest.Stream().Role().Content("a").Data(oversized).Finish("stop").Done()}, agentik.CodeLLMError, "", 0},
	})
}

// TestModelHang: a model that stops sending mid-answer ends the turn with
// llm_timeout after AGENTIK_LLM_TIMEOUT of silence (a short one here).
func TestModelHang(t *testing.T) {
	runFaults(t, time.Second, []fault{
		{"hang before the first byte", []llmtest.Reply{llmtest.Stream().Hang()}, agentik.CodeLLMTimeout, "", time.Second},
		{"hang mid-answer", []llmtest.Reply{llmtest.Stream().Role().Content("slow ").Hang()}, agentik.CodeLLMTimeout, "", time.Second},
	})
}

type fault struct {
	name    string
	replies []llmtest.Reply
	code    string        // "" = answered
	text    string        // the answer, when answered
	atLeast time.Duration // the turn takes at least this long
}

func runFaults(t *testing.T, llmTimeout time.Duration, cases []fault) {
	s := newServer(t, serverOptions{llmTimeout: llmTimeout})
	sc := newScripts(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other := s.createConversation(t)
	otherSub, err := openSSE(ctx, s.url+"/agentik/conversations/"+other+"/events")
	if err != nil {
		t.Fatal(err)
	}
	defer otherSub.close()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conv := s.createConversation(t)
			sub, err := openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.close()
			text := "fault " + tc.name
			sc.set(text, tc.replies...)
			start := time.Now()
			res := s.send(t, conv, text)
			// The other conversation is answered while this one meets its fault.
			o := s.send(t, other, "control "+string(rune('a'+i)))
			if evs := waitFor(t, otherSub, 10*time.Second, endOf(o.MessageID)); endReason(evs[len(evs)-1]) != agentik.EndCompleted {
				t.Fatalf("the other conversation was not served: %s", eventTypes(evs))
			}
			evs := waitFor(t, sub, 60*time.Second, endOf(res.MessageID))
			took := time.Since(start)
			msgs, _ := s.journal(t, conv)
			last := msgs[len(msgs)-1]
			reason := endReason(evs[len(evs)-1])
			if tc.code == "" {
				if reason != agentik.EndCompleted || last.Type != agentik.MsgAssistant || last.Content[0].Text != tc.text {
					t.Fatalf("want the answer, got end %q, last entry %s %q (%s)", reason, last.Type, short(last), eventTypes(evs))
				}
			} else {
				if reason != agentik.EndError || last.Type != agentik.MsgError || last.Code != tc.code || last.ReplyTo != res.MessageID {
					t.Fatalf("want error %s, got end %q, last entry %s %s (%s)", tc.code, reason, last.Type, last.Code, eventTypes(evs))
				}
				if !strings.Contains(eventTypes(evs), ","+agentik.EvError+",") {
					t.Fatalf("no durable error event: %s", eventTypes(evs))
				}
				if len(msgs) != 2 {
					t.Fatalf("a failed turn left %d entries, want the message and its error", len(msgs))
				}
			}
			if took < tc.atLeast {
				t.Fatalf("the turn took %v, want at least %v", took, tc.atLeast)
			}
			again := s.send(t, conv, "again")
			if evs := waitFor(t, sub, 10*time.Second, endOf(again.MessageID)); endReason(evs[len(evs)-1]) != agentik.EndCompleted {
				t.Fatalf("conversation not usable after the fault: %s", eventTypes(evs))
			}
		})
	}
}

func short(m agentik.Message) string {
	if len(m.Content) == 0 {
		return ""
	}
	s := m.Content[0].Text
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
