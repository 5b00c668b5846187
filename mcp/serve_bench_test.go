package mcp

import (
	"testing"

	"github.com/agentik/agentik/llmtest"
)

// BenchmarkServeAsk measures one ask over real HTTP with the Go SDK client
// against an instant scripted model: what the facade, the transport and a
// turn cost together, per protocol revision (go test -bench ServeAsk ./mcp).
func BenchmarkServeAsk(b *testing.B) {
	for _, v := range protocols {
		b.Run(v, func(b *testing.B) {
			e := newServeEnv(b)
			e.llm.Handle(func(llmtest.Request) llmtest.Reply { return llmtest.Text("A short answer of a few words.") })
			cs := e.connect("tok-alice", v)
			ctx := serveCtx(b)
			_, out := ask(b, ctx, cs, map[string]any{"message": "first"}, nil)
			args := map[string]any{"message": "again", "conversation_id": out.ConversationID}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if res, _ := ask(b, ctx, cs, args, nil); res.IsError {
					b.Fatal(resultText(res))
				}
			}
		})
	}
}
