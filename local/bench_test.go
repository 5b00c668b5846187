package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/local/localtest"
)

// BenchmarkGenerate measures a local model's prompt and generation speed
// (docs/local-model.md): AGENTIK_BENCH_MODEL names a GGUF file (default:
// the tiny test model, whose figures say nothing of a real one),
// AGENTIK_LLAMA_LIB the libraries (default: npm's, as the tests install
// them), AGENTIK_LOCAL_THREADS the threads.
//
//	AGENTIK_BENCH_MODEL=~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf \
//	  go test -run '^$' -bench Generate -benchtime 5x ./local/
//
// fresh: every call a new conversation (nothing of the cache reused);
// followup: every call the next turn of one conversation (the cache of the
// turns before reused).
func BenchmarkGenerate(b *testing.B) {
	o := Options{Path: os.Getenv("AGENTIK_BENCH_MODEL"), Library: os.Getenv("AGENTIK_LLAMA_LIB"), MaxTokens: 128, ContextTokens: 4096}
	if o.Library == "" {
		o.Library = localtest.LlamaLib(b)
	}
	if o.Path == "" {
		o.Path = filepath.Join(b.TempDir(), "tiny.gguf")
		localtest.Model{Next: localtest.La().Next, Template: localtest.ChatML}.Write(b, o.Path)
	}
	if n, err := strconv.Atoi(os.Getenv("AGENTIK_LOCAL_THREADS")); err == nil {
		o.Threads = n
	}
	m, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fresh", func(b *testing.B) {
		measure(b, m, func(i int) agentik.ModelRequest {
			return userSays(fmt.Sprintf("Conversation %d. Tell me a story about a lighthouse keeper.", i))
		}, nil)
	})
	b.Run("followup", func(b *testing.B) {
		req := userSays("Tell me a story about a lighthouse keeper.")
		measure(b, m, func(int) agentik.ModelRequest { return req }, func(resp agentik.ModelResponse) {
			req.Messages = append(req.Messages,
				agentik.ModelMessage{Role: "assistant", Content: []agentik.Content{agentik.Text(resp.Text)}},
				agentik.ModelMessage{Role: "user", Content: []agentik.Content{agentik.Text("Go on.")}})
			if resp.Tokens.Input+3*resp.Tokens.Output+200 > int64(m.ContextTokens()) {
				req.Messages = req.Messages[:1] // start over before the context is full
			}
		})
	})
}

// measure times b.N calls: the prompt (to the first token, over the tokens
// decoded: those not found in the cache) and the generation after it.
func measure(b *testing.B, m *Model, request func(int) agentik.ModelRequest, after func(agentik.ModelResponse)) {
	var prefillTok, genTok int64
	var prefill, gen time.Duration
	for i := range b.N {
		req := request(i)
		start := time.Now()
		var first time.Time
		resp, err := m.Generate(context.Background(), req, func(agentik.ModelDelta) {
			if first.IsZero() {
				first = time.Now()
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		if first.IsZero() {
			first = end
		}
		prefill += first.Sub(start)
		prefillTok += resp.Tokens.Input - m.lastKept.Load()
		gen += end.Sub(first)
		genTok += resp.Tokens.Output - 1
		if after != nil {
			after(resp)
		}
	}
	if prefill > 0 {
		b.ReportMetric(float64(prefillTok)/prefill.Seconds(), "prompt-tok/s")
		b.ReportMetric(float64(prefill.Milliseconds())/float64(b.N), "ms-to-first-token")
	}
	if gen > 0 {
		b.ReportMetric(float64(genTok)/gen.Seconds(), "gen-tok/s")
	}
}
