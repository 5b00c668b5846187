package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/llmtest"
)

// Prompts the scripted model understands. The model decides by the last
// message of the request, so it is stateless and any number of
// conversations can share it.
const (
	promptPlain = "Hello, how are you?"
	promptTool  = "tool: what time is it?"
	relayPrefix = "relay:" // relay:N answers with N content deltas
)

// answerText is what the model says: 20 words, streamed as 20 deltas, about
// the length of a short chat answer.
const answerText = "Sure, here is a short scripted answer of twenty words that stands in for what a real model would say."

// model is the scripted OpenAI-compatible model on loopback, shared by the
// server under test and the direct calls it is compared with.
type model struct {
	srv        *llmtest.Server
	ttft       time.Duration
	chunkDelay time.Duration

	mu     sync.Mutex
	record bool
	bodies [][]byte // request bodies since the last take, when recording
}

func newModel(ttft, chunkDelay time.Duration) *model {
	m := &model{srv: llmtest.NewServer(), ttft: ttft, chunkDelay: chunkDelay}
	// It shares the machine with the server it measures: it keeps no
	// requests and decodes only what reply reads.
	m.srv.Lean()
	m.srv.Handle(m.reply)
	return m
}

func (m *model) URL() string { return m.srv.URL() }
func (m *model) Close()      { m.srv.Close() }

// reply scripts the answer to one request: a tool call when the user asked
// for one (and no result came back yet), N deltas for relay:N, else the
// 20-word answer.
func (m *model) reply(req llmtest.Request) llmtest.Reply {
	m.mu.Lock()
	if m.record {
		m.bodies = append(m.bodies, req.Raw)
	}
	m.mu.Unlock()
	var r llmtest.Reply
	last := req.Messages[len(req.Messages)-1]
	user := req.LastUserText()
	switch {
	case last.Role == "tool":
		r = llmtest.Text(answerText)
	case strings.HasPrefix(user, "tool:"):
		r = llmtest.ToolCalls(llmtest.Call("current_time", `{}`))
	case strings.HasPrefix(user, relayPrefix):
		n, _ := strconv.Atoi(strings.TrimPrefix(user, relayPrefix))
		r = relayReply(n)
	default:
		r = llmtest.Text(answerText)
	}
	return r.WithDelays(m.ttft, m.chunkDelay)
}

// relayReply streams n one-word deltas.
func relayReply(n int) llmtest.Reply {
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = "tok "
	}
	return llmtest.Stream().Role().Content(pieces...).Finish("stop").Usage(10, n).Done()
}

// startRecording makes the model keep the bodies it receives; take returns
// and clears them. Used by the latency phase, which runs one turn at a time,
// to replay exactly the requests the server made as direct calls.
func (m *model) startRecording() {
	m.mu.Lock()
	m.record, m.bodies = true, nil
	m.mu.Unlock()
}

func (m *model) take() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bodies
	m.bodies = nil
	return b
}

func (m *model) stopRecording() {
	m.mu.Lock()
	m.record, m.bodies = false, nil
	m.mu.Unlock()
}

// direct makes one streaming chat completion against the model, the way the
// server's adapter does, and reads it to the end. It returns the number of
// content chunks seen.
func (m *model) direct(ctx context.Context, hc *http.Client, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL()+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("model: status %d", resp.StatusCode)
	}
	r := newSSEReader(resp.Body)
	chunks := 0
	for {
		ev, err := r.Next()
		if err != nil {
			return chunks, fmt.Errorf("model stream: %w", err)
		}
		if string(ev.Data) == "[DONE]" {
			return chunks, nil
		}
		if bytes.Contains(ev.Data, []byte(`"content":"`)) {
			chunks++
		}
	}
}

// relayBody is a direct request for relay:n, used to measure how fast the
// model alone streams deltas.
func relayBody(n int) []byte {
	return []byte(fmt.Sprintf(`{"model":"llmtest","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"%s%d"}]}`, relayPrefix, n))
}
