package reliability_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"github.com/agentik/agentik/internal/testenv"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
	_ "modernc.org/sqlite"
)

// mountTmpfs mounts a small tmpfs at a new directory: a real file system
// that can be filled. It needs root (CAP_SYS_ADMIN), which CI has; elsewhere
// the test is skipped, except under CI=true where it fails.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		testenv.Missing(t, "cannot mount a tmpfs to fill (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v %s", err, out)
		}
	})
	return dir
}

// fill writes a ballast file until the file system reports ENOSPC, and
// returns a function that deletes it again.
func fill(t *testing.T, dir string) func() {
	t.Helper()
	p := filepath.Join(dir, "ballast")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	// The last partial block: fill byte by byte so not a page is left.
	for {
		if _, err := f.Write(block[:512]); err != nil {
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// state is everything a refused request must leave unchanged.
type state struct {
	journal     int
	cursor      int64
	agentCursor int64
	title       string
	convs       int
}

func (s *server) state(t *testing.T, conv string) state {
	t.Helper()
	msgs, cursor := s.journal(t, conv)
	ac, err := s.store.LastAgentCursor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, "GET", s.url+"/agentik/conversations/"+conv, nil)
	var info agentik.ConversationInfo
	r.decode(t, &info)
	var list agentik.ConversationList
	do(t, "GET", s.url+"/agentik/conversations?limit=100", nil).decode(t, &list)
	return state{journal: len(msgs), cursor: cursor, agentCursor: ac, title: info.Title, convs: len(list.Conversations)}
}

// refusedWrites sends every kind of write through the native API and wants
// each refused with 503 unavailable while the store cannot write.
func refusedWrites(t *testing.T, s *server, conv string) {
	t.Helper()
	for _, w := range []struct {
		name, method, path, body string
	}{
		{"send", "POST", "/agentik/conversations/" + conv + "/messages", `{"content":[{"type":"text","text":"refused"}]}`},
		{"create", "POST", "/agentik/conversations", `{"title":"refused"}`},
		{"rename", "PATCH", "/agentik/conversations/" + conv, `{"title":"refused"}`},
		{"delete", "DELETE", "/agentik/conversations/" + conv, ``},
	} {
		var body []byte
		if w.body != "" {
			body = []byte(w.body)
		}
		r := do(t, w.method, s.url+w.path, body)
		if r.status != http.StatusServiceUnavailable || r.errorCode() != agentik.EUnavailable {
			t.Errorf("%s while the store cannot write: %d %s, want 503 unavailable", w.name, r.status, r.body)
		}
	}
}

// TestDiskFull fills the file system under a live database: every write
// through the HTTP API is a 503 that stores nothing and emits nothing, the
// readers keep working, a turn whose answer cannot be stored is not lost
// (it is answered after a restart), and once space is freed writes succeed
// again without a restart.
func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "16m")
	s := newServer(t, serverOptions{path: filepath.Join(dir, "agentik.db")})
	conv := s.createConversation(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	s.llm.Enqueue(llmtest.Text("first answer"))
	first := s.send(t, conv, "first")
	waitFor(t, sub, 10*time.Second, endOf(first.MessageID))
	before := s.state(t, conv)

	free := fill(t, dir)
	refusedWrites(t, s, conv)
	if after := s.state(t, conv); after != before {
		t.Fatalf("refused writes changed state:\nbefore %+v\nafter  %+v", before, after)
	}
	if r := do(t, "GET", s.url+"/health", nil); r.status != http.StatusOK {
		t.Fatalf("health on a full disk: %d", r.status)
	}

	free()
	// A turn whose answer meets a full disk: the user message is stored
	// (202), the answer cannot be, the turn ends with reason error and
	// leaves no partial entry; the message is answered after a restart.
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Stream().Role().Content("lost ").Pause(gate).Content("answer").Finish("stop").Done())
	cut := s.send(t, conv, "cut")
	<-gate.Reached()
	free = fill(t, dir)
	gate.Release()
	evs := waitFor(t, sub, 30*time.Second, endOf(cut.MessageID))
	if r := endReason(evs[len(evs)-1]); r != agentik.EndError {
		t.Fatalf("turn on a full disk ended %q: %s", r, eventTypes(evs))
	}
	for _, e := range evs {
		if e.id != "" && e.event != agentik.EvUserMessage {
			t.Fatalf("durable %s event published though the disk is full: %s", e.event, e.data)
		}
	}
	msgs, _ := s.journal(t, conv)
	if last := msgs[len(msgs)-1]; last.ID != cut.MessageID {
		t.Fatalf("partial state after the failed turn: last entry %+v", last)
	}

	free()
	// Recovery without a restart: writes work at once.
	s.llm.Enqueue(llmtest.Text("after recovery"))
	again := s.send(t, conv, "again")
	evs = waitFor(t, sub, 10*time.Second, endOf(again.MessageID))
	if r := endReason(evs[len(evs)-1]); r != agentik.EndCompleted {
		t.Fatalf("turn after recovery ended %q: %s", r, eventTypes(evs))
	}
	if r := do(t, "PATCH", s.url+"/agentik/conversations/"+conv, []byte(`{"title":"renamed"}`)); r.status != http.StatusOK {
		t.Fatalf("rename after recovery: %d %s", r.status, r.body)
	}

	// The turn cut by the full disk is still open; a restart answers it.
	sub.close()
	s.llm.Enqueue(llmtest.Text("answered at last"))
	s.restart()
	sub, err = openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	waitFor(t, sub, 10*time.Second, func(e sseEvent) bool {
		var v struct{ Message *agentik.Message }
		json.Unmarshal([]byte(e.data), &v)
		return e.event == agentik.EvAssistantMessage && v.Message.ReplyTo == cut.MessageID
	})
	checkJournal(t, s, conv, []string{first.MessageID, cut.MessageID, again.MessageID})
}

