package postgres

import (
	"context"
	"regexp"
	"testing"
)

var startsAtTurn = regexp.MustCompile(`"Relation Name": "messages",[^}]*"Index Cond": "\(\(conversation_id = [^)]+\) AND \(seq >= \$\d+\)\)"`)

// TestQueueReadStartsAtTheOpenTurn: in a young database (no statistics
// yet), the queue read's plan starts its scan of the journal at the first
// open turn's seq. Joined with the turn instead, it read every message of
// the conversation until autovacuum's first ANALYZE.
func TestQueueReadStartsAtTheOpenTurn(t *testing.T) {
	s := openDSN(t, freshSchema(t))
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer conn.Exec(ctx, "RESET plan_cache_mode")
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for name, q := range map[string]string{"qQueue": qQueue, "qQueueLeased": qQueueLeased} {
			if _, err := conn.Exec(ctx, "PREPARE queue_plan(text) AS "+q); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var plan string
			err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE queue_plan('c1')").Scan(&plan)
			if _, derr := conn.Exec(ctx, "DEALLOCATE queue_plan"); err == nil {
				err = derr
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// The journal's scan: an index condition on the conversation
			// and on seq from the first turn (an InitPlan's parameter).
			if !startsAtTurn.MatchString(plan) {
				t.Errorf("%s, %s: the journal's scan does not start at the turn's seq:\n%s", name, mode, plan)
			}
		}
	}
}
