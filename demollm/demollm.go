// Package demollm is the offline stand-in model used when no LLM endpoint is
// configured, so a fresh agentik install answers out of the box.
//
// It is deterministic and does no I/O: it streams a short reply word by word
// that echoes the user's last text and explains that no model is configured.
// When the user asks for the time and a tool named current_time is offered,
// it calls that tool and then reports its result, which shows the whole
// tool loop (tool_call, tool_result, answer) without a real model.
package demollm

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentik/agentik"
)

// Name is the model name the demo reports. Clients (the web console) read
// it from the agent info to say that the agent runs the demo.
const Name = "agentik-demo"

// PacedWordDelay is the pause between streamed words that serve uses, so
// that streaming is visible in the console.
const PacedWordDelay = 30 * time.Millisecond

// TimeTool is the tool the demo calls when asked for the time.
const TimeTool = "current_time"

// LLM is the demo model. The zero value is ready to use; New returns one.
// Safe for concurrent use once configured.
type LLM struct {
	// WordDelay is waited before each streamed word, to make streaming
	// visible in a UI. Zero streams at once (tests).
	WordDelay time.Duration

	calls atomic.Int64
}

var _ agentik.LLM = (*LLM)(nil)

// New returns a demo model that streams without delay.
func New() *LLM { return &LLM{} }

// Info reports the demo model. It takes images (and only counts them) so
// image upload can be tried without a model.
func (l *LLM) Info() agentik.ModelInfo {
	return agentik.ModelInfo{Name: Name, ContextTokens: 32768, ImageInput: true}
}

var askTime = regexp.MustCompile(`(?i)\b(time|clock|hour)\b`)

var askSummary = regexp.MustCompile(`(?i)\bsumm?ar(y|ise|ize|ising|izing)\b|\brecap\b`)

// summaryRequest reports whether req is a summariser call (compaction):
// a system prompt that asks for a summary, one user message, no tools.
func summaryRequest(req agentik.ModelRequest) bool {
	return len(req.Tools) == 0 && len(req.Messages) == 1 && askSummary.MatchString(req.System)
}

// summarise condenses a compaction transcript ("User: …", "Assistant: …"
// lines, maybe after "Summary so far:") into what the user asked.
func summarise(transcript string) string {
	var asked []string
	for _, line := range strings.Split(transcript, "\n") {
		if q, ok := strings.CutPrefix(line, "User: "); ok {
			asked = append(asked, clip(q, 80))
		}
	}
	var b strings.Builder
	if prev, ok := strings.CutPrefix(transcript, "Summary so far:\n"); ok {
		if i := strings.Index(prev, "\n\n"); i > 0 {
			b.WriteString(strings.TrimSpace(prev[:i]))
			b.WriteString(" ")
		}
	}
	if len(asked) == 0 {
		b.WriteString("Earlier, the user and the offline demo model exchanged messages without text.")
		return b.String()
	}
	if len(asked) > 8 {
		asked = asked[len(asked)-8:]
	}
	fmt.Fprintf(&b, "Earlier, the user wrote %d message(s) to the offline demo model, which echoed each: %s.", len(asked), strings.Join(asked, "; "))
	return b.String()
}

