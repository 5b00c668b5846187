package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentik/agentik"
)

// BenchmarkTurnCommits measures the two commits of a cluster turn (the
// user message; the answer with its memory entry and the user message's,
// which the turn writes with its first write), one turn per iteration on
// one connection, and reports the CPU
// time of the database backend serving it and of this process per turn: a
// figure of the commit path that does not depend much on the machine's
// load (the database must run on this machine). The connection is a fresh
// one on a migrated schema, as a process's pool opens them; what its first
// ten turns cost above the steady rate — the backend's start, the first
// parses and plans of the statements — is reported apart (warm-up). For
// trying server settings, AGENTIK_BENCH_DSN_EXTRA is appended to its URL
// (e.g. "&options=-cplan_cache_mode%3Dforce_generic_plan"); for trying a
// schema change, AGENTIK_BENCH_SCHEMA_SQL is run on the migrated schema
// first (e.g. "DROP INDEX messages_search_recent"). After each turn the
// sequencer numbers its agent events on a second connection, as the Bus of
// a busy cluster does about once per turn of a conversation (it runs at
// most every 50 ms); that backend's CPU is reported apart (seq-µs/turn).
//
//	AGENTIK_TEST_DATABASE_URL=… go test -run '^$' -bench TurnCommits -benchtime 2000x ./postgres
func BenchmarkTurnCommits(b *testing.B) {
	ctx := context.Background()
	dsn := freshSchema(b)
	migrated, err := Open(ctx, dsn, Options{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	if q := os.Getenv("AGENTIK_BENCH_SCHEMA_SQL"); q != "" {
		if _, err := migrated.pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	migrated.Close()
	// A fresh connection on a migrated schema, as a process's pool opens
	// them.
	s, err := Open(ctx, dsn+os.Getenv("AGENTIK_BENCH_DSN_EXTRA"), Options{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	id := agentik.NewID()
	if _, err := s.CreateConversation(ctx, agentik.ConversationRecord{ID: id, Owner: "o", CreatedAt: agentik.Now(), UpdatedAt: agentik.Now()}); err != nil {
		b.Fatal(err)
	}
	seq, err := Open(ctx, dsn+os.Getenv("AGENTIK_BENCH_DSN_EXTRA"), Options{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer seq.Close()
	pid, seqPid := backendPid(b, s), backendPid(b, seq)
	turn := func(i int) {
		commitTurn(b, s, id, fmt.Sprintf("m%d", i), "echo")
		if _, _, err := sequence(ctx, seq.pool); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10 { // prepared statements and their generic plans
		turn(i)
	}
	rec0, bytes0, walOK := walSoFar(seq, s)
	db0, seq0, self0 := backendCPU(pid), backendCPU(seqPid), processCPU(os.Getpid())
	b.ResetTimer()
	for i := range b.N {
		turn(i)
	}
	b.StopTimer()
	db, seqCPU, self := backendCPU(pid)-db0, backendCPU(seqPid)-seq0, processCPU(os.Getpid())-self0
	if rec, bytes, ok := walSoFar(seq, s); ok && walOK {
		// The whole server's WAL: this benchmark's, unless something else
		// writes meanwhile.
		b.ReportMetric(float64(rec-rec0)/float64(b.N), "wal-records/turn")
		b.ReportMetric(float64(bytes-bytes0)/float64(b.N), "wal-bytes/turn")
	}
	b.ReportMetric(float64(db.Microseconds())/float64(b.N), "db-µs/turn")
	b.ReportMetric(float64(seqCPU.Microseconds())/float64(b.N), "seq-µs/turn")
	b.ReportMetric(float64(self.Microseconds())/float64(b.N), "client-µs/turn")
	// What a fresh connection costs the server before it runs at that
	// rate: its start, the first statements' parses and plans.
	steady := db / time.Duration(b.N)
	b.ReportMetric(float64((db0 - 10*steady).Microseconds()), "db-µs-warm-up/connection")
}

// commitTurn commits a turn as the engine does: the user message, then
// the answer with its memory entry and the user message's, which the turn
// writes with its first write; the answer closes the turn.
func commitTurn(b *testing.B, s *Store, id, user, answer string) {
	ctx := context.Background()
	u := agentik.Message{ID: agentik.NewID(), Type: agentik.MsgUser, Date: agentik.Now(), Content: []agentik.Content{agentik.Text(user)}}
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Touch: agentik.Now(),
		Events: []agentik.Event{{Type: agentik.EvUserMessage, Date: agentik.Now(), Message: &u}}}); err != nil {
		b.Fatal(err)
	}
	a := agentik.Message{ID: agentik.NewID(), Type: agentik.MsgAssistant, ReplyTo: u.ID, Date: agentik.Now(), Content: []agentik.Content{agentik.Text(answer)}}
	if _, _, err := s.Commit(ctx, agentik.Write{ConversationID: id, Touch: agentik.Now(), Tokens: agentik.TurnTokens{Input: 1, Output: 1},
		Events: []agentik.Event{{Type: agentik.EvAssistantMessage, Date: agentik.Now(), Message: &a}},
		Memory: []agentik.MemoryEntry{{Message: agentik.ModelMessage{Role: agentik.RoleUser, Content: u.Content}},
			{Message: agentik.ModelMessage{Role: agentik.RoleAssistant, Content: a.Content}}}}); err != nil {
		b.Fatal(err)
	}
}

// walSoFar is the WAL the server has written so far: records from
// pg_stat_wal, bytes from the insert position (page headers included);
// PostgreSQL 15 and later (pg_stat_force_next_flush), ok false before.
// Each of conns' backends is made to report its counts first: a backend
// adds them to pg_stat_wal as it goes idle, before it says it is ready,
// and otherwise at most once a second.
func walSoFar(conns ...*Store) (records, bytes int64, ok bool) {
	ctx := context.Background()
	for _, c := range conns {
		if _, err := c.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			return 0, 0, false
		}
	}
	err := conns[0].pool.QueryRow(ctx, "SELECT wal_records, (pg_current_wal_insert_lsn() - '0/0')::bigint FROM pg_stat_wal").Scan(&records, &bytes)
	return records, bytes, err == nil
}

// backendPid is the process id of the database backend of s's one
// connection.
func backendPid(b *testing.B, s *Store) int {
	var pid int
	if err := s.pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	return pid
}

// backendCPU is the CPU time of a database backend (one thread) so far, to
// the nanosecond (Linux schedstat; 0 elsewhere).
func backendCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(n)
}

// processCPU is the CPU time of all the threads of process pid so far, in
// clock ticks of 10 ms (Linux /proc/<pid>/stat; 0 elsewhere).
func processCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	st := string(raw)
	f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}
