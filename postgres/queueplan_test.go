package postgres

import (
	"context"
	"regexp"
	"testing"
)

var startsAtTurn = regexp.MustCompile(`"Index Name": "messages_pkey",\s*"Relation Name": "messages",[^}]*"Index Cond": "\(\(conversation_id = [^)]+\) AND \(seq >= \$\d+\)\)"`)

// TestQueueReadStartsAtTheOpenTurn: planned while the journal is empty (a
// young database), the queue read scans one range of the journal's
// primary key, starting at the first open turn's seq. Joined with the
// turn, such a plan read every message of the conversation, and it stays
// a connection's cached plan until an ANALYZE.
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
			// The journal's scan: the primary key, from the conversation
			// and the first turn's seq (an InitPlan's parameter).
			if !startsAtTurn.MatchString(plan) {
				t.Errorf("%s, %s: the journal's scan does not start at the turn's seq:\n%s", name, mode, plan)
			}
		}
	}
}
