package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
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

// BenchmarkTurnSearchIndex is BenchmarkCommitSearchIndex for a whole turn
// (commitTurn: the user message, then the answer that closes its turn,
// both of 30 words): what the index adds to the commits of a turn, its
// deferred merge counted.
//
//	AGENTIK_TEST_DATABASE_URL=… go test -run '^$' -bench TurnSearchIndex -benchtime 3000x ./postgres
func BenchmarkTurnSearchIndex(b *testing.B) {
	for _, bc := range []struct {
		name  string
		index bool
	}{{"Plain", false}, {"Indexed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, freshSchema(b), Options{MaxConns: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if !bc.index {
				s.noSearchIndex = true
				if _, err := s.pool.Exec(ctx, "DROP INDEX messages_search"); err != nil {
					b.Fatal(err)
				}
			}
			id := agentik.NewID()
			if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}); err != nil {
				b.Fatal(err)
			}
			var pid int
			if err := s.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			texts := make([]string, 1000)
			for i := range texts {
				texts[i] = benchText(r)
			}
			turn := func(i int) { commitTurn(b, s, id, texts[(2*i)%len(texts)], texts[(2*i+1)%len(texts)]) }
			for i := range 10 {
				turn(i)
			}
			db0, self0 := backendCPU(pid), processCPU(os.Getpid())
			b.ResetTimer()
			for i := range b.N {
				turn(i)
			}
			if bc.index {
				if _, err := s.pool.Exec(ctx, "SELECT gin_clean_pending_list('messages_search')"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			db, self := backendCPU(pid)-db0, processCPU(os.Getpid())-self0
			b.ReportMetric(float64(db.Microseconds())/float64(b.N), "db-µs/turn")
			b.ReportMetric(float64(self.Microseconds())/float64(b.N), "client-µs/turn")
		})
	}
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
// vectors and their GIN index (Indexed) and without them (Plain: no
// vector, the index dropped — the commit of before it), in one run,
// reporting the CPU time of the database backend and of this process per
// commit.
//
//	AGENTIK_TEST_DATABASE_URL=… go test -run '^$' -bench CommitSearchIndex -benchtime 3000x ./postgres
func BenchmarkCommitSearchIndex(b *testing.B) {
	for _, bc := range []struct {
		name  string
		index bool
	}{{"Plain", false}, {"Indexed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
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
			if !bc.index {
				s.noSearchIndex = true
				if _, err := s.pool.Exec(ctx, "DROP INDEX messages_search"); err != nil {
					b.Fatal(err)
				}
			}
			id := agentik.NewID()
			if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}); err != nil {
				b.Fatal(err)
			}
			conn, err := s.pool.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			pid := int(conn.Conn().PgConn().PID())
			conn.Release()
			r := rand.New(rand.NewPCG(1, 2))
			texts := make([]string, 1000)
			for i := range texts {
				texts[i] = benchText(r)
			}
			commit := func(i int) {
				u := agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: agentik.Now(), Content: []agentik.Content{agentik.Text(texts[i%len(texts)])}}
				if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Touch: agentik.Now(),
					Events: []agentik.Event{{Type: agentik.EvUserMessage, Date: agentik.Now(), Message: &u}}}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 10 {
				commit(i)
			}
			db0, self0 := backendCPU(pid), processCPU(os.Getpid())
			b.ResetTimer()
			for i := range b.N {
				commit(i)
			}
			if bc.index {
				// The index's entries wait in its pending list until it
				// is full, a vacuum or this merges them into the tree:
				// their merge is part of what the index costs.
				if _, err := s.pool.Exec(ctx, "SELECT gin_clean_pending_list('messages_search')"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			db, self := backendCPU(pid)-db0, processCPU(os.Getpid())-self0
			b.ReportMetric(float64(db.Microseconds())/float64(b.N), "db-µs/commit")
			b.ReportMetric(float64(self.Microseconds())/float64(b.N), "client-µs/commit")
		})
	}
}
