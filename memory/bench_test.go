package memory_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/bus"
	"github.com/agentik/agentik/engine"
	"github.com/agentik/agentik/llmtest"
	"github.com/agentik/agentik/memory"
	"github.com/agentik/agentik/memstore"
	"github.com/agentik/agentik/openai"
	"github.com/agentik/agentik/sqlite"
	"github.com/agentik/agentik/tools"
)

// benchBlocks are two blocks of about 600 characters each, the size a
// persona and a person's notes have after a while.
func benchBlocks() []agentik.MemoryBlock {
	return []agentik.MemoryBlock{
		{Label: "persona", Value: strings.Repeat("I answer briefly & cite sources. ", 18), Description: "Who you are", Limit: 5000},
		{Label: "human", Value: strings.Repeat("Alice likes <green> tea; lives in Lyon. ", 15), Description: "About the person", Limit: 5000},
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck // never fails for RUSAGE_SELF
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTurnMemory measures one turn (send → end, one model call) on
// SQLite with memory off and on: the process's CPU time per turn
// (cpu-µs/turn, conversations of 10 turns; the scripted model runs in the process too, so its work
// on the longer request counts against memory). docs/memory.md has the
// figures.
func BenchmarkTurnMemory(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run("memory="+name, func(b *testing.B) {
			ctx := agentik.WithPrincipal(context.Background(), "alice")
			llm := llmtest.NewServer()
			defer llm.Close()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentik.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			view := st.ForAgent("a")
			events := bus.New()
			model, err := openai.New(openai.Options{BaseURL: llm.URL(), Model: "test-model"})
			if err != nil {
				b.Fatal(err)
			}
			opts := engine.Options{Store: view, Temporal: memstore.New(), Bus: events, LLM: model, SystemPrompt: "You are a test agent."}
			var eng *engine.Engine
			if on {
				svc := memory.New(memory.Options{Store: view, Bus: events, Blocks: benchBlocks(),
					Order: func(w func() ([]agentik.AgentEvent, error)) error { return eng.AgentWrite(w) }})
				svc.Start()
				defer svc.Close()
				opts.Context = []agentik.ContextSource{svc}
				opts.Tools = tools.NewRegistry(svc.Tools()...)
			} else {
				opts.Tools = tools.NewRegistry()
			}
			eng, err = engine.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := eng.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer eng.Shutdown(ctx)
			// Every 10 turns a new conversation: working memory stays small
			// and never compacts, so the turn's own cost is what is measured.
			var c agentik.Conversation
			var s agentik.Stream[agentik.Event]
			turns := 0
			turn := func() {
				if turns%10 == 0 {
					if s != nil {
						s.Close()
					}
					info, err := eng.CreateConversation(ctx, agentik.CreateRequest{})
					if err != nil {
						b.Fatal(err)
					}
					if c, err = eng.Conversation(ctx, info.ID); err != nil {
						b.Fatal(err)
					}
					if s, err = c.Events(ctx, agentik.LiveOnly); err != nil {
						b.Fatal(err)
					}
				}
				turns++
				res, err := c.Send(ctx, agentik.SendRequest{Content: []agentik.Content{agentik.Text("hello")}})
				if err != nil {
					b.Fatal(err)
				}
				for ev := range s.C() {
					if ev.Type == agentik.EvEnd && ev.ReplyTo == res.MessageID {
						return
					}
				}
				b.Fatalf("stream ended: %v", s.Err())
			}
			for range 20 { // warm: connections, caches, the first read of the blocks
				turn()
			}
			if on && !strings.Contains(llm.Requests()[len(llm.Requests())-1].Messages[0].Text(), "Lyon") {
				b.Fatal("the model was not shown the blocks")
			}
			start, n := cpuTime(), 0
			for b.Loop() {
				turn()
				n++
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(n), "cpu-µs/turn")
		})
	}
}

// BenchmarkSystemContext is the memory's own cost on a model call: the
// caller's set rendered and cached, the Bus subscription looked at.
func BenchmarkSystemContext(b *testing.B) {
	ctx := agentik.WithPrincipal(context.Background(), "alice")
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "agentik.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc := memory.New(memory.Options{Store: st.ForAgent("a"), Bus: bus.New(), Blocks: benchBlocks()})
	svc.Start()
	defer svc.Close()
	for b.Loop() {
		if _, err := svc.SystemContext(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