// conversationSummary answers "summarise our conversation" from the
// messages before the current one.
func conversationSummary(history []agentik.ModelMessage) string {
	var said []string
	for _, m := range history {
		if m.Role == "user" {
			if t := strings.TrimSpace(agentik.JoinText(m.Content)); t != "" {
				said = append(said, clip(t, 80))
			}
		}
	}
	if len(said) == 0 {
		return "There is nothing to summarise yet: this is the first message of our conversation. (I am the agentik demo model; set OPENAI_BASE_URL and OPENAI_MODEL to use a real one.)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Here is a summary of our conversation so far. You sent %d earlier message(s):\n\n", len(said))
	for i, s := range said {
		fmt.Fprintf(&b, "%d. %q\n", i+1, s)
	}
	b.WriteString("\nI answered each as the **agentik demo model**, which only echoes. Set OPENAI_BASE_URL and OPENAI_MODEL to get real answers.")
	return b.String()
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// Generate answers req. It returns ctx.Err() (wrapped) when ctx ends while
// streaming, like a real model cut off by an interrupt.
func (l *LLM) Generate(ctx context.Context, req agentik.ModelRequest, onDelta func(agentik.ModelDelta)) (agentik.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return agentik.ModelResponse{}, fmt.Errorf("demollm: %w", err)
	}
	tokens := agentik.TurnTokens{Input: estimateTokens(req)}

	// Messages after the last user message belong to the current turn.
	last := len(req.Messages) - 1
	for last >= 0 && req.Messages[last].Role != "user" {
		last--
	}
	var userText string
	var images int
	if last >= 0 {
		userText = strings.TrimSpace(agentik.JoinText(req.Messages[last].Content))
		for _, c := range req.Messages[last].Content {
			if c.Type == agentik.ContentImage {
				images++
			}
		}
	}
	var toolResult *agentik.ModelMessage
	for i := last + 1; i < len(req.Messages); i++ {
		if m := req.Messages[i]; m.Role == "tool" && m.Name == TimeTool {
			toolResult = &req.Messages[i]
		}
	}

	var text string
	switch {
	case summaryRequest(req):
		// The engine's compaction asks for a summary of a transcript; it is
		// not streamed.
		return agentik.ModelResponse{Text: summarise(userText), Tokens: agentik.TurnTokens{Input: tokens.Input, Output: 40}, FinishReason: "stop"}, nil
	case askSummary.MatchString(userText):
		text = conversationSummary(req.Messages[:max(last, 0)])
	case toolResult != nil && toolResult.IsError:
		text = "The " + TimeTool + " tool failed: " + agentik.JoinText(toolResult.Content)
	case toolResult != nil:
		text = "The " + TimeTool + " tool says it is " + agentik.JoinText(toolResult.Content) + "."
	case askTime.MatchString(userText) && offers(req.Tools, TimeTool):
		id := fmt.Sprintf("call_demo_%d", l.calls.Add(1))
		return agentik.ModelResponse{
			ToolCalls:    []agentik.ToolCall{{ID: id, Name: TimeTool, Arguments: agentik.RawJSON(`{}`)}},
			Tokens:       agentik.TurnTokens{Input: tokens.Input, Output: 5},
			FinishReason: "tool_calls",
		}, nil
	default:
		text = reply(userText, images)
	}

	var b strings.Builder
	for _, w := range words(text) {
		if l.WordDelay > 0 {
			t := time.NewTimer(l.WordDelay)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		// Checked after the wait too: select picks at random when both the
		// timer and ctx are ready, and an interrupt must win.
		if err := ctx.Err(); err != nil {
			return agentik.ModelResponse{}, fmt.Errorf("demollm: %w", err)
		}
		b.WriteString(w)
		tokens.Output++
		if onDelta != nil {
			onDelta(agentik.ModelDelta{Kind: agentik.DeltaText, Text: w})
		}
	}
	return agentik.ModelResponse{Text: b.String(), Tokens: tokens, FinishReason: "stop"}, nil
}

func reply(userText string, images int) string {
	var b strings.Builder
	b.WriteString("Hello! I am the agentik demo model: no LLM endpoint is configured, so I can only echo. ")
	switch {
	case userText != "":
		fmt.Fprintf(&b, "You said: %q. ", userText)
	case images == 0:
		b.WriteString("Your message had no text. ")
	}
	if images > 0 {
		fmt.Fprintf(&b, "I received %d image(s) but cannot look at them. ", images)
	}
	b.WriteString("Set OPENAI_BASE_URL, OPENAI_MODEL (and OPENAI_API_KEY if needed) to talk to a real model. Ask me for the time to see a tool call.")
	return b.String()
}

func offers(tools []agentik.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// words splits s after each space, so the pieces concatenate back to s.
func words(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// estimateTokens is the usual rough 4 bytes per token.
func estimateTokens(req agentik.ModelRequest) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(agentik.JoinText(m.Content)) + len(m.Reasoning)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return int64(n/4 + 1)
}