// checkJournal wants the journal gap-free, the given user messages exactly
// once each, and every one of them answered exactly once.
func checkJournal(t *testing.T, s *server, conv string, users []string) {
	t.Helper()
	msgs, _ := s.journal(t, conv)
	seen := map[string]int{}
	answered := map[string]int{}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("journal gap: entry %d has seq %d", i, m.Seq)
		}
		switch {
		case m.Type == agentik.MsgUser:
			seen[m.ID]++
		case m.Type == agentik.MsgAssistant && !m.Interrupted:
			answered[m.ReplyTo]++
		}
	}
	for _, id := range users {
		if seen[id] != 1 {
			t.Errorf("user message %s stored %d times", id, seen[id])
		}
		if answered[id] != 1 {
			t.Errorf("user message %s answered %d times", id, answered[id])
		}
	}
	if len(seen) != len(users) {
		t.Errorf("journal holds %d user messages, want %d", len(seen), len(users))
	}
}

// TestDatabaseLocked: another process holds the database's write lock (a
// backup tool, a stuck migration). Writes wait busy_timeout, then are refused
// with 503 and store nothing; when the lock is released they work again.
func TestDatabaseLocked(t *testing.T) {
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := openSSE(ctx, s.url+"/agentik/conversations/"+conv+"/events?after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	s.llm.Enqueue(llmtest.Text("one"))
	one := s.send(t, conv, "one")
	waitFor(t, sub, 10*time.Second, endOf(one.MessageID))
	before := s.state(t, conv)

	other, err := sql.Open("sqlite", "file:"+s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := do(t, "POST", s.url+"/agentik/conversations/"+conv+"/messages", []byte(`{"content":[{"type":"text","text":"refused"}]}`))
	if r.status != http.StatusServiceUnavailable || r.errorCode() != agentik.EUnavailable {
		t.Fatalf("send while locked: %d %s, want 503 unavailable", r.status, r.body)
	}
	t.Logf("refused after %v (busy_timeout)", time.Since(start).Round(time.Millisecond))
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if after := s.state(t, conv); after != before {
		t.Fatalf("refused write changed state:\nbefore %+v\nafter  %+v", before, after)
	}
	s.llm.Enqueue(llmtest.Text("two"))
	two := s.send(t, conv, "two")
	evs := waitFor(t, sub, 10*time.Second, endOf(two.MessageID))
	if got := endReason(evs[len(evs)-1]); got != agentik.EndCompleted {
		t.Fatalf("after the lock: %s", eventTypes(evs))
	}
	for _, e := range evs {
		if e.event == agentik.EvUserMessage && !jsonHas(e.data, two.MessageID) {
			t.Fatalf("a refused message was published: %s", e.data)
		}
	}
	checkJournal(t, s, conv, []string{one.MessageID, two.MessageID})
}

func jsonHas(data, s string) bool { return s != "" && strings.Contains(data, s) }
