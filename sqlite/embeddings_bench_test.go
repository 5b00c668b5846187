package sqlite

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// benchConversations is how many conversations of 1,000 messages
// BenchmarkEmbeddings writes.
const benchConversations = 10

// BenchmarkEmbeddings holds one principal.s 10,000 messages (10
// conversations of 1,000), every one with a vector: the newest 5,000
// (agentik.MaxScanVectors) of 768 dimensions, the others empty. IdlePoll
// is the indexer's look for messages with no vector when there is none;
// Nearest a search by meaning over the 5,000. Each reports its p50 and p99.
//
//	go test -run '^$' -bench Embeddings -benchtime 5x ./sqlite
func BenchmarkEmbeddings(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	v := s.ForAgent("bench")
	r := rand.New(rand.NewPCG(1, 2))
	for range benchConversations {
		now := agentik.Now()
		c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: "bench", CreatedAt: now, UpdatedAt: now}
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
	embedAll(b, v, r, 768)
	b.Run("IdlePoll", func(b *testing.B) {
		took := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			ms, err := v.UnembeddedMessages(b.Context(), "m", time.Time{}, 32)
			took = append(took, time.Since(start))
			if err != nil || len(ms) != 0 {
				b.Fatalf("%d unembedded, %v", len(ms), err)
			}
		}
		reportPercentiles(b, took)
	})
	b.Run("Nearest", func(b *testing.B) {
		took := make([]time.Duration, 0, b.N)
		for range b.N {
			q := agentik.VectorQuery{Model: "m", Vector: randVec(r, 768), MinSimilarity: -1, Limit: agentik.DefaultSearchLimit}
			start := time.Now()
			hits, err := v.NearestMessages(b.Context(), "bench", q)
			took = append(took, time.Since(start))
			if err != nil || len(hits) != agentik.DefaultSearchLimit {
				b.Fatalf("%d hits, %v", len(hits), err)
			}
		}
		reportPercentiles(b, took)
	})
}

// embedAll stores a vector for every message of v: random ones of dims
// for the newest MaxScanVectors, empty ones for the others.
func embedAll(b *testing.B, v *Store, r *rand.Rand, dims int) {
	for n := 0; ; n++ {
		ms, err := v.UnembeddedMessages(b.Context(), "m", time.Time{}, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(ms) == 0 {
			return
		}
		vs := make([]agentik.MessageVector, len(ms))
		for i, m := range ms {
			vs[i].ID = m.ID
			if n*1000+i < agentik.MaxScanVectors {
				vs[i].Vector = randVec(r, dims)
			}
		}
		if err := v.PutEmbeddings(b.Context(), "m", vs); err != nil {
			b.Fatal(err)
		}
	}
}

func randVec(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}
