package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/openai"
)

// within fails the test unless ch is closed within 10 s.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
	}
}

// TestEarlyCallTakenOver: the call goes out at StartEarly; Generate with
// the same request reads its answer — delivered only then, whole — and
// sends nothing more.
func TestEarlyCallTakenOver(t *testing.T) {
	l, s := newLLM(t)
	gate := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Pause(gate).Content("early ", "bird").Finish("stop").Done())
	e := l.StartEarly(context.Background(), hello)
	within(t, gate.Reached(), "the early request")
	gate.Release()
	var deltas []agentik.ModelDelta
	resp, err := e.Generate(context.Background(), hello, func(d agentik.ModelDelta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "early bird" || len(deltas) != 2 || deltas[1].Text != "bird" {
		t.Fatalf("answer %+v, deltas %+v", resp, deltas)
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests, want the early one only", n)
	}
	e.Cancel() // after the take-over: nothing to drop
}

// TestEarlyCallOfAnotherRequest: a Generate whose request differs drops
// the early call (its request is cancelled) and answers its own.
func TestEarlyCallOfAnotherRequest(t *testing.T) {
	l, s := newLLM(t)
	gate := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Pause(gate).Content("stale").Finish("stop").Done(), llmtest.Text("fresh"))
	e := l.StartEarly(context.Background(), hello)
	within(t, gate.Reached(), "the early request")
	other := hello
	other.System = "be thorough"
	resp, err := e.Generate(context.Background(), other, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "fresh" {
		t.Fatalf("answer %q, want the second request's", resp.Text)
	}
	within(t, gate.Abandoned(), "the early request's cancellation")
	reqs := s.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Messages[0].Content), "be thorough") {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestEarlyCallOfABadRequest: a Generate whose request cannot be built
// returns that error and drops the early call.
func TestEarlyCallOfABadRequest(t *testing.T) {
	l, s := newLLM(t)
	gate := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Pause(gate).Content("stale").Finish("stop").Done())
	e := l.StartEarly(context.Background(), hello)
	within(t, gate.Reached(), "the early request")
	bad := hello
	bad.Messages = []agentik.ModelMessage{{Role: "bogus", Content: []agentik.Content{agentik.Text("hi")}}}
	if _, err := e.Generate(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Fatalf("err %v, want the request's", err)
	}
	within(t, gate.Abandoned(), "the early request's cancellation")
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests, want the early one only", n)
	}
}

// TestEarlyCallCancelled: Cancel ends the request, before its headers or
// after; a Generate after it calls anew.
func TestEarlyCallCancelled(t *testing.T) {
	for _, headers := range []bool{false, true} {
		l, s := newLLM(t)
		gate := llmtest.NewGate()
		r := llmtest.Stream()
		if headers {
			r = r.Role() // the response has started
		}
		s.Enqueue(r.Pause(gate).Content("never").Finish("stop").Done(), llmtest.Text("again"))
		e := l.StartEarly(context.Background(), hello)
		within(t, gate.Reached(), "the early request")
		e.Cancel()
		within(t, gate.Abandoned(), "the cancellation")
		resp, err := e.Generate(context.Background(), hello, nil)
		if err != nil || resp.Text != "again" {
			t.Fatalf("headers %v: after Cancel: %q, %v", headers, resp.Text, err)
		}
	}
}

// TestEarlyCallEndsWithTheTurn: once taken over, the call ends with the
// Generate context (an interrupt), as any call does.
func TestEarlyCallEndsWithTheTurn(t *testing.T) {
	l, s := newLLM(t, func(o *openai.Options) { o.Timeout = time.Minute }) // not the watchdog
	gate := llmtest.NewGate()
	s.Enqueue(llmtest.Stream().Role().Content("partial").Pause(gate).Content("rest").Finish("stop").Done())
	e := l.StartEarly(context.Background(), hello)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = e.Generate(ctx, hello, func(d agentik.ModelDelta) {
			if d.Text == "partial" {
				cancel()
			}
		})
	}()
	within(t, done, "Generate's return after its context ended")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	within(t, gate.Abandoned(), "the request's end")
}

// TestEarlyCallError: an error answer of the early request is Generate's,
// as for a call made then (here a 400, not retried).
func TestEarlyCallError(t *testing.T) {
	l, s := newLLM(t)
	s.Enqueue(llmtest.APIError(400, "invalid_request_error", "bad", "no such thing"))
	e := l.StartEarly(context.Background(), hello)
	_, err := e.Generate(context.Background(), hello, nil)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("err %v, want the 400", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}
