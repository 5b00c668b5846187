package reliability_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/llmtest"
)

// binary is the agentik binary built once for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentik-reliability")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "agentik")
	if out, err := exec.Command("go", "build", "-o", binary, "../cmd/agentik").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running agentik binary.
type proc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	logs *syncBuffer
}

var listening = regexp.MustCompile(`msg="agentik listening" addr=(\S+)`)

func startProc(t *testing.T, env ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{}), logs: &syncBuffer{}}
	p.cmd = exec.Command(binary, "serve")
	// The clients here are one principal sending far past the default
	// per-principal limits: the faults are the subject, not the limits.
	p.cmd.Env = append(os.Environ(), append([]string{"AGENTIK_PORT=0", "AGENTIK_HOST=127.0.0.1", "AGENTIK_A2A=off", "AGENTIK_AGUI=off",
		"AGENTIK_MESSAGES_PER_MINUTE=0", "AGENTIK_CONVERSATIONS_PER_MINUTE=0", "AGENTIK_MAX_CONCURRENT_TURNS=0"}, env...)...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.logs.Write([]byte(line + "\n"))
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("agentik log:\n%s", tail(p.logs.String(), 4000))
		}
	})
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		t.Fatalf("agentik exited before listening:\n%s", p.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("agentik did not start:\n%s", p.logs.String())
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// asServer lets the HTTP helpers of the in-process tests talk to a process.
func (p *proc) asServer() *server { return &server{url: p.url} }

// load posts messages to the conversations from several clients until ctx
// ends or each client has sent max; it returns the acknowledged ones.
func load(ctx context.Context, base string, convs []string, clients, max int) []ack {
	var mu sync.Mutex
	var acked []ack
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < max && ctx.Err() == nil; i++ {
				conv := convs[rand.IntN(len(convs))]
				body, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": fmt.Sprintf("client %d message %d", c, i)}}})
				req, _ := newJSONRequest(ctx, "POST", base+"/agentik/conversations/"+conv+"/messages", body)
				resp, err := plainClient.Do(req)
				if err != nil {
					return // the process died: this message was not acknowledged
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 202 {
					continue // refused while shutting down: not acknowledged
				}
				var res agentik.SendResult
				if json.Unmarshal(b, &res) == nil {
					mu.Lock()
					acked = append(acked, ack{conv: conv, id: res.MessageID})
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// TestSIGKILLCycles kills the real binary at random moments, 20 times, while
// clients post to several conversations and turns stream, restarting it on
// the same database each time. At the end: every acknowledged message is in
// its journal exactly once, every journal is gap-free, every message is
// answered exactly once (no turn answered twice, none dropped), and the
// durable cursors replayed over SSE are strictly increasing and never reused.
func TestSIGKILLCycles(t *testing.T) {
	const cycles, convCount, clients, perClient = 20, 4, 3, 4
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		// Slow enough that kills land mid-stream, fast enough to finish.
		return llmtest.Stream().Role().Content("answer ", "to ", r.LastUserText()).Finish("stop").Done().WithDelays(5*time.Millisecond, 5*time.Millisecond)
	})
	db := filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "OPENAI_MODEL=test"}

	var convs []string
	byConv := map[string][]string{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	var killedAt []time.Duration
	for cycle := 0; cycle < cycles; cycle++ {
		p := startProc(t, env...)
		if convs == nil {
			for i := 0; i < convCount; i++ {
				convs = append(convs, p.asServer().createConversation(t))
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan []ack, 1)
		go func() { got <- load(ctx, p.url, convs, clients, perClient) }()
		delay := time.Duration(20+rng.IntN(300)) * time.Millisecond
		killedAt = append(killedAt, delay)
		select {
		case <-time.After(delay):
		case <-p.done:
			t.Fatalf("cycle %d: agentik exited", cycle)
		}
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		cancel()
		for _, a := range <-got {
			byConv[a.conv] = append(byConv[a.conv], a.id)
		}
	}

	p := startProc(t, env...)
	s := p.asServer()
	total := 0
	for _, c := range convs {
		total += len(byConv[c])
	}
	if total == 0 {
		t.Fatal("no message was acknowledged in any cycle")
	}
	// Wait until every turn is closed (the restarted process resumes them).
	deadline := time.Now().Add(60 * time.Second)
	for _, c := range convs {
		for {
			open := openTurns(s.journalOf(t, c))
			if open == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("conversation %s: %d turns still open after restart", c, open)
			}
			time.Sleep(50 * time.Millisecond) // polling the journal; no event to wait for across restarts
		}
	}
	seenCursor := map[int64]string{}
	for _, c := range convs {
		msgs := s.journalOf(t, c)
		checkAnsweredOnce(t, c, msgs, byConv[c])
		// Replay the conversation's durable events over SSE.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sub, err := openSSE(ctx, p.url+"/agentik/conversations/"+c+"/events?after=0")
		if err != nil {
			t.Fatal(err)
		}
		var prev int64
		seen := 0
		for seen < len(msgs) {
			ev, err := sub.next()
			if err != nil {
				t.Fatalf("replay of %s ended after %d of %d journal events: %v", c, seen, len(msgs), err)
			}
			cur := ev.cursor()
			if cur == 0 {
				continue
			}
			if cur <= prev {
				t.Fatalf("conversation %s: cursor %d after %d", c, cur, prev)
			}
			if other, dup := seenCursor[cur]; dup {
				t.Fatalf("cursor %d used by %s and %s", cur, other, c)
			}
			seenCursor[cur], prev = c, cur
			if ev.event != agentik.EvInterrupted && ev.event != agentik.EvCompactionTriggered {
				seen++
			}
		}
		sub.close()
		cancel()
	}
	t.Logf("%d SIGKILL cycles (kill after %v): %d acknowledged messages over %d conversations, all present once and answered once; %d durable cursors strictly increasing",
		cycles, killedAt, total, convCount, len(seenCursor))
}

// ack is an acknowledged message.
type ack struct{ conv, id string }

func newJSONRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}

func (s *server) journalOf(t testing.TB, conv string) []agentik.Message {
	msgs, _ := s.journal(t, conv)
	return msgs
}

// openTurns counts user messages without a closing entry (SPEC §2).
func openTurns(msgs []agentik.Message) int {
	closed := map[string]bool{}
	for _, m := range msgs {
		if m.Type == agentik.MsgError || m.Type == agentik.MsgAssistant && !m.Interrupted {
			closed[m.ReplyTo] = true
		}
	}
	open := 0
	for _, m := range msgs {
		if m.Type == agentik.MsgUser && !closed[m.ID] {
			open++
		}
	}
	return open
}

// checkAnsweredOnce wants a gap-free journal in which every acknowledged
// message appears once and every user message (acknowledged or not: a
// message committed just before a kill may never have been acknowledged) is
// answered exactly once.
func checkAnsweredOnce(t *testing.T, conv string, msgs []agentik.Message, acked []string) {
	t.Helper()
	users := map[string]int{}
	answers := map[string]int{}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("conversation %s: journal gap at entry %d (seq %d)", conv, i, m.Seq)
		}
		switch {
		case m.Type == agentik.MsgUser:
			users[m.ID]++
		case m.Type == agentik.MsgAssistant && !m.Interrupted:
			answers[m.ReplyTo]++
		case m.Type == agentik.MsgError:
			t.Errorf("conversation %s: turn of %s failed: %s %s", conv, m.ReplyTo, m.Code, m.Details)
		}
	}
	for _, id := range acked {
		if users[id] != 1 {
			t.Errorf("conversation %s: acknowledged message %s stored %d times", conv, id, users[id])
		}
	}
	for id, n := range users {
		if n != 1 || answers[id] != 1 {
			t.Errorf("conversation %s: message %s stored %d times, answered %d times", conv, id, n, answers[id])
		}
	}
}

