package openaiapi

import (
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentik/agentik/internal/stacktest"
)

// A streamed chat completion and a streamed response whose subscriber lost
// deltas (the bus had no room for them) still carry the answer's text whole
// in their deltas, as openai-go reads them: the rest comes from the stored
// message, with no gap and no repeat.
func TestStreamsLostDeltasArriveWhole(t *testing.T) {
	e := newEnv(t, stacktest.Engine(stacktest.LoseDeltas))
	c := e.client(aliceToken)

	reply, want := stacktest.LossyAnswer(40)
	e.llm.Enqueue(reply)
	s := c.Chat.Completions.NewStreaming(e.ctx(), oai.ChatCompletionNewParams{Model: agentID,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Count.")}})
	var deltas string
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			deltas += ch.Choices[0].Delta.Content
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != want {
		t.Fatalf("chat deltas %q\nwant %q", deltas, want)
	}

	reply, want = stacktest.LossyAnswer(40)
	e.llm.Enqueue(reply)
	r := c.Responses.NewStreaming(e.ctx(), responses.ResponseNewParams{Model: agentID, Input: text("Count.")})
	deltas = ""
	var final string
	for r.Next() {
		switch ev := r.Current(); ev.Type {
		case "response.output_text.delta":
			deltas += ev.Delta
		case "response.output_text.done":
			final = ev.Text
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != want || final != want {
		t.Fatalf("response deltas %q, done %q\nwant %q", deltas, final, want)
	}
}
