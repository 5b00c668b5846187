package reliability_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentik/agentik"
	"github.com/agentik/agentik/internal/testenv"
	"github.com/agentik/agentik/llmtest"
)

// dialSSE opens an event stream on its own TCP connection, read with
// http.ReadResponse: no transport goroutines, so a thousand subscribers fit
// under the race detector's goroutine limit. after < 0 subscribes live only.
func dialSSE(ctx context.Context, base, path string, after int64) (*sseStream, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	if after >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 16<<10)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		conn.Close()
		return nil, &statusError{resp.StatusCode, string(b)}
	}
	resp.Body = closer{resp.Body, func() error { stop(); return conn.Close() }}
	return &sseStream{resp: resp, rd: bufio.NewReaderSize(resp.Body, 16<<10)}, nil
}

type closer struct {
	io.Reader
	close func() error
}

func (c closer) Close() error { return c.close() }

// subscriber follows one conversation's durable events until the answer to
// a message, resuming by cursor whenever its stream is cut.
type subscriber struct {
	latest     atomic.Int64 // the last cursor received, readable while following
	cursors    []int64
	reconnects int
	err        error
}

// follow reads until the assistant_message answering *last (known once it
// is set) has been received. Every durable cursor is recorded in order.
func (sub *subscriber) follow(ctx context.Context, base, conv string, from int64, last *atomic.Value) {
	after := from
	for {
		s, err := dialSSE(ctx, base, "/agentik/conversations/"+conv+"/events", after)
		if err != nil {
			sub.err = err
			return
		}
		for {
			ev, err := s.next()
			if err != nil {
				s.close()
				if ctx.Err() != nil {
					sub.err = ctx.Err()
					return
				}
				sub.reconnects++ // cut off: resume from the last cursor
				break
			}
			if c := ev.cursor(); c != 0 {
				sub.cursors = append(sub.cursors, c)
				sub.latest.Store(c)
				after = c
			}
			if ev.event == agentik.EvAssistantMessage {
				if id, _ := last.Load().(string); id != "" && strings.Contains(ev.data, `"reply_to":"`+id+`"`) {
					s.close()
					return
				}
			}
		}
	}
}

// check compares what a subscriber received with the store's events after
// from: complete, in order, nothing repeated.
func (sub *subscriber) check(want []int64) error {
	if sub.err != nil {
		return sub.err
	}
	if len(sub.cursors) != len(want) {
		return fmt.Errorf("received %d durable events, want %d", len(sub.cursors), len(want))
	}
	for i := range want {
		if sub.cursors[i] != want[i] {
			return fmt.Errorf("event %d has cursor %d, want %d", i, sub.cursors[i], want[i])
		}
	}
	return nil
}

// storedCursors returns the cursors of a conversation's durable events.
func (s *server) storedCursors(t testing.TB, conv string, after int64) []int64 {
	t.Helper()
	evs, err := s.store.Events(context.Background(), conv, after, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Cursor
	}
	return out
}

// TestThousandSubscribers: 1,000 SSE subscribers on one conversation while
// turns stream into it. Half replay from the start, half join live midway
// (resuming from the cursor they were given); every one of them receives
// every durable event exactly once, in cursor order, and the turns are not
// slowed into failure by them.
func TestThousandSubscribers(t *testing.T) {
	const subscribers, turns = 1000, 4
	s := newServer(t, serverOptions{})
	conv := s.createConversation(t)
	// Waits end on events; the context only ends them before go test's
	// -timeout would (a loaded machine took 33 s of the 45 s this once had).
	ctx := testenv.Wait(t)

	var last atomic.Value
	last.Store("")
	subs := make([]*subscriber, subscribers)
	var wg sync.WaitGroup
	start := func(i int, from int64) {
		subs[i] = &subscriber{}
		wg.Add(1)
		go func() { defer wg.Done(); subs[i].follow(ctx, s.url, conv, from, &last) }()
	}
	for i := 0; i < subscribers/2; i++ {
		start(i, 0)
	}
	// Few chunks per answer: the race detector makes every one of the
	// thousand deliveries costly, and durable events are what is checked.
	gate := llmtest.NewGate()
	s.llm.Enqueue(llmtest.Stream().Role().Content("first ", "half ").Pause(gate).Content("second ", "half").Finish("stop").Done())
	for i := 1; i < turns; i++ {
		s.llm.Enqueue(llmtest.Stream().Role().Content("an ", "answer ", "in ", "chunks").Finish("stop").Done())
	}
	var ids []string
	for i := 0; i < turns; i++ {
		ids = append(ids, s.send(t, conv, fmt.Sprintf("message %d", i)).MessageID)
	}
	<-gate.Reached()
	// The second half joins mid-turn from the cursor a page read gives.
	_, mid := s.journal(t, conv)
	for i := subscribers / 2; i < subscribers; i++ {
		start(i, mid)
	}
	gate.Release()
	last.Store(ids[len(ids)-1])
	wg.Wait()

	all, fromMid := s.storedCursors(t, conv, 0), s.storedCursors(t, conv, mid)
	var failed, reconnects int
	for i, sub := range subs {
		want := all
		if i >= subscribers/2 {
			want = fromMid
		}
		if err := sub.check(want); err != nil {
			if failed++; failed <= 5 {
				t.Errorf("subscriber %d: %v", i, err)
			}
		}
		reconnects += sub.reconnects
	}
	if failed > 0 {
		t.Fatalf("%d of %d subscribers did not receive every durable event exactly once", failed, subscribers)
	}
	checkJournal(t, s, conv, ids)
	t.Logf("%d subscribers × %d durable events, %d resumed after a cut", subscribers, len(all), reconnects)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}
