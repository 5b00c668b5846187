package postgres

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTakeTokenAcrossStores: two stores on one database (two processes)
// taking tokens of one bucket at once get exactly its size between them;
// the refused learn how long to wait; another agent or key has its own.
func TestTakeTokenAcrossStores(t *testing.T) {
	dsn := freshSchema(t)
	a, b := openDSN(t, dsn).ForAgent("agent"), openDSN(t, dsn).ForAgent("agent")
	var taken atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			wait, err := s.TakeToken(t.Context(), "messages alice", 5)
			if err != nil {
				t.Error(err)
				return
			}
			if wait == 0 {
				taken.Add(1)
			} else if wait > 12*time.Second+time.Millisecond || wait <= 0 {
				t.Errorf("wait %v for one token of 5 a minute", wait)
			}
		})
	}
	wg.Wait()
	if n := taken.Load(); n != 5 {
		t.Fatalf("%d tokens taken from a bucket of 5", n)
	}
	for _, s := range []*Store{a.ForAgent("other"), a} {
		key := "messages alice"
		if s == a {
			key = "messages bob"
		}
		if wait, err := s.TakeToken(t.Context(), key, 5); err != nil || wait != 0 {
			t.Fatalf("a separate bucket: %v, %v", wait, err)
		}
	}
}
