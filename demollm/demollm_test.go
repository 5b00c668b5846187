package demollm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/demollm"
)

func user(text string) agentik.ModelMessage {
	return agentik.ModelMessage{Role: "user", Content: []agentik.Content{agentik.Text(text)}}
}

func TestEchoStreamsWordByWord(t *testing.T) {
	l := demollm.New()
	var deltas []string
	resp, err := l.Generate(context.Background(), agentik.ModelRequest{Messages: []agentik.ModelMessage{user("hello there")}},
		func(d agentik.ModelDelta) {
			if d.Kind != agentik.DeltaText {
				t.Errorf("delta kind %q", d.Kind)
			}
			deltas = append(deltas, d.Text)
		})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Text, `"hello there"`) || resp.FinishReason != "stop" || len(resp.ToolCalls) != 0 {
		t.Fatalf("%+v", resp)
	}
	if len(deltas) < 10 || strings.Join(deltas, "") != resp.Text || int(resp.Tokens.Output) != len(deltas) || resp.Tokens.Input == 0 {
		t.Fatalf("%d deltas, tokens %+v", len(deltas), resp.Tokens)
	}
	again, _ := l.Generate(context.Background(), agentik.ModelRequest{Messages: []agentik.ModelMessage{user("hello there")}}, nil)
	if again.Text != resp.Text {
		t.Fatal("not deterministic")
	}
}

func TestTimeToolLoop(t *testing.T) {
	l := demollm.New()
	tools := []agentik.ToolSpec{{Name: "current_time"}}
	req := agentik.ModelRequest{Messages: []agentik.ModelMessage{user("What time is it?")}, Tools: tools}
	resp, err := l.Generate(context.Background(), req, nil)
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "current_time" || resp.ToolCalls[0].ID == "" {
		t.Fatalf("%+v %v", resp, err)
	}
	call := resp.ToolCalls[0]
	req.Messages = append(req.Messages,
		agentik.ModelMessage{Role: "assistant", ToolCalls: resp.ToolCalls},
		agentik.ModelMessage{Role: "tool", CallID: call.ID, Name: call.Name, Content: []agentik.Content{agentik.Text("2026-01-02T03:04:05Z")}},
	)
	resp, err = l.Generate(context.Background(), req, nil)
	if err != nil || len(resp.ToolCalls) != 0 || !strings.Contains(resp.Text, "2026-01-02T03:04:05Z") {
		t.Fatalf("%+v %v", resp, err)
	}

	// Without the tool on offer the demo just echoes.
	resp, _ = l.Generate(context.Background(), agentik.ModelRequest{Messages: []agentik.ModelMessage{user("What time is it?")}}, nil)
	if len(resp.ToolCalls) != 0 || !strings.Contains(resp.Text, "What time is it?") {
		t.Fatalf("%+v", resp)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := demollm.New().Generate(ctx, agentik.ModelRequest{Messages: []agentik.ModelMessage{user("x")}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestInterruptMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	_, err := (&demollm.LLM{WordDelay: 1}).Generate(ctx, agentik.ModelRequest{Messages: []agentik.ModelMessage{user("x")}},
		func(agentik.ModelDelta) { n++; cancel() })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("err %v after %d deltas", err, n)
	}
}

func TestSummaries(t *testing.T) {
	l := demollm.New()
	ctx := context.Background()
	user := func(s string) agentik.ModelMessage {
		return agentik.ModelMessage{Role: "user", Content: []agentik.Content{agentik.Text(s)}}
	}
	// A compaction call: the engine's summariser prompt and one transcript.
	resp, err := l.Generate(ctx, agentik.ModelRequest{
		System:   "You condense the earlier part of a conversation. Write a concise summary.",
		Messages: []agentik.ModelMessage{user("User: plan a trip to Lisbon\nAssistant: echo\nUser: and Porto\nAssistant: echo")},
	}, func(agentik.ModelDelta) { t.Fatal("a summary is not streamed") })
	if err != nil || !strings.Contains(resp.Text, "2 message(s)") || !strings.Contains(resp.Text, "plan a trip to Lisbon; and Porto") {
		t.Fatalf("summary %q, %v", resp.Text, err)
	}
	// A user asking for a summary gets the earlier messages listed.
	resp, err = l.Generate(ctx, agentik.ModelRequest{Messages: []agentik.ModelMessage{
		user("first idea"), {Role: "assistant", Content: []agentik.Content{agentik.Text("echo")}}, user("Please summarize our conversation"),
	}}, nil)
	if err != nil || !strings.Contains(resp.Text, `1. "first idea"`) || strings.Contains(resp.Text, "Please summarize") {
		t.Fatalf("conversation summary %q, %v", resp.Text, err)
	}
}
