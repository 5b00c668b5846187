package sqlite

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentik/agentik"
)

// BenchmarkCommit measures the write path of a Send: one user message, its
// event, a memory entry and the touch, in one transaction (synchronous=NORMAL
// in WAL mode: no fsync per commit).
func BenchmarkCommit(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := benchConv(b, s)
	b.ResetTimer()
	for i := range b.N {
		m := userMessage(c.ID, fmt.Sprintf("message %d", i))
		_, _, err := s.Commit(b.Context(), agentik.Write{ConversationID: c.ID,
			Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: agentik.Now(),
			Memory: []agentik.MemoryEntry{{SourceID: m.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: m.Content}}}})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessagesDeep reads the newest page of a 100,000-message journal,
// what a client opening a long conversation does. Compare with
// BenchmarkMessagesShallow: the page should cost the same.
func BenchmarkMessagesDeep(b *testing.B) { benchmarkNewestPage(b, 100_000) }

// BenchmarkMessagesShallow reads the newest page of a 1,000-message journal.
func BenchmarkMessagesShallow(b *testing.B) { benchmarkNewestPage(b, 1_000) }

func benchmarkNewestPage(b *testing.B, journal int64) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := benchConv(b, s)
	for i := int64(0); i < journal; i += 1000 {
		evs := make([]agentik.Event, 1000)
		for j := range evs {
			evs[j] = agentik.MessageEvent(userMessage(c.ID, fmt.Sprintf("message %d of a long journal", i+int64(j))))
		}
		if _, _, err := s.Commit(b.Context(), agentik.Write{ConversationID: c.ID, Events: evs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		page, more, err := s.Messages(b.Context(), c.ID, agentik.MessagesRequest{Before: journal + 1})
		if err != nil || len(page) != agentik.DefaultMessagesLimit || !more || page[len(page)-1].Seq != journal {
			b.Fatalf("page of %d, more %v, %v", len(page), more, err)
		}
	}
}

func benchConv(b *testing.B, s *Store) agentik.ConversationRecord {
	now := agentik.Now()
	c := agentik.ConversationRecord{ID: agentik.NewID(), Owner: "bench", CreatedAt: now, UpdatedAt: now}
	if _, err := s.CreateConversation(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCommitImage is BenchmarkCommit with a 1 MiB image in the message
// (and so in its event and memory entry): decoding and hashing it once, and
// storing its bytes once. Every message carries a new image.
func BenchmarkCommitImage(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := benchConv(b, s)
	raw := bigImage(1 << 20)
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for i := range b.N {
		raw[100] = byte(i) // a new image each time
		raw[101] = byte(i >> 8)
		w, _ := imageWrite(c.ID, agentik.Text(fmt.Sprintf("message %d", i)), agentik.Image("image/png", raw))
		if _, _, err := s.Commit(b.Context(), w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitParallel is BenchmarkCommit from 20 goroutines at once,
// each on its own conversation (20 concurrent turns): the writes queued
// behind a running transaction are group committed.
func BenchmarkCommitParallel(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	convs := make(chan string, 20*runtime.GOMAXPROCS(0))
	for range cap(convs) {
		convs <- benchConv(b, s).ID
	}
	b.SetParallelism(20)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-convs
		for i := 0; pb.Next(); i++ {
			m := userMessage(c, fmt.Sprintf("message %d", i))
			_, _, err := s.Commit(b.Context(), agentik.Write{ConversationID: c,
				Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: agentik.Now(),
				Memory: []agentik.MemoryEntry{{SourceID: m.ID, Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: m.Content}}}})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReadAfterWrite measures what a live server's reads cost: each
// iteration commits a message to one conversation, then reads another's
// record and its five newest events (a client reconnecting). Subtract
// BenchmarkCommit for the reads. With readers mapping the file
// (mmap_size), SQLite unmapped it at the first read after each commit:
// about 110 µs more per iteration.
func BenchmarkReadAfterWrite(b *testing.B) {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, w := benchConv(b, s), benchConv(b, s)
	evs := make([]agentik.Event, 1000)
	for j := range evs {
		evs[j] = agentik.MessageEvent(userMessage(c.ID, fmt.Sprintf("message %d of a journal", j)))
	}
	if _, _, err := s.Commit(b.Context(), agentik.Write{ConversationID: c.ID, Events: evs}); err != nil {
		b.Fatal(err)
	}
	last, err := s.LastCursor(b.Context(), c.ID)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		m := userMessage(w.ID, fmt.Sprintf("message %d", i))
		if _, _, err := s.Commit(b.Context(), agentik.Write{ConversationID: w.ID,
			Events: []agentik.Event{agentik.MessageEvent(m)}, Touch: agentik.Now()}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.GetConversation(b.Context(), c.ID); err != nil {
			b.Fatal(err)
		}
		if got, err := s.EventsJSON(b.Context(), c.ID, last-5, 0); err != nil || len(got) != 5 {
			b.Fatalf("%d events, %v", len(got), err)
		}
	}
}