// TestSIGTERMDrainsUnderLoad stops the real binary with SIGTERM while
// clients post and turns stream: it exits 0 within the drain timeout, event
// streams end cleanly (EOF, not a reset), messages arriving during the drain
// are refused (never acknowledged and lost), and after a restart every
// acknowledged message is answered exactly once.
func TestSIGTERMDrainsUnderLoad(t *testing.T) {
	llm := llmtest.NewServer()
	defer llm.Close()
	llm.Handle(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Stream().Role().Content("answer ", "to ", r.LastUserText()).Finish("stop").Done().WithDelays(10*time.Millisecond, 10*time.Millisecond)
	})
	db := filepath.Join(t.TempDir(), "agentik.db")
	env := []string{"AGENTIK_DB_PATH=" + db, "OPENAI_BASE_URL=" + llm.URL(), "OPENAI_MODEL=test", "AGENTIK_DRAIN_TIMEOUT=5s"}
	p := startProc(t, env...)
	var convs []string
	for i := 0; i < 4; i++ {
		convs = append(convs, p.asServer().createConversation(t))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var subs []*sseStream
	for _, c := range convs {
		sub, err := openSSE(ctx, p.url+"/agentik/conversations/"+c+"/events?after=0")
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	got := make(chan []ack, 1)
	go func() { got <- load(ctx, p.url, convs, 4, 25) }()
	// Let turns start, then ask the process to stop.
	first := waitFor(t, subs[0], 10*time.Second, func(e sseEvent) bool { return e.event == agentik.EvAppendText })
	_ = first
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	ended := make(chan error, len(subs))
	for _, sub := range subs {
		go func() {
			for {
				if _, err := sub.next(); err != nil {
					ended <- err
					return
				}
			}
		}()
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20 s of SIGTERM")
	}
	took := time.Since(start)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	for range subs {
		if err := <-ended; err != io.EOF {
			t.Errorf("event stream ended with %v, want a clean end (EOF)", err)
		}
	}
	acked := <-got
	byConv := map[string][]string{}
	for _, a := range acked {
		byConv[a.conv] = append(byConv[a.conv], a.id)
	}
	p2 := startProc(t, env...)
	s := p2.asServer()
	deadline := time.Now().Add(60 * time.Second)
	for _, c := range convs {
		for openTurns(s.journalOf(t, c)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("turns still open after restart")
			}
			time.Sleep(50 * time.Millisecond) // polling the journal
		}
		checkAnsweredOnce(t, c, s.journalOf(t, c), byConv[c])
	}
	t.Logf("SIGTERM under load: exit 0 after %v; %d acknowledged messages, all answered once after restart", took.Round(time.Millisecond), len(acked))
}
