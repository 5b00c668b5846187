package irc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik/llmtest"
)

// BenchmarkStreamedAnswer measures a whole turn as IRC clients see it: a
// PRIVMSG in, a 100-line answer streamed back (one delta per line) to
// every client in the channel, over real TCP with the real engine and
// SQLite. Reported: turns/s and lines/s delivered to all clients.
func BenchmarkStreamedAnswer(b *testing.B) {
	for _, clients := range []int{1, 10} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s := newStack(b, Options{}, nil)
			var pieces []string
			for i := range 100 {
				pieces = append(pieces, fmt.Sprintf("line %d of the answer, %s\n", i, strings.Repeat("word ", 12)))
			}
			pieces[len(pieces)-1] = "the end"
			s.llm.Handle(func(llmtest.Request) llmtest.Reply {
				return llmtest.Stream().Role().Content(pieces...).Finish("stop").Done()
			})
			cs := make([]*client, clients)
			for i := range cs {
				cs[i] = s.dial()
				cs[i].register(fmt.Sprintf("c%d", i), "")
				cs[i].join("#bench")
			}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				cs[0].send("PRIVMSG #bench :go")
				for _, c := range cs {
					if texts, _ := c.answer("#bench", "the end"); len(texts) != 100 {
						b.Fatalf("%d lines", len(texts))
					}
				}
			}
			el := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)/el, "turns/s")
			b.ReportMetric(float64(b.N*100*clients)/el, "lines/s")
		})
	}
}
