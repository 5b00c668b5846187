package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// counts is how many full-text rows are queued and how many indexed.
func counts(t *testing.T, s *Store) (queued, indexed int) {
	t.Helper()
	if err := s.r.QueryRowContext(t.Context(), `SELECT
		(SELECT count(*) FROM message_search_pending), (SELECT count(*) FROM message_search)`).Scan(&queued, &indexed); err != nil {
		t.Fatal(err)
	}
	return queued, indexed
}

func commitTexts(t *testing.T, s *Store, conv string, texts ...string) {
	t.Helper()
	evs := make([]agentik.Event, len(texts))
	for i, text := range texts {
		evs[i] = agentik.MessageEvent(userMessage(conv, text))
	}
	if _, _, err := s.Commit(t.Context(), agentik.Write{ConversationID: conv, Events: evs}); err != nil {
		t.Fatal(err)
	}
}

func search(t *testing.T, s *Store, owner, query string) []agentik.SearchHit {
	t.Helper()
	q, err := agentik.ParseSearchQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.SearchMessages(t.Context(), owner, q, 50)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestSearchRightAfterCommit: a commit queues its message's full-text
// row, and a search right after it indexes the queue first and finds the
// message (the background indexer is paused, so only the search can).
func TestSearchRightAfterCommit(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	s.ix.paused.Store(true)
	c := newConv(t, s)
	commitTexts(t, s, c.ID, "the walrus and the carpenter")
	if q, i := counts(t, s); q != 1 || i != 0 {
		t.Fatalf("after the commit: %d queued, %d indexed, want 1, 0", q, i)
	}
	hits := search(t, s, "alice", "walrus")
	if len(hits) != 1 || hits[0].ConversationID != c.ID || hits[0].Seq != 1 {
		t.Fatalf("hits right after the commit: %+v", hits)
	}
	if q, i := counts(t, s); q != 0 || i != 1 {
		t.Fatalf("after the search: %d queued, %d indexed, want 0, 1", q, i)
	}
}

// TestIndexQueueAfterCrash: rows left queued when the process ended
// before the indexer moved them are indexed when the store opens again.
func TestIndexQueueAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.ix.paused.Store(true)
	c := newConv(t, s)
	commitTexts(t, s, c.ID, "crashed walrus one", "crashed walrus two")
	commitTexts(t, s, c.ID, "crashed walrus three")
	if q, i := counts(t, s); q != 3 || i != 0 {
		t.Fatalf("before the crash: %d queued, %d indexed, want 3, 0", q, i)
	}
	if err := s.Close(); err != nil { // Close leaves the queue as it is
		t.Fatal(err)
	}

	s = openPath(t, path)
	if q, i := counts(t, s); q != 0 || i != 3 {
		t.Fatalf("after Open: %d queued, %d indexed, want 0, 3", q, i)
	}
	if hits := search(t, s, "alice", "crashed walrus"); len(hits) != 3 || hits[0].Seq != 3 || hits[2].Seq != 1 {
		t.Fatalf("hits after the restart: %+v", hits)
	}
}

// TestDeleteDropsQueuedRows: deleting a conversation takes its queued
// full-text rows with it, and leaves another conversation's.
func TestDeleteDropsQueuedRows(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	s.ix.paused.Store(true)
	gone, kept := newConv(t, s), newConv(t, s)
	commitTexts(t, s, gone.ID, "walrus one", "walrus two")
	commitTexts(t, s, kept.ID, "walrus kept")
	if q, _ := counts(t, s); q != 3 {
		t.Fatalf("%d queued, want 3", q)
	}
	if _, err := s.DeleteConversation(t.Context(), gone.ID, agentik.Now()); err != nil {
		t.Fatal(err)
	}
	if q, i := counts(t, s); q != 1 || i != 0 {
		t.Fatalf("after the delete: %d queued, %d indexed, want 1, 0", q, i)
	}
	if hits := search(t, s, "alice", "walrus"); len(hits) != 1 || hits[0].ConversationID != kept.ID {
		t.Fatalf("hits after the delete: %+v", hits)
	}
}

// TestBackgroundIndexer: without any search, the indexer moves queued rows
// into the index: a write of more than a batch at once, in batches of
// indexBatch, and a single message after indexDelay.
func TestBackgroundIndexer(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	batches := make(chan int, 16)
	hook := func(n int) { batches <- n }
	s.ix.onIndex.Store(&hook)
	c := newConv(t, s)
	wait := func() int {
		t.Helper()
		select {
		case n := <-batches:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no batch indexed in 10 s")
			return 0
		}
	}

	texts := make([]string, indexBatch+44)
	for i := range texts {
		texts[i] = fmt.Sprintf("bulk walrus %d", i)
	}
	commitTexts(t, s, c.ID, texts...)
	if n1, n2 := wait(), wait(); n1 != indexBatch || n2 != 44 {
		t.Fatalf("batches of %d and %d rows, want %d and 44", n1, n2, indexBatch)
	}
	if q, i := counts(t, s); q != 0 || i != len(texts) {
		t.Fatalf("after the batches: %d queued, %d indexed, want 0, %d", q, i, len(texts))
	}

	commitTexts(t, s, c.ID, "a lone oyster")
	if n := wait(); n != 1 {
		t.Fatalf("a batch of %d rows, want 1", n)
	}
	if q, i := counts(t, s); q != 0 || i != len(texts)+1 {
		t.Fatalf("after the lone message: %d queued, %d indexed", q, i)
	}
}
