package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// benchText is a message of 30 words: "the" and 29 of a vocabulary of
// 5,000 made-up ones, so a search for one of those finds some hundreds
// of 100,000 messages.
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
// some hundreds of them (Rare) and for a word of every message
// (EveryMessage), taking the newest 10, and reports the median (p50) and
// p99 of the searches.
//
//	AGENTIK_TEST_DATABASE_URL=… go test -run '^$' -bench Search -benchtime 500x ./postgres
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	s := openDSN(b, freshSchema(b))
	v := s.ForAgent("bench")
	r := rand.New(rand.NewPCG(1, 2))
	for _, owner := range []string{"bench", "other"} {
		for range 100 {
			now := agentik.Now()
			c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: owner, CreatedAt: now, UpdatedAt: now}
			if _, err := v.CreateConversation(ctx, c); err != nil {
				b.Fatal(err)
			}
			evs := make([]agentik.Event, 1000)
			for j := range evs {
				m := &agentik.Message{ID: agentik.NewID(), Date: agentik.Now(), Type: agentik.MsgUser, Content: []agentik.Content{agentik.Text(benchText(r))}}
				evs[j] = agentik.MessageEvent(m)
			}
			if _, _, err := v.Commit(ctx, agentik.Write{ConversationID: c.ID, Events: evs}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := s.pool.Exec(ctx, "VACUUM ANALYZE messages, conversations"); err != nil {
		b.Fatal(err)
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
				hits, err := v.SearchMessages(ctx, "bench", q, agentik.DefaultSearchLimit)
				took = append(took, time.Since(start))
				if err != nil || len(hits) == 0 {
					b.Fatalf("%q: %d hits, %v", query, len(hits), err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkCommitSearchIndex is BenchmarkTurnCommits's first commit (a
// user message of 30 words with its event and the touch) with the search
// vectors and their GIN index (indexed) and without them (plain: no
// vector, the index dropped — the commit of before it): see
// pairedIndexCost.
//
//	AGENTIK_TEST_DATABASE_URL=… go test -run '^$' -bench CommitSearchIndex -benchtime 6000x ./postgres
func BenchmarkCommitSearchIndex(b *testing.B) {
	texts := benchTexts()
	pairedIndexCost(b, "commit", func(s *Store, id string, i int) {
		u := agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: agentik.Now(), Content: []agentik.Content{agentik.Text(texts[i%len(texts)])}}
		if _, _, err := s.Commit(context.Background(), agentik.Write{ConversationID: id, Touch: agentik.Now(),
			Events: []agentik.Event{{Type: agentik.EvUserMessage, Date: agentik.Now(), Message: &u}}}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkTurnSearchIndex is BenchmarkCommitSearchIndex for a whole turn
// (commitTurn: the user message, then the answer that closes its turn,
// both of 30 words).
//
//	AGENTIK_TEST_DATABASE_URL=… go test -run '^$' -bench TurnSearchIndex -benchtime 4000x ./postgres
func BenchmarkTurnSearchIndex(b *testing.B) {
	texts := benchTexts()
	pairedIndexCost(b, "turn", func(s *Store, id string, i int) {
		commitTurn(b, s, id, texts[(2*i)%len(texts)], texts[(2*i+1)%len(texts)])
	})
}

func benchTexts() []string {
	r := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, 1000)
	for i := range texts {
		texts[i] = benchText(r)
	}
	return texts
}

// pairedIndexCost measures what the search index adds to the work of do
// (one iteration: a commit or a turn, unit names it). It runs do on two
// fresh schemas, each with a store of one connection: plain (no search
// vectors, the GIN index dropped) and indexed. The two take turns in
// blocks of 100 iterations, in alternating order, so that both see the
// machine alike: on the shared development machines, a run's speed drifts
// by ±15 % within seconds, and two runs one after the other differed by
// more than the index costs. It reports, per iteration, the CPU time of
// each store's database backend (read from the kernel before and after,
// every block included), this process's CPU time in each one's blocks
// (getrusage around each block), and what the index adds to the database's
// CPU. The index's pending list is merged into its tree at the end, inside
// the measure: that merge is otherwise paid by whichever commit fills the
// list, or by autovacuum (off for messages here, so that no vacuum merges
// it unseen). AGENTIK_BENCH_SCHEMA_SQL runs on both schemas first.
func pairedIndexCost(b *testing.B, unit string, do func(s *Store, id string, i int)) {
	ctx := context.Background()
	type side struct {
		s      *Store
		id     string
		pid    int
		db     time.Duration
		client time.Duration
	}
	var sides []*side
	for _, indexed := range []bool{false, true} {
		s, err := Open(ctx, freshSchema(b), Options{MaxConns: 1}) // one backend, whose CPU time is read
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if q := os.Getenv("AGENTIK_BENCH_SCHEMA_SQL"); q != "" { // as in BenchmarkTurnCommits
			if _, err := s.pool.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		if !indexed {
			s.noSearchIndex = true
			if _, err := s.pool.Exec(ctx, "DROP INDEX messages_search"); err != nil {
				b.Fatal(err)
			}
		}
		// No autovacuum: a vacuum of messages would merge the GIN
		// index's pending list in a worker whose CPU is not read.
		if _, err := s.pool.Exec(ctx, "ALTER TABLE messages SET (autovacuum_enabled = false)"); err != nil {
			b.Fatal(err)
		}
		sd := &side{s: s, id: agentik.NewID()}
		if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: sd.id, Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}); err != nil {
			b.Fatal(err)
		}
		if err := s.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&sd.pid); err != nil {
			b.Fatal(err)
		}
		sides = append(sides, sd)
	}
	plain, indexed := sides[0], sides[1]
	for i := range 10 { // prepared statements and their generic plans
		for _, sd := range sides {
			do(sd.s, sd.id, i)
		}
	}
	for _, sd := range sides {
		sd.db = -backendCPU(sd.pid)
	}
	b.ResetTimer()
	const block = 100
	for start := 0; start < b.N; start += block {
		order := []*side{plain, indexed}
		if start/block%2 == 1 {
			order = []*side{indexed, plain}
		}
		for _, sd := range order {
			c0 := rusageCPU()
			for i := start; i < min(start+block, b.N); i++ {
				do(sd.s, sd.id, i)
			}
			sd.client += rusageCPU() - c0
		}
	}
	c0 := rusageCPU()
	if _, err := indexed.s.pool.Exec(ctx, "SELECT gin_clean_pending_list('messages_search')"); err != nil {
		b.Fatal(err)
	}
	indexed.client += rusageCPU() - c0
	b.StopTimer()
	for _, sd := range sides {
		sd.db += backendCPU(sd.pid)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(plain.db), "plain-db-µs/"+unit)
	b.ReportMetric(per(indexed.db), "indexed-db-µs/"+unit)
	b.ReportMetric(per(plain.client), "plain-client-µs/"+unit)
	b.ReportMetric(per(indexed.client), "indexed-client-µs/"+unit)
	if plain.db > 0 {
		b.ReportMetric(100*(float64(indexed.db)/float64(plain.db)-1), "added-db-%")
	}
	if plain.db+plain.client > 0 {
		b.ReportMetric(100*(float64(indexed.db+indexed.client)/float64(plain.db+plain.client)-1), "added-total-%")
	}
}

// rusageCPU is this process's CPU time so far (user and system).
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
