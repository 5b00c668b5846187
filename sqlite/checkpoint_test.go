package sqlite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckpointsKeepTheWALSmall: with automatic checkpoints off on the
// writer, the checkpoint goroutine still copies the WAL back, so after
// thousands of commits the WAL holds only the pages of the last few dozen,
// the database file holds everything, and nothing a commit wrote is lost
// when the store closes and opens again.
func TestCheckpointsKeepTheWALSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentik.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c := newConv(t, s)
	const commits = 30 * checkpointEvery
	for i := range commits {
		if err := commitOne(ctx, s, c.ID, userMessage(c.ID, "a message long enough to fill some pages of the journal")); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	db, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	runs, failed := s.cp.runs.Load(), s.cp.failed.Load()
	if runs == 0 || failed == runs {
		t.Fatalf("%d checkpoints, %d failed", runs, failed)
	}
	// Without checkpoints the WAL would hold every page written (about
	// 110 MB here). With them, it starts over before walCap pages and
	// the pages of the commits since the last checkpoint.
	if limit := int64(walCap+64*checkpointEvery) * 4096; wal.Size() > limit {
		t.Fatalf("WAL %d bytes, database %d bytes after %d commits (%d checkpoints)", wal.Size(), db.Size(), commits, runs)
	}
	t.Logf("after %d commits: database %d KiB, WAL %d KiB, %d checkpoints (%d failed)", commits, db.Size()>>10, wal.Size()>>10, runs, failed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openPath(t, path)
	var n int
	if err := s2.r.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE conversation_id = ?`, c.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != commits {
		t.Fatalf("%d messages after reopening, want %d", n, commits)
	}
}

// TestReadersDoNotMapTheFile: the read pool's connections read pages with
// pread (why: sqlite.go, BenchmarkReadAfterWrite).
func TestReadersDoNotMapTheFile(t *testing.T) {
	s := openPath(t, filepath.Join(t.TempDir(), "agentik.db"))
	var n int64
	if err := s.r.QueryRowContext(t.Context(), `PRAGMA mmap_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("mmap_size %d, want 0", n)
	}
}
