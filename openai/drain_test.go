package openai

import (
	"context"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// TestEarlyAnswerBeforeTheStreamEnds: an early call's answer is returned
// at [DONE], while the server still holds the stream open; the rest of the
// body is then read to its end, not cut off, so the connection can serve
// the next call.
func TestEarlyAnswerBeforeTheStreamEnds(t *testing.T) {
	s := llmtest.NewServer()
	t.Cleanup(s.Close)
	l, err := New(Options{BaseURL: s.URL(), Model: "m", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	l.drained = func(err error) { drained <- err }
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	s.Enqueue(llmtest.Stream().Role().Content("kept").Finish("stop").Done().Pause(gate))
	req := agentik.ModelRequest{Messages: []agentik.ModelMessage{{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text("hi")}}}}
	e := l.StartEarly(context.Background(), req)
	resp, err := e.Generate(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "kept" {
		t.Fatalf("answer %+v", resp)
	}
	select {
	case err := <-drained:
		t.Fatalf("the answer waited for the stream's end (drain ended with %v)", err)
	default:
	}
	gate.Release()
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("the stream was cut off: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was not read to its end within 10 s")
	}
}

// TestEarlyDrainCutOff: a server that keeps the stream open after [DONE]
// gets the answer's call cut off by the watchdog, on the drain's
// goroutine: the answer came back at once, and the connection is closed
// rather than left waiting.
func TestEarlyDrainCutOff(t *testing.T) {
	s := llmtest.NewServer()
	t.Cleanup(s.Close)
	l, err := New(Options{BaseURL: s.URL(), Model: "m", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	l.drained = func(err error) { drained <- err }
	gate := llmtest.NewGate()
	t.Cleanup(gate.Release)
	s.Enqueue(llmtest.Stream().Role().Content("kept").Finish("stop").Done().Pause(gate))
	req := agentik.ModelRequest{Messages: []agentik.ModelMessage{{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text("hi")}}}}
	resp, err := l.StartEarly(context.Background(), req).Generate(t.Context(), req, nil)
	if err != nil || resp.Text != "kept" {
		t.Fatalf("answer %+v, %v", resp, err)
	}
	select {
	case err := <-drained:
		if err == nil {
			t.Fatal("the drain of a stream kept open ended as if read to its end")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drain was not cut off within 10 s")
	}
	select {
	case <-gate.Abandoned():
	case <-time.After(10 * time.Second):
		t.Fatal("the server still holds the stream: the call was not ended")
	}
}
