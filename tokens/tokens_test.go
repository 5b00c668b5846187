package tokens_test

import (
	"strings"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/tokens"
)

func TestEstimates(t *testing.T) {
	if tokens.Text("") != 0 || tokens.Text("a") != 1 || tokens.Text("abc") != 1 || tokens.Text("abcd") != 2 {
		t.Fatal("text rounding")
	}
	// A 3-byte CJK character is one token, as real tokenizers roughly count it.
	if tokens.Text("語") != 1 {
		t.Fatal("cjk")
	}
	user := agentik.ModelMessage{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text(strings.Repeat("x", 300))}}
	if got := tokens.Message(user, false); got != 104 {
		t.Fatalf("user message %d, want 104", got)
	}
	img := agentik.ModelMessage{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Image("image/png", []byte{1})}}
	if got := tokens.Message(img, false); got != tokens.MessageOverhead+tokens.ImageTokens {
		t.Fatalf("image message %d", got)
	}
	reasoned := agentik.ModelMessage{Role: agentik.RoleAssistant, Reasoning: strings.Repeat("r", 30)}
	if tokens.Message(reasoned, false) != 4 || tokens.Message(reasoned, true) != 14 {
		t.Fatal("reasoning counts only when sent")
	}
	call := agentik.ModelMessage{Role: agentik.RoleAssistant, ToolCalls: []agentik.ToolCall{{ID: "c1", Name: "now", Arguments: agentik.RawJSON(`{}`)}}}
	if got := tokens.Message(call, false); got != 4+8+1+1+1 {
		t.Fatalf("tool call %d", got)
	}
	req := agentik.ModelRequest{System: "sys", Messages: []agentik.ModelMessage{user, call},
		Tools: []agentik.ToolSpec{{Name: "now", Description: "time", Parameters: agentik.RawJSON(`{"type":"object"}`)}}}
	want := (4 + 1) + 104 + 15 + (8 + 1 + 2 + 6)
	if got := tokens.Request(req, false); got != want {
		t.Fatalf("request %d, want %d", got, want)
	}
}

// TestMonotone: adding content never lowers the estimate.
func TestMonotone(t *testing.T) {
	req := agentik.ModelRequest{System: "s"}
	prev := tokens.Request(req, false)
	for i := range 50 {
		req.Messages = append(req.Messages, agentik.ModelMessage{Role: agentik.RoleUser, Content: []agentik.Content{agentik.Text(strings.Repeat("w ", i))}})
		n := tokens.Request(req, false)
		if n <= prev {
			t.Fatalf("estimate went from %d to %d", prev, n)
		}
		prev = n
	}
}
