package sqlite

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// benchWords is a vocabulary of 5,000 made-up words ("w0" … "w4999"): a
// message of benchText's 30 words holds a given one with a chance of
// about 0.6 %, so a search for one finds some hundreds of 100,000
// messages.
func benchText(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("the")
	for range 29 {
		fmt.Fprintf(&b, " w%d", r.IntN(5000))
	}
	return b.String()
}

// BenchmarkSearch searches one principal's 100,000 messages (100
// conversations of 1,000; another principal has as many) for a word of
// some hundreds of them and, apart, for a word in every message, taking
// the newest 10; it reports the median (p50) and p99 of the searches.
//
//	go test -run '^$' -bench Search -benchtime 2000x ./sqlite
func BenchmarkSearch(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	v := s.ForAgent("bench")
	r := rand.New(rand.NewPCG(1, 2))
	for _, owner := range []string{"bench", "other"} {
		for range 100 {
			now := agentik.Now()
			c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: owner, CreatedAt: now, UpdatedAt: now}
			if _, err := v.CreateConversation(b.Context(), c); err != nil {
				b.Fatal(err)
			}
			evs := make([]agentik.Event, 1000)
			for j := range evs {
				evs[j] = agentik.MessageEvent(userMessage(c.ID, benchText(r)))
			}
			if _, _, err := v.Commit(b.Context(), agentik.Write{ConversationID: c.ID, Events: evs}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, bc := range []struct{ name, query string }{{"Rare", ""}, {"EveryMessage", "the"}} {
		b.Run(bc.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			for i := range b.N {
				query := bc.query
				if query == "" {
					query = fmt.Sprintf("w%d", i%5000)
				}
				q, _ := agentik.ParseSearchQuery(query)
				start := time.Now()
				hits, err := v.SearchMessages(b.Context(), "bench", q, agentik.DefaultSearchLimit)
				took = append(took, time.Since(start))
				if err != nil || len(hits) == 0 {
					b.Fatalf("%q: %d hits, %v", query, len(hits), err)
				}
			}
			reportPercentiles(b, took)
		})
	}
	// A search right after a commit: it indexes the commit's queued row
	// first (index.go); the commit is not timed.
	b.Run("RareAfterCommit", func(b *testing.B) {
		c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: "bench", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}
		if _, err := v.CreateConversation(b.Context(), c); err != nil {
			b.Fatal(err)
		}
		took := make([]time.Duration, 0, b.N)
		for i := range b.N {
			m := userMessage(c.ID, benchText(r))
			if _, _, err := v.Commit(b.Context(), agentik.Write{ConversationID: c.ID, Events: []agentik.Event{agentik.MessageEvent(m)}}); err != nil {
				b.Fatal(err)
			}
			q, _ := agentik.ParseSearchQuery(fmt.Sprintf("w%d", i%5000))
			start := time.Now()
			hits, err := v.SearchMessages(b.Context(), "bench", q, agentik.DefaultSearchLimit)
			took = append(took, time.Since(start))
			if err != nil || len(hits) == 0 {
				b.Fatalf("%d hits, %v", len(hits), err)
			}
		}
		reportPercentiles(b, took)
	})
}

// reportPercentiles reports the median and 99th percentile of took in ms.
func reportPercentiles(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkCommitSearchIndex is BenchmarkCommit with a message of 30
// words, with the full-text index (Indexed) and without it (Plain, the
// commit of before the index), in one run: what the index adds to a
// commit; cpu-µs/op is the process's CPU time per commit. Indexed counts
// the indexer's batches (index.go), which run beside the commits, and the
// last one, which indexes what is still queued after them.
//
//	go test -run '^$' -bench CommitSearchIndex -benchtime 3000x ./sqlite
func BenchmarkCommitSearchIndex(b *testing.B) {
	for _, bc := range []struct {
		name  string
		index bool
	}{{"Plain", false}, {"Indexed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.noSearchIndex = !bc.index
			c := benchConv(b, s)
			r := rand.New(rand.NewPCG(1, 2))
			texts := make([]string, 1000)
			for i := range texts {
				texts[i] = benchText(r)
			}
			b.ResetTimer()
			cpu0 := processCPUTime()
			for i := range b.N {
				m := userMessage(c.ID, texts[i%len(texts)])
				_, _, err := s.Commit(b.Context(), agentik.Write{ConversationID: c.ID,
					Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: agentik.Now(),
					Memory: []agentik.MemoryEntry{{SourceID: m.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: m.Content}}}})
				if err != nil {
					b.Fatal(err)
				}
			}
			// What is still queued is indexed in the timing: the
			// commits' cost includes all of their indexing.
			if err := s.indexCurrent(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((processCPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPUTime is the CPU time this process used so far: a commit's
// cost that the load of other processes on the machine changes less than
// its wall time.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
